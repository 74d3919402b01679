"""The details reply of an alert group: the judgement and the evidence behind it, short enough to read at
3 a.m. (at most 25 lines and 2 000 characters as shown); the rest is `proxybot status` / `logs`."""

from __future__ import annotations

from dataclasses import replace

from bot.domain.alert_summary import PeerReading
from bot.domain.alerts_catalog import ALERTS
from bot.domain.diagnosis import judged
from bot.domain.findings import Finding, Severity, finding_key
from bot.domain.messages import AlertView
from bot.domain.verdict import TargetVerdict, Verdict
from bot.render.alert_details import MAX_CHARS, MAX_LINES, details_reply
from bot.render.blocks import Message, block_texts, esc, units
from bot.render.terminal import show
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
    d = replace(a.diagnosis, findings=(*a.diagnosis.findings, *found), now_evidence=evidence)
    return replace(a, diagnosis=judged(d, verdict))


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


def within_the_reply_budget(msg: Message) -> None:
    """At most MAX_LINES lines (as the terminal lays them out) and MAX_CHARS characters, as shown."""
    lines = [line for line in show(msg).splitlines() if line.strip()]
    assert len(lines) <= MAX_LINES + 1, "\n".join(lines)  # + its header's line
    assert sum(units(t) for b in msg.blocks for t in block_texts(b)) <= MAX_CHARS
    assert limit_problems(msg.as_kwargs()) == []


def test_the_reply_is_the_judgement_and_its_evidence_within_25_lines_and_2000_characters() -> None:
    first = rich(alert(snap=snapshot()), *extra(9))
    second = rich(alert(labels={"target": T, "group_version": GV2, "pod": "vc-1"}, snap=snapshot(gv=GV2)))
    peers = (PeerReading(T, GV, 0, 2, 0, True, "vc-0"), PeerReading(T, GV2, 0, 2, 0, False, "vc-1"))
    view = group(first, second, peers=peers)
    msg = details_reply(view, NOW)
    reply = shown(msg)
    within_the_reply_budget(msg)
    # The one judgement, first: the verdict, what it rests on, its next step (once each).
    assert "*Verdict:* 🟠 proxy_path: no healthy peer while the target's pods are Ready" in reply
    assert reply.count("*Rests on:* target pods: 1 of 1 Ready") == 1
    assert "Verdict rests on" not in reply, "not said twice"
    assert reply.count("*Next step:* Run the path check.") == 1
    # The evidence that decided it, each line whole or clipped (the logs counted, not quoted).
    for words in (PROM, P99):
        assert esc(words) in reply, words
    # Both alerts, one line each; the rest is one command away.
    assert "`orders.example.com/v1` · pod `vc-0` · firing" in reply
    assert "`billing.example.com/v1` · pod `vc-1` · firing" in reply
    assert f"More: `proxybot status {T}` · `proxybot logs {T}`" in reply


def test_long_evidence_is_clipped_and_long_lists_are_counted() -> None:
    long_logs = LOGS + ": " + "line after line of log words " * 40
    a = rich(alert(snap=snapshot()), *extra(9))
    assert a.diagnosis is not None
    a = replace(a, diagnosis=replace(a.diagnosis, now_evidence=(long_logs,)))
    msg = details_reply(group(a), NOW)
    within_the_reply_budget(msg)
    reply = shown(msg)
    assert esc(long_logs) not in reply
    assert esc(LOGS) in reply
    assert "… +" in reply  # the findings beyond the first few, counted


def test_an_unknown_alert_keeps_its_labels_and_annotations() -> None:
    labels = {"node": "n1", "severity": "warning"}
    odd = alert("KubeNodeNotReady", labels, annotations={"summary": "node down"})
    reply = shown(details_reply(group(odd), NOW))
    assert "*Summary:* node down" in reply
    assert "*Labels:* node: n1 · severity: warning" in reply


def test_every_guide_alert_gets_its_own_meaning() -> None:
    seen = set()
    for name in ALERTS:
        msg = details_reply(group(alert(name, snap=snapshot())), NOW)
        within_the_reply_budget(msg)
        seen.add(next(line for line in shown(msg).split("\n") if line.startswith(f"*{name}:* ")))
    assert len(seen) == len(ALERTS)


def test_a_huge_group_stays_within_the_reply_budget() -> None:
    alerts = tuple(
        rich(alert(labels={"target": f"p/t{i:03}", "group_version": GV}), *extra(5)) for i in range(30)
    )
    msg = details_reply(group(*alerts), NOW)
    within_the_reply_budget(msg)
    assert "*30 alerts*" in shown(msg)
    assert "… +26 more" in shown(msg)


def test_a_failing_probe_is_named_by_its_cronjob_not_as_missing_a_target() -> None:
    labels = {"namespace": "vcluster-a", "cronjob": "proxy-probe", "severity": "critical"}
    probe = alert("ResourceProxyProbeFailing", labels)
    reply = shown(details_reply(group(probe), NOW))
    assert "*ResourceProxyProbeFailing* on CronJob `vcluster-a/proxy-probe` · firing" in reply
    assert "no target label" not in reply
