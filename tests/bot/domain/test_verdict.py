"""The quick-triage verdict (bot/domain/verdict.py): the vendor's table, row by row, and what it rests on."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.domain.diagnosis_readings import Readings
from bot.domain.snapshot import ALL_QUARANTINED, DIAL_DURATION, QUARANTINES, REQUEST_DURATION, TERMINATIONS
from bot.domain.verdict import (
    LogSignal,
    LogSignals,
    MetricsSignal,
    PodState,
    TargetPods,
    Verdict,
    judge,
    metrics_signal,
    unreadable_metrics,
    verdict_dict,
)
from tests.bot.domain.diagnosis_pages import GV, GV2, Page, T, window

READY = TargetPods((PodState("orders-0", True, "Ready"),))
NOT_READY = TargetPods((PodState("orders-0", False, "not Ready (Running, ContainersNotReady)"),))
HALF_READY = TargetPods((PodState("orders-0", True, "Ready"), PodState("orders-1", False, "Terminating")))
NO_PODS = TargetPods((), where="vcluster-orders (-l app=vcluster)")
REQ_BOUNDS = (0.1, 1.0, 5.0, 10.0, 30.0, 60.0)


def signal(page: Page, before: Page | None = None) -> MetricsSignal:
    win = None if before is None else window(before, page)
    return metrics_signal(Readings(page.snapshot(), win, T))


def healthy_page() -> Page:
    return Page().peers().peers(gv=GV2).requests(100)


# -- the metrics' side, with the target up -------------------------------------------------------------


@pytest.mark.parametrize(
    ("page", "verdict"),
    [
        (healthy_page(), Verdict.HEALTHY),
        (Page().peers().peers(0, 0, 0, synced=0, age=None, gv=GV2), Verdict.NO_PEER_FEED),
        (Page().peers(0, 3, 0).peers(gv=GV2), Verdict.PROXY_PATH),
        (Page().peers(0, 0, 0, synced=1), Verdict.PROXY_PATH),  # a fresh empty list: peer publication
        (healthy_page().requests(7, "upstream", "503"), Verdict.CHECK_REASON),
        (healthy_page().requests(3, "timeout", "503"), Verdict.CHECK_REASON),
        (healthy_page().requests(50, "ownership_masked", "404"), Verdict.HEALTHY),  # isolation, not a fault
        (healthy_page().add(TERMINATIONS, 2, reason="deadline"), Verdict.SLOW_TARGET),
    ],
)
def test_metrics_follow_the_table(page: Page, verdict: Verdict) -> None:
    assert signal(page).verdict is verdict


def test_no_peer_feed_outranks_no_healthy_peer() -> None:
    # An unsynced cache often also has no healthy peer: the feed is the thing to restore first.
    page = Page().peers(0, 0, 0, synced=0, age=None)
    found = signal(page)
    assert found.verdict is Verdict.NO_PEER_FEED
    assert found.evidence == (f"peer_cache_synced 0 for {GV}",)


def test_requests_near_the_deadline_are_a_slow_target_with_short_dials() -> None:
    page = healthy_page()
    for _ in range(20):
        page.observe(REQUEST_DURATION, 55.0, bounds=REQ_BOUNDS).observe(DIAL_DURATION, 0.01)
    found = signal(page)
    assert found.verdict is Verdict.SLOW_TARGET
    assert "request p99" in found.evidence[0]
    assert found.evidence[0] == "request p99 since the proxy started: 59.70 s; dial p99: 10 ms"


def test_fast_requests_are_not_slow() -> None:
    page = healthy_page()
    for _ in range(20):
        page.observe(REQUEST_DURATION, 0.05, bounds=REQ_BOUNDS)
    assert signal(page).verdict is Verdict.HEALTHY


def test_with_a_window_only_recent_503s_count() -> None:
    before = healthy_page().requests(40, "upstream", "503")  # old failures, before the window
    after = before.copy().requests(100)
    assert signal(after).verdict is Verdict.CHECK_REASON  # since start they are all that can be seen
    recent = signal(after, before)
    assert recent.verdict is Verdict.HEALTHY
    assert recent.scope == "in the last 15m"


@pytest.mark.parametrize(
    ("failures", "verdict"),
    [
        (lambda p: p.add(TERMINATIONS, 1, reason="deadline"), Verdict.SLOW_TARGET),
        (lambda p: p.requests(1, "upstream", "503"), Verdict.CHECK_REASON),
    ],
)
def test_without_a_window_a_stray_old_failure_is_history_not_now(
    failures: Callable[[Page], Page], verdict: Verdict
) -> None:
    """troubleshoot/resource-proxy.mdx, "Quick triage": the table's rows describe what is happening now
    ("still return 503", "consistently take about 60 seconds"); one failure since the proxy started beside
    50 000 successes is not that, while the same failure over a window is."""
    old = Page().peers().peers(gv=GV2).requests(50_000)
    found = signal(failures(old.copy()))
    assert found.verdict is Verdict.HEALTHY
    assert found.scope == "since the proxy started"
    assert "history rather than now" in found.evidence[0]
    assert signal(failures(old.copy()), old).verdict is verdict


def test_without_a_window_a_real_share_still_judges_and_says_since_when() -> None:
    found = signal(healthy_page().requests(7, "upstream", "503"))
    assert found.verdict is Verdict.CHECK_REASON
    assert found.evidence[0] == (
        "503 answers since the proxy started by reason: upstream 7 (of 107 requests)"
    )


def test_check_reason_warns_that_upstream_is_also_the_default() -> None:
    found = signal(healthy_page().requests(7, "upstream", "503").requests(2, "timeout", "503"))
    assert found.evidence[0] == (
        "503 answers since the proxy started by reason: upstream 7, timeout 2 (of 109 requests)"
    )
    assert any("did not classify" in line for line in found.evidence)


def test_proxy_path_evidence_counts_all_quarantined_transitions() -> None:
    before = Page().peers(0, 3, 0)
    after = before.copy().add(ALL_QUARANTINED, 2)
    found = signal(after, before)
    assert found.verdict is Verdict.PROXY_PATH
    assert f"{GV}: peers: healthy 0, quarantined 3, half_open 0" in found.evidence
    assert "all-quarantined transitions in the last 15m: 2, quarantines: 0" in found.evidence


def test_a_target_the_proxy_does_not_report_is_unknown() -> None:
    found = metrics_signal(Readings(healthy_page().snapshot(), None, "other/target"))
    assert found.verdict is Verdict.UNKNOWN
    assert found.unavailable == "the proxy reports no series for this target"


# -- the verdict ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("metrics", [healthy_page(), Page().peers(0, 3, 0), Page().peers(synced=0)])
def test_pods_not_ready_mean_target_down_whatever_the_metrics(metrics: Page) -> None:
    for pods in (NOT_READY, NO_PODS):
        found = judge(pods, signal(metrics))
        assert found.verdict is Verdict.TARGET_DOWN
        assert "recovers by itself" in found.next_step


def test_target_down_names_the_pods_and_their_state() -> None:
    found = judge(NOT_READY, signal(healthy_page()))
    assert found.why == "none of the target's 1 control-plane pods is Ready: the target is down"
    assert "pod orders-0: not Ready (Running, ContainersNotReady)" in found.evidence
    assert found.inputs[0] == "target pods: 0 of 1 Ready"
    assert judge(NO_PODS, signal(healthy_page())).inputs[0] == (
        "no target control-plane pods in vcluster-orders (-l app=vcluster)"
    )


def test_one_ready_pod_of_several_is_up() -> None:
    found = judge(HALF_READY, signal(Page().peers(0, 3, 0)))
    assert found.verdict is Verdict.PROXY_PATH
    assert "pod orders-1: Terminating" in found.evidence
    assert found.inputs[0] == "target pods: 1 of 2 Ready"


@pytest.mark.parametrize(
    ("page", "verdict", "words"),
    [
        (healthy_page(), Verdict.HEALTHY, "Nothing to do"),
        (Page().peers(synced=0), Verdict.NO_PEER_FEED, "peer feed"),
        (Page().peers(0, 3, 0), Verdict.PROXY_PATH, "path check"),
        (healthy_page().requests(5, code="503"), Verdict.CHECK_REASON, "logs before blaming the target"),
        (healthy_page().add(TERMINATIONS, 1, reason="deadline"), Verdict.SLOW_TARGET, "admission webhooks"),
    ],
)
def test_ready_target_takes_the_metrics_verdict_and_its_next_step(
    page: Page, verdict: Verdict, words: str
) -> None:
    found = judge(READY, signal(page))
    assert found.verdict is verdict
    assert words in found.next_step
    assert found.inputs == (
        "target pods: 1 of 1 Ready",
        "proxy metrics: gauges now, counts since the proxy started",
        "client logs: not read",
    )


def test_unread_pods_are_unknown_with_why_and_what_the_client_alone_says() -> None:
    found = judge(TargetPods.missing("forbidden: cannot list pods"), signal(Page().peers(0, 3, 0)))
    assert found.verdict is Verdict.UNKNOWN
    assert found.why.startswith("the target's control-plane pods could not be read: forbidden")
    assert found.why.endswith("points to proxy_path if the target is up")
    assert "list` on pods" in found.next_step
    healthy = judge(TargetPods.missing("no control_plane"), signal(healthy_page()))
    assert "points to" not in healthy.why  # a healthy client says nothing about a target nobody saw


def test_a_client_too_old_for_metrics_is_unknown_and_never_down() -> None:
    found = judge(READY, unreadable_metrics("GET /metrics/syncer answered 404", too_old=True))
    assert found.verdict is Verdict.UNKNOWN
    assert "too old, not down" in found.why
    assert "v0.37" in found.next_step
    assert "too old" in found.inputs[1]


def test_unreadable_metrics_are_unknown() -> None:
    found = judge(READY, unreadable_metrics("timed out"))
    assert found.verdict is Verdict.UNKNOWN
    assert found.why.endswith("could not be read: timed out")
    assert found.inputs[1] == "proxy metrics not read (timed out)"


# -- the log hook --------------------------------------------------------------------------------------


def test_log_lines_decide_when_the_metrics_cannot() -> None:
    no_metrics = unreadable_metrics("timed out")
    watch = LogSignals(frozenset({LogSignal.PEER_WATCH_DOWN}), "last 100 lines of 2 pods")
    found = judge(READY, no_metrics, watch)
    assert found.verdict is Verdict.NO_PEER_FEED
    assert "from the client's logs" in found.why
    assert found.inputs[2] == "client logs: last 100 lines of 2 pods"
    assert "logged: peer watch down" in found.evidence
    quarantined = LogSignals(frozenset({LogSignal.ALL_QUARANTINED}), "last 100 lines")
    assert judge(READY, no_metrics, quarantined).verdict is Verdict.PROXY_PATH
    nothing = LogSignals(frozenset({LogSignal.QUARANTINING}), "last 100 lines")
    assert judge(READY, no_metrics, nothing).verdict is Verdict.UNKNOWN


def test_log_lines_never_override_target_down_or_the_metrics() -> None:
    feed = LogSignals(frozenset({LogSignal.STARTUP_SYNC_TIMEOUT}), "last 100 lines")
    assert judge(NOT_READY, signal(healthy_page()), feed).verdict is Verdict.TARGET_DOWN
    assert judge(READY, signal(healthy_page()), feed).verdict is Verdict.HEALTHY


def test_json_keys() -> None:
    found = verdict_dict(judge(NOT_READY, signal(healthy_page())))
    assert found["verdict"] == "target_down"
    assert found["why"].startswith("none of the target's")
    assert found["verdict_inputs"][0] == "target pods: 0 of 1 Ready"
    assert verdict_dict(None)["verdict"] == "unknown"


@pytest.mark.parametrize("reason", ["all_quarantined", "no_peer", "stale_peers", "peer_departed"])
def test_503s_of_a_peer_outage_over_now_are_not_check_reason(reason: str) -> None:
    """The guide's table: check the reason for 503s *without quarantine*. 503s whose reason is the peers'
    availability, with every peer healthy and synced now, are the outage a restart caused, over: the
    verdict is healthy and says so (the restart scenario's resolved message said check_reason)."""
    before = healthy_page()
    after = before.copy().requests(9, reason, "503")
    found = signal(after, before)
    assert found.verdict is Verdict.HEALTHY
    assert f"9 503 answers ({reason})" in found.evidence[0]
    assert "peers healthy again" in found.evidence[0]


def test_dial_timeouts_that_quarantined_a_restarted_peer_are_its_outage_over() -> None:
    """The tour's target-rolling-restart: dials to the old pod's endpoint fail (peer_departed, then 5 s
    timeouts) until the peer is quarantined, and the new one is healthy soon after. Its healed alert's
    details said check_reason and sent the reader to the `upstream` reason, of which there was none."""
    before = healthy_page()
    after = before.copy().add(QUARANTINES, 2).add(ALL_QUARANTINED, 2)
    for reason, n in (("all_quarantined", 29), ("peer_departed", 8), ("timeout", 6)):
        after.requests(n, reason, "503")
    found = signal(after, before)
    assert found.verdict is Verdict.HEALTHY
    assert "6 503 answers (timeout) in the last 15m: peers healthy again" in found.evidence[0]
    assert "no other 503 answers" in found.evidence[0]


def test_dial_timeouts_without_a_quarantine_are_still_for_the_reasons_check() -> None:
    # Peers that stay selectable while their dials time out: the path, not an outage that is over.
    before = healthy_page()
    found = signal(before.copy().requests(6, "timeout", "503"), before)
    assert found.verdict is Verdict.CHECK_REASON
    assert found.evidence[0] == "503 answers in the last 15m by reason: timeout 6"
