"""The compact alert message: what it says at the top level, in what order, and its budget."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.domain.alert_summary import PeerReading, WorstSeen
from bot.domain.alerts_catalog import NO_HEALTHY_PEERS, PEER_CACHE_UNSYNCED, PROBE_FAILING
from bot.domain.findings import Finding, Severity, finding_key
from bot.domain.messages import ActionRef, AlertGroupView, AlertView, GroupStatus, LiveRead, group_id
from bot.render.alert_message import MAX_FINDINGS, MAX_LINES, MAX_VISIBLE, alert_group_message
from bot.render.blocks import Message, block_units
from bot.render.layout import lines_shown
from bot.render.slack import (
    ACTION_ACK,
    ACTION_GRAPH,
    ACTION_PATH,
    ACTION_PROBE,
    ACTION_SILENCE,
    ACTION_SILENCE_PAGE,
)
from bot.render.terminal import show
from tests.fakes.alert_views import (
    GV,
    HOSTILE,
    NOW,
    T,
    alert,
    all_text,
    buttons,
    group,
    mrkdwn_texts,
    snapshot,
)
from tests.fakes.slack_limits import limit_problems

GV2 = "billing.example.com/v1"
GRAPH = "http://prometheus:9090/graph?g0.expr=vcluster_proxy_peers"


def body_lines(msg: Message) -> list[str]:
    """The lines of the message's one body section."""
    [body] = [b for b in msg.blocks if b["type"] == "section"]
    return str(body["text"]["text"]).split("\n")


def finding(
    title: str,
    severity: Severity = Severity.WARNING,
    *,
    kind: str = "request_reason",
    gv: str | None = GV,
    target: str = T,
    reason: str | None = None,
) -> Finding:
    shown = f"{gv}: {title}" if gv else title
    return Finding(
        severity, kind, finding_key(kind, target, gv, reason or title), shown, (f"evidence of {title}",),
        f"cause of {title}", f"step of {title}", "Monitor the proxy", target, gv, reason,
    )  # fmt: skip


def with_findings(a: AlertView, *found: Finding) -> AlertView:
    assert a.diagnosis is not None
    return replace(a, diagnosis=replace(a.diagnosis, findings=found))


def fits(msg: Message) -> tuple[int, int]:
    return len(show(msg).split("\n")), sum(block_units(b) for b in msg.blocks)


# -- what it says ----------------------------------------------------------------------------------


def test_firing_group_says_status_place_since_now_cause_step_in_that_order() -> None:
    msg = alert_group_message(group(), NOW)
    assert msg.blocks[0]["text"]["text"] == f"🔴 FIRING: {NO_HEALTHY_PEERS} · {T}"
    lines = body_lines(msg)
    assert lines[0] == f"`{T}` on `prod-a` · since 2024-05-01 10:02 UTC (12 min ago) · 1 alert firing"
    assert lines[1] == f"*Now:* still broken · healthy 0, quarantined 2, half_open 0 on `{GV}`"
    assert lines[2].startswith("*Likely cause:* ")
    assert lines[3].startswith("*Next step:* ")
    assert lines[4].startswith("🔴 no healthy peers, all 2 quarantined")
    context = [b for b in msg.blocks if b["type"] == "context"][-1]["elements"]
    assert [e["text"] for e in context] == [
        "Live state read 10:13:30 UTC (30 s ago) from replica `vc-0`",
        "updated 10:14:00 UTC",
    ]
    assert msg.text == f"FIRING: {NO_HEALTHY_PEERS} on {T} (prod-a)"
    assert limit_problems(msg.as_kwargs()) == []


def test_how_bad_now_is_one_line_folded_when_group_versions_agree() -> None:
    two = (alert(snap=snapshot()), alert(labels={"target": T, "group_version": GV2}, snap=snapshot(gv=GV2)))
    assert body_lines(alert_group_message(group(*two), NOW))[1] == (
        "*Now:* still broken · healthy 0, quarantined 2, half_open 0 on both group/versions"
    )
    differ = (PeerReading(T, "a/v1", 0, 2, 0, True), PeerReading(T, "b/v1", 3, 0, 0, True))
    line = body_lines(alert_group_message(group(*two, peers=differ), NOW))[1]
    assert line == "*Now:* still broken · healthy/quarantined/half_open: `a/v1` 0/2/0 · `b/v1` 3/0/0"
    many = tuple(PeerReading(T, f"group-{i}.example.com/v1", 0, i, 0, i % 2 == 0) for i in range(8))
    line = body_lines(alert_group_message(group(*two, peers=many), NOW))[1]
    assert line.startswith(
        "*Now:* still broken · healthy/quarantined/half_open: `group-1.example.com/v1` 0/1/0"
    )
    assert line.endswith(" more")
    assert lines_shown(line) == 1


def test_replicas_that_disagree_are_named_by_replica() -> None:
    split = (
        PeerReading(T, GV, 1, 0, 0, False, "vc-1"),
        PeerReading(T, GV2, 1, 0, 0, False, "vc-1"),
        PeerReading(T, GV, 1, 0, 0, True, "vc-0"),
        PeerReading(T, GV2, 1, 0, 0, True, "vc-0"),
    )
    line = body_lines(alert_group_message(group(peers=split), NOW))[1]
    assert line.endswith("healthy/quarantined/half_open: `vc-1` 1/0/0 unsynced · `vc-0` 1/0/0")


def test_at_most_five_findings_worst_first_folded_across_group_versions_and_replicas() -> None:
    found = [
        finding("34 requests all_quarantined in the last 15m", gv=GV, reason="all_quarantined"),
        finding("41 requests all_quarantined in the last 15m", gv=GV2, reason="all_quarantined"),
        finding("no trusted peer snapshot", Severity.CRITICAL, kind="cache_unsynced", gv=GV),
        finding("no trusted peer snapshot", Severity.CRITICAL, kind="cache_unsynced", gv=GV2),
        *(finding(f"other problem {name}", kind=f"other_{name}", gv=None) for name in "abcdefg"),
    ]
    first = with_findings(alert(), *found)
    second = with_findings(alert(labels={"target": T, "group_version": GV2, "pod": "vc-1"}), *found)
    view = group(first, second, peers=(PeerReading(T, GV, 0, 2, 0, True, "vc-0"),))
    lines = body_lines(alert_group_message(view, NOW))
    shown = [line for line in lines if line[:2] in ("🔴 ", "🟠 ")]
    assert 1 <= len(shown) <= MAX_FINDINGS
    assert shown[0] == "🔴 no trusted peer snapshot · 2 group/versions · 2 replicas"
    assert shown[1] == "🟠 34-41 requests all_quarantined in the last 15m · 2 group/versions · 2 replicas"
    # The same finding reported by two replicas is one line; the rest is counted and pointed at.
    assert sum("other problem a" in line for line in lines) <= 1
    more = 9 - len(shown)
    assert f"… +{more} more findings: `/proxy status {T}`" in lines


def test_at_most_one_watch_out_and_the_one_that_applies_now() -> None:
    msg = alert_group_message(group(), NOW)
    warns = [line for line in body_lines(msg) if "*Watch out:*" in line]
    assert warns == [
        "⚠️ *Watch out:* Do not sum across group_version or pod: each group/version and each HA "
        "replica has its own cache, and one healthy series would hide a degraded one."
    ]
    empty = with_findings(alert(), finding("empty peer list", Severity.CRITICAL, kind="empty_peer_list"))
    [warn] = [line for line in body_lines(alert_group_message(group(empty), NOW)) if "Watch out" in line]
    assert "a fresh empty peer list is still synced" in warn
    aged = with_findings(
        alert(PEER_CACHE_UNSYNCED, snap=snapshot()),
        finding("no peer list published for 2h", Severity.INFO, kind="peer_list_age_hint", gv=None),
    )
    [warn] = [line for line in body_lines(alert_group_message(group(aged), NOW)) if "Watch out" in line]
    assert "peer_list_age_seconds is not the staleness clock" in warn


def test_live_state_unavailable_says_why() -> None:
    view = group(alert(snap=None), live=LiveRead.missing("prod-a unreachable: timed out after 5 s"))
    msg = alert_group_message(view, NOW)
    context = [b for b in msg.blocks if b["type"] == "context"][-1]
    assert (
        context["elements"][0]["text"] == "⚠️ live state unavailable: prod-a unreachable: timed out after 5 s"
    )
    assert "*Now:* unclear · the client cluster could not be read" in all_text(msg)


def test_reading_another_replica_than_the_alerting_pod_is_said() -> None:
    msg = alert_group_message(group(live=LiveRead.read(NOW, "vc-1")), NOW)
    assert "from replica `vc-1` (not the alerting pod)" in all_text(msg)


def test_unknown_alert_shows_what_alertmanager_said() -> None:
    odd = alert(
        "KubeNodeNotReady", {"node": "n1", "severity": "warning"}, annotations={"summary": "node down"}
    )
    msg = alert_group_message(group(odd), NOW)
    assert msg.blocks[0]["text"]["text"] == "🟠 FIRING: KubeNodeNotReady"
    lines = body_lines(msg)
    assert "*KubeNodeNotReady* is not one of the guide's proxy alerts: shown as sent" in lines
    assert "*Summary:* node down" in lines


def test_probe_alert_names_its_cronjob_and_gets_buttons_without_a_target() -> None:
    probe = alert(PROBE_FAILING, {"namespace": "vcluster-a", "cronjob": "proxy-probe"}, snap=snapshot())
    msg = alert_group_message(group(probe), NOW)
    assert body_lines(msg)[0].startswith("CronJob `vcluster-a/proxy-probe` on `prod-a`")
    found = [b for b in buttons(msg) if "value" in b]
    assert [ActionRef.decode(b["value"]).target for b in found] == [None, None, None, None]


def test_many_targets_are_counted_and_their_findings_folded() -> None:
    alerts = tuple(alert(labels={"target": f"p/t{i:03}", "group_version": GV}) for i in range(200))
    msg = alert_group_message(group(*alerts), NOW)
    assert body_lines(msg)[0].startswith("200 targets on `prod-a`")
    assert fits(msg)[0] <= MAX_LINES
    assert limit_problems(msg.as_kwargs()) == []


def test_truncated_alerts_are_mentioned() -> None:
    msg = alert_group_message(group(truncated_alerts=7), NOW)
    assert "Alertmanager left 7 more alerts out" in all_text(msg)


def test_firing_group_with_some_resolved_counts_both() -> None:
    msg = alert_group_message(group(alert(), alert(status=GroupStatus.RESOLVED)), NOW)
    assert "1 alert firing, 1 resolved" in body_lines(msg)[0]


# -- buttons and links -----------------------------------------------------------------------------


def test_buttons_carry_action_ids_and_links_open_the_graph_and_the_silence_page() -> None:
    key = '{}:{alertname="ResourceProxyNoHealthyPeers"}'
    view = group(replace(alert(), generator_url=GRAPH), group_key=key, external_url="http://am:9093/")
    found = buttons(alert_group_message(view, NOW))
    assert [(b["text"]["text"], b["action_id"]) for b in found] == [
        ("Probe now", ACTION_PROBE),
        ("Path check", ACTION_PATH),
        ("Acknowledge", ACTION_ACK),
        ("Silence…", ACTION_SILENCE),
        ("Prometheus graph", ACTION_GRAPH),
        ("Alertmanager silence", ACTION_SILENCE_PAGE),
    ]
    assert {ActionRef.decode(b["value"]) for b in found[:4]} == {ActionRef("prod-a", T, group_id(key))}
    assert found[4]["url"] == GRAPH
    # Alertmanager's own template: every common label but alertname, sorted, then alertname.
    assert found[5]["url"] == (
        "http://am:9093/#/silences/new?filter=%7Bgroup_version%3D%22orders.example.com%2Fv1%22%2C%20"
        "pod%3D%22vc-0%22%2C%20severity%3D%22critical%22%2C%20target%3D%22shop%2Forders%22%2C%20"
        "alertname%3D%22ResourceProxyNoHealthyPeers%22%7D"
    )
    assert "value" not in found[4]


def test_links_that_are_not_http_urls_are_left_out() -> None:
    for bad in ("javascript:alert(1)", "", "/graph?x", "http://", "http://a b/", "x" * 4000):
        view = group(replace(alert(), generator_url=bad), external_url=bad)
        assert [b["action_id"] for b in buttons(alert_group_message(view, NOW))] == [
            ACTION_PROBE,
            ACTION_PATH,
            ACTION_ACK,
            ACTION_SILENCE,
        ], bad


def test_hostile_target_and_cluster_never_reach_a_button() -> None:
    bad = alert(labels={"target": "<!channel>/../secrets", "group_version": GV})
    found = [b for b in buttons(alert_group_message(group(bad, cluster="prod a <x>"), NOW)) if "value" in b]
    assert {ActionRef.decode(b["value"]).target for b in found} == {None}
    assert {ActionRef.decode(b["value"]).cluster for b in found} == {None}


# -- resolved --------------------------------------------------------------------------------------


def test_resolved_keeps_a_one_line_account_how_long_worst_seen_what_recovered() -> None:
    done = alert(status=GroupStatus.RESOLVED, snap=snapshot(healthy=2, quarantined=0))
    worst = WorstSeen(Severity.CRITICAL, "no healthy peers, all 2 quarantined (2 group/versions)")
    healed = (PeerReading(T, GV, 2, 0, 0, True, "vc-0"),)
    msg = alert_group_message(group(done, status=GroupStatus.RESOLVED, worst_seen=worst, peers=healed), NOW)
    assert msg.blocks[0]["text"]["text"] == f"✅ RESOLVED: {NO_HEALTHY_PEERS} · {T}"
    account, place = body_lines(msg)
    assert account == (
        "*Resolved after 12 min* (2024-05-01 10:02 UTC → 10:14 UTC) · worst: 🔴 no healthy peers, all 2 "
        f"quarantined (2 group/versions) · now: healthy 2, quarantined 0, half_open 0 on `{GV}`"
    )
    assert place == f"`{T}` on `prod-a` · 1 alert resolved"
    assert [b["action_id"] for b in buttons(msg)] == [ACTION_PROBE, ACTION_PATH]
    assert msg.text == f"RESOLVED: {NO_HEALTHY_PEERS} on {T} (prod-a) after 12 min"


def test_the_worst_state_is_kept_from_earlier_readings_unless_now_is_worse() -> None:
    earlier = WorstSeen(Severity.WARNING, "something milder")
    view = group(worst_seen=earlier)
    assert view.worst_now() == WorstSeen(
        Severity.CRITICAL, "no healthy peers, all 2 quarantined; requests fail with 503"
    )
    worse = WorstSeen(Severity.CRITICAL, "the first critical state")
    assert group(worst_seen=worse).worst_now() == worse


# -- the budget, whatever the input ----------------------------------------------------------------

_value = st.one_of(st.text(max_size=30), st.sampled_from(HOSTILE), st.text(min_size=200, max_size=3000))


@st.composite
def views(draw: st.DrawFn) -> AlertGroupView:
    n = draw(st.integers(1, 6))
    alerts: list[AlertView] = []
    for i in range(n):
        labels = {
            "target": draw(st.sampled_from([T, f"p/t{i}", draw(_value)])),
            "group_version": draw(_value),
        }
        labels["pod"] = draw(st.sampled_from(["vc-0", "vc-1", draw(_value)]))
        a = alert(
            draw(st.sampled_from([NO_HEALTHY_PEERS, PEER_CACHE_UNSYNCED, PROBE_FAILING, draw(_value)])),
            labels,
            snap=snapshot(labels["target"], labels["group_version"]) if draw(st.booleans()) else None,
            annotations={"summary": draw(_value), "description": draw(_value)},
            status=draw(st.sampled_from(GroupStatus)),
        )
        titles = draw(st.lists(_value, max_size=12))
        alerts.append(
            with_findings(a, *(finding(t, kind=f"k{j}", gv=draw(_value)) for j, t in enumerate(titles)))
        )
    peers = tuple(
        PeerReading(
            draw(_value), draw(_value), *draw(st.tuples(*[st.integers(0, 10**6)] * 3)), draw(st.booleans())
        )
        for _ in range(draw(st.integers(0, 8)))
    )
    live = draw(
        st.one_of(
            st.just(LiveRead.read(NOW - timedelta(seconds=3), "vc-0")), st.builds(LiveRead.missing, _value)
        )
    )
    return group(
        *alerts, peers=peers, cluster=draw(_value), live=live, truncated_alerts=draw(st.integers(0, 10**9))
    )


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(view=views())
def test_any_group_fits_the_budget_and_stays_inert(view: AlertGroupView) -> None:
    msg = alert_group_message(view, NOW)
    lines, chars = fits(msg)
    assert lines <= MAX_LINES, show(msg)
    assert chars <= MAX_VISIBLE, show(msg)
    assert limit_problems(msg.as_kwargs()) == []
    assert all("<" not in t and ">" not in t for t in mrkdwn_texts(msg))


LONG_STEP = (
    "Watch it resolve; if it fires again, check the client control plane's connectivity to the platform, "
    "the platform pods and the license; look for ts_server_unavailable and stale_peers in dial failures by "
    "reason."
)


def test_a_long_cause_or_step_ends_at_a_whole_clause_never_mid_sentence() -> None:
    a = alert(snap=snapshot())
    assert a.diagnosis is not None
    long_one = replace(a, diagnosis=replace(a.diagnosis, next_step=LONG_STEP, cause=LONG_STEP))
    lines = body_lines(alert_group_message(group(long_one), NOW))
    for name in ("*Likely cause:* ", "*Next step:* "):
        [line] = [x for x in lines if x.startswith(name)]
        assert line.endswith("the platform pods and the license."), line
        assert "…" not in line


def test_every_verdicts_next_step_shows_whole_sentences_in_its_two_lines() -> None:
    from bot.domain.verdict import NEXT_STEPS
    from bot.render.alert_message import lines_of, whole

    for verdict, step in NEXT_STEPS.items():
        line = whole("*Next step:* ", step, 2)
        assert lines_of(line) <= 2, verdict
        assert not line.endswith("…"), verdict
