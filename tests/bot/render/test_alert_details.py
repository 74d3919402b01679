"""The details reply of an alert group: it carries everything the compact message leaves out."""

from __future__ import annotations

from dataclasses import replace

from bot.domain.alert_summary import PeerReading
from bot.domain.alerts_catalog import ALERTS, NO_HEALTHY_PEERS
from bot.domain.findings import Finding, Severity, finding_key
from bot.domain.messages import AlertView
from bot.domain.reasons import REASONS
from bot.domain.verdict import TargetVerdict, Verdict
from bot.render.alert_details import details_reply
from bot.render.alert_message import alert_group_message
from bot.render.blocks import Message, esc
from tests.fakes.alert_views import GV, NOW, T, alert, group, snapshot
from tests.fakes.slack_limits import limit_problems

GV2 = "billing.example.com/v1"
LOGS = "Control-plane logs (last 100 lines of 1 pod in vcluster-a): vc-0: all peer hosts are quarantined"
PROM = "Requests by reason (last 15m, from Prometheus): all_quarantined 41, timeout 3"
P99 = "p99 (last 15m, from Prometheus): requests 4.91 s (120); dials 4.99 s (80)"


def shown(msg: Message) -> str:
    """Every text the reply shows, joined."""
    out = [msg.text]
    for block in msg.blocks:
        for obj in [block.get("text"), *block.get("fields", []), *block.get("elements", [])]:
            if isinstance(obj, dict):
                out.append(str(obj.get("text", "")))
    return "\n".join(out)


def rich(a: AlertView, *found: Finding) -> AlertView:
    """An alert with many findings, the verdict and every kind of evidence line."""
    assert a.diagnosis is not None
    why = "no healthy peer while the target's pods are Ready"
    verdict = TargetVerdict(
        Verdict.PROXY_PATH, why, ("target pods: 1 of 1 Ready",), (), "Run the path check."
    )
    evidence = (*a.diagnosis.now_evidence, "Verdict rests on: target pods: 1 of 1 Ready", PROM, P99, LOGS)
    d = replace(a.diagnosis, findings=(*a.diagnosis.findings, *found), now_evidence=evidence, verdict=verdict)
    return replace(a, diagnosis=d)


def extra(n: int, gv: str = GV) -> list[Finding]:
    return [
        Finding(
            Severity.WARNING,
            f"k{i}",
            finding_key(f"k{i}", T, gv),
            f"{gv}: problem {i} in full words",
            (f"evidence line {i}",),
            f"cause {i}",
            f"next step {i}",
            f"Guide section {i}",
            T,
            gv,
        )
        for i in range(n)
    ]


def test_everything_the_compact_message_left_out_is_in_the_reply() -> None:
    first = rich(alert(snap=snapshot()), *extra(9))
    second = rich(alert(labels={"target": T, "group_version": GV2, "pod": "vc-1"}, snap=snapshot(gv=GV2)))
    peers = (PeerReading(T, GV, 0, 2, 0, True, "vc-0"), PeerReading(T, GV2, 0, 2, 0, False, "vc-1"))
    view = group(first, second, peers=peers)
    top = shown(alert_group_message(view, NOW))
    reply = shown(details_reply(view, NOW))
    findings = {f.key: f for a in view.alerts if a.diagnosis for f in a.diagnosis.findings}
    assert len(findings) == 11
    dropped = [f for f in findings.values() if esc(f.title) not in top]
    assert dropped  # the compact message left some out ...
    for f in findings.values():  # ... and the reply has every one, in full
        for words in (f.title, *f.evidence, f.cause, f.next_step, f.guide_section):
            assert esc(words) in reply, words
    d = first.diagnosis
    assert d is not None
    for words in (d.meaning, *d.traps, PROM, P99, LOGS, "Verdict rests on: target pods: 1 of 1 Ready"):
        assert esc(words) in reply, words
    assert "*Verdict:* 🟠 proxy_path: no healthy peer while the target's pods are Ready" in reply
    assert "*Verdict's next step:* Run the path check." in reply
    # The peer caches per replica, and the meaning of each reason named.
    assert f"• `{T}` `{GV2}` replica `vc-1`: healthy 0, quarantined 2, half_open 0, *not synced*" in reply
    for reason in ("all_quarantined", "timeout"):
        assert f"• `{reason}`: {esc(REASONS[reason].meaning)}" in reply
    assert limit_problems(details_reply(view, NOW).as_kwargs()) == []


def test_evidence_shared_by_alerts_is_written_once() -> None:
    first = rich(alert(snap=snapshot()))
    second = rich(alert(labels={"target": T, "group_version": GV2, "pod": "vc-0"}, snap=snapshot(gv=GV2)))
    reply = shown(details_reply(group(first, second), NOW))
    assert reply.count(esc(LOGS)) == 1
    assert reply.count("*Verdict's next step:* Run the path check.") == 1
    assert reply.count(f"{NO_HEALTHY_PEERS}:* ") == 1  # what the alert means: once per alert name


def test_an_unknown_alert_keeps_its_labels_and_annotations() -> None:
    labels = {"node": "n1", "severity": "warning"}
    odd = alert("KubeNodeNotReady", labels, annotations={"summary": "node down"})
    reply = shown(details_reply(group(odd), NOW))
    assert "*Summary:* node down" in reply
    assert "*Labels:* node: n1 · severity: warning" in reply


def test_every_guide_alert_gets_its_own_meaning() -> None:
    seen = set()
    for name in ALERTS:
        reply = shown(details_reply(group(alert(name, snap=snapshot())), NOW))
        seen.add(next(line for line in reply.split("\n") if line.startswith(f"*{name}:* ")))
    assert len(seen) == len(ALERTS)


def test_a_huge_group_stays_within_slacks_limits() -> None:
    alerts = tuple(
        rich(alert(labels={"target": f"p/t{i:03}", "group_version": GV}), *extra(5)) for i in range(30)
    )
    msg = details_reply(group(*alerts), NOW)
    assert limit_problems(msg.as_kwargs()) == []
    assert "*22 more alerts*" in shown(msg)


def test_a_failing_probe_is_named_by_its_cronjob_not_as_missing_a_target() -> None:
    labels = {"namespace": "vcluster-a", "cronjob": "proxy-probe", "severity": "critical"}
    probe = alert("ResourceProxyProbeFailing", labels)
    reply = shown(details_reply(group(probe), NOW))
    assert "*ResourceProxyProbeFailing* on CronJob `vcluster-a/proxy-probe` · firing" in reply
    assert "no target label" not in reply
