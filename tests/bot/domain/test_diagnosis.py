from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from bot.domain.diagnosis import diagnose
from bot.domain.diagnosis_readings import fmt_duration
from bot.domain.findings import Finding, Severity, finding_key
from bot.domain.snapshot import (
    ACTIVE_WATCHES,
    ALL_QUARANTINED,
    DIAL_DURATION,
    DISCOVERY_FALLBACKS,
    INFLIGHT,
    QUARANTINES,
    RECOVERIES,
    TERMINATIONS,
    WATCH_EVENTS,
)
from tests.bot.domain.diagnosis_pages import GV, GV2, Page, T, window


def key(kind: str, gv: str | None = None, detail: str | None = None) -> str:
    return finding_key(kind, T, gv, detail)


def one(findings: list[Finding], k: str) -> Finding:
    found = [f for f in findings if f.key == k]
    assert len(found) == 1, f"{k} not in {[f.key for f in findings]}"
    return found[0]


def text(f: Finding) -> str:
    return " | ".join((f.title, *f.evidence, f.cause, f.next_step))


def moved(change: Callable[[Page], object], base: Page | None = None, seconds: float = 900) -> list[Finding]:
    """Diagnose a window in which `change` happened on top of `base` (healthy peers by default)."""
    before = base or Page().peers()
    after = before.copy()
    change(after)
    return diagnose(after.snapshot(), window(before, after, seconds))


# -- healthy --------------------------------------------------------------------------------------


def test_healthy_target_gives_one_ok_finding() -> None:
    found = diagnose(Page().peers(healthy=3).requests(100).snapshot())
    assert [(f.severity, f.key) for f in found] == [(Severity.OK, key("healthy"))]
    assert "healthy" in found[0].title
    assert any("healthy 3" in e for e in found[0].evidence)


def test_one_ok_finding_per_target() -> None:
    page = Page().peers().peers(target="shop/billing")
    found = diagnose(page.snapshot())
    assert [(f.severity, f.target) for f in found] == [(Severity.OK, "shop/billing"), (Severity.OK, T)]


def test_info_findings_still_count_as_healthy() -> None:
    found = moved(lambda p: p.requests(3, "ownership_masked", "404"))
    assert [f.severity for f in found] == [Severity.INFO, Severity.OK]


# -- peers per group/version ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("page", "kind", "words"),
    [
        (Page().peers(0, 1, 1), "no_healthy_peers", ("half_open", "trial")),
        (Page().peers(0, 3, 0), "no_healthy_peers", ("quarantined", "503")),
        (Page().peers(0, 0, 0, synced=0, age=None), "cache_unsynced", ("503",)),
        (Page().peers(0, 0, 0, synced=1), "empty_peer_list", ("synced", "empty")),
    ],
)
def test_peer_cache_states_are_critical(page: Page, kind: str, words: tuple[str, ...]) -> None:
    f = one(diagnose(page.snapshot()), key(kind, GV))
    assert f.severity is Severity.CRITICAL
    assert all(w in f.title for w in words)
    assert f.group_version == GV


def test_unsynced_without_any_peer_list_points_at_platform_or_license() -> None:
    f = one(diagnose(Page().peers(0, synced=0, age=None).snapshot()), key("cache_unsynced", GV))
    assert "since the proxy started" in f.cause
    assert "license" in f.next_step
    assert any("fallback" in e for e in f.evidence)  # discovery keeps answering


def test_unsynced_after_a_peer_list_points_at_the_dropped_watch() -> None:
    f = one(diagnose(Page().peers(0, synced=0, age=300).snapshot()), key("cache_unsynced", GV))
    assert "60 s" in f.cause


def test_trap_synced_with_zero_healthy_is_still_critical() -> None:
    f = one(diagnose(Page().peers(0, 2, synced=1).snapshot()), key("no_healthy_peers", GV))
    assert f.severity is Severity.CRITICAL
    assert any("synced" in e and "not availability" in e for e in f.evidence)


def test_empty_list_next_step_names_the_target_cluster() -> None:
    f = one(diagnose(Page().peers(0, 0, 0).snapshot()), key("empty_peer_list", GV))
    assert "target tenant cluster is running" in f.next_step


def test_each_group_version_is_judged_alone() -> None:
    found = diagnose(Page().peers(3, gv=GV).peers(0, 2, gv=GV2).snapshot())
    assert key("no_healthy_peers", GV2) in {f.key for f in found}
    assert not any(f.group_version == GV for f in found)


# -- peer list age is not staleness -----------------------------------------------------------------


def test_trap_a_huge_peer_list_age_alone_is_healthy() -> None:
    found = diagnose(Page().peers(3, age=7 * 24 * 3600).snapshot())
    assert [f.key for f in found] == [key("healthy")]


def test_a_huge_age_is_only_an_info_hint_next_to_a_real_problem() -> None:
    found = diagnose(Page().peers(0, 2, age=4 * 3600).snapshot())
    hint = one(found, key("peer_list_age_hint"))
    assert hint.severity is Severity.INFO
    assert "platform connectivity" in hint.title
    assert "not the staleness clock" in hint.cause


def test_a_modest_age_gives_no_hint_even_when_broken() -> None:
    found = diagnose(Page().peers(0, 2, age=120).snapshot())
    assert key("peer_list_age_hint") not in {f.key for f in found}


# -- counters: absent means zero, no window means since start -----------------------------------------


def test_trap_missing_counters_are_zero_not_unknown() -> None:
    found = moved(lambda p: None, base=Page().peers())
    assert [f.key for f in found] == [key("healthy")]
    assert "requests in the last 15m: 0" in found[0].evidence
    assert "unknown" not in text(found[0]).lower()


def test_a_counter_that_first_appears_in_the_window_counts_all_its_events() -> None:
    f = one(moved(lambda p: p.requests(7, "no_peer", "503")), key("request_reason", GV, "no_peer"))
    assert f.severity is Severity.WARNING
    assert "7" in f.title


def test_without_a_window_counters_say_since_start_and_stay_info() -> None:
    page = Page().peers().requests(40, "timeout", "503").dial_failures(40, "timeout")
    found = diagnose(page.snapshot())
    counted = [f for f in found if f.kind != "healthy"]
    assert counted
    for f in counted:
        assert f.window_seconds is None
        assert "since the proxy started" in f.title
        assert f.severity <= Severity.INFO


def test_with_a_window_findings_carry_its_length() -> None:
    f = one(moved(lambda p: p.dial_failures(4, "timeout"), seconds=600), key("dial_failures"))
    assert f.window_seconds == 600
    assert "last 10m" in f.title


# -- request reasons, one per guide reason -------------------------------------------------------------

# reason, code, expected severity, a word the title must carry
REQUEST_REASONS = [
    ("no_peer", "503", Severity.WARNING, "proxy path"),
    ("stale_peers", "503", Severity.WARNING, "proxy path"),
    ("all_quarantined", "503", Severity.WARNING, "proxy path"),
    ("timeout", "503", Severity.WARNING, "proxy path"),
    ("deadline", "504", Severity.WARNING, "proxy path"),
    ("canceled", "499", Severity.INFO, "not a proxy fault"),
    ("peer_departed", "503", Severity.WARNING, "proxy path"),
    ("ts_server_unavailable", "503", Severity.WARNING, "proxy path"),
    ("error", "503", Severity.WARNING, "proxy path"),
    ("ownership_masked", "404", Severity.INFO, "isolation working"),
    ("ownership_check_failed", "503", Severity.WARNING, "proxy path"),
    ("namespace_missing", "404", Severity.INFO, "not a proxy fault"),
    ("upgrade_rejected", "501", Severity.INFO, "not a proxy fault"),
    ("upstream_error", "200", Severity.INFO, "target"),
    ("upstream", "500", Severity.INFO, "target"),
    ("reason_from_the_future", "503", Severity.INFO, "unknown"),
]


@pytest.mark.parametrize(("reason", "code", "severity", "word"), REQUEST_REASONS)
def test_each_request_reason_that_moved_is_explained(
    reason: str, code: str, severity: Severity, word: str
) -> None:
    found = moved(lambda p: p.requests(90, "upstream").requests(10, reason, code))
    f = one(found, key("request_reason", GV, reason))
    assert f.severity is severity
    assert word in f.title
    assert f.reason == reason
    assert any("10 of 100 requests (10.0 %)" in e for e in f.evidence)
    assert any(code in e for e in f.evidence)


def test_target_answers_that_succeeded_are_not_findings() -> None:
    found = moved(lambda p: p.requests(500, "upstream", "200").requests(3, "upstream", "404"))
    assert [f.key for f in found] == [key("healthy")]


def test_ownership_masked_is_isolation_and_not_a_fault() -> None:
    f = one(
        moved(lambda p: p.requests(25, "ownership_masked", "404")),
        key("request_reason", GV, "ownership_masked"),
    )
    assert f.severity is Severity.INFO
    assert "isolation" in f.cause.lower()
    assert "ownership labels" in f.next_step


def test_reasons_are_kept_per_group_version() -> None:
    found = moved(lambda p: p.requests(5, "no_peer", "503", gv=GV2))
    assert key("request_reason", GV2, "no_peer") in {f.key for f in found}
    assert key("request_reason", GV, "no_peer") not in {f.key for f in found}


# -- terminations, dials, discovery ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "severity", "word"),
    [("deadline", Severity.WARNING, "60 s"), ("upgrade_rejected", Severity.INFO, "501")],
)
def test_terminations(reason: str, severity: Severity, word: str) -> None:
    found = moved(lambda p: p.add(TERMINATIONS, 4, reason=reason).requests(4, reason, "503"))
    f = one(found, key("termination", None, reason))
    assert (f.severity, word in f.title) == (severity, True)
    # The same requests are not reported twice through request_total.
    assert key("request_reason", GV, reason) not in {x.key for x in found}


def test_dial_failures_by_reason_lead_with_the_proxy_side_one() -> None:
    f = one(moved(lambda p: p.dial_failures(9, "canceled").dial_failures(4, "timeout")), key("dial_failures"))
    assert f.severity is Severity.WARNING
    assert "timeout" in f.title
    assert "canceled 9" in f.evidence[0]
    assert "timeout 4" in f.evidence[0]
    assert "path check" in f.next_step


def test_dial_failures_from_canceled_callers_only_are_not_a_proxy_fault() -> None:
    f = one(moved(lambda p: p.dial_failures(6, "canceled")), key("dial_failures"))
    assert f.severity is Severity.INFO
    assert "not a proxy fault" in f.title


@pytest.mark.parametrize(
    ("reason", "step_word"), [("all_quarantined", "probe"), ("upstream_error", "CRD"), ("no_peer", "probe")]
)
def test_trap_discovery_fallback_answers_200_while_requests_fail(reason: str, step_word: str) -> None:
    found = moved(lambda p: p.add(DISCOVERY_FALLBACKS, 6, group_version=GV, reason=reason))
    f = one(found, key("discovery_fallback", GV))
    assert f.severity is Severity.WARNING
    assert "200" in f.title
    assert "APIService" in f.title
    assert step_word in f.next_step
    assert f.alert == "ResourceProxyDiscoveryDegraded"


def test_upstream_error_on_requests_is_reported_once_by_the_discovery_finding() -> None:
    found = moved(
        lambda p: p.add(DISCOVERY_FALLBACKS, 2, group_version=GV, reason="upstream_error").requests(
            2, "upstream_error", "200"
        )
    )
    assert key("discovery_fallback", GV) in {f.key for f in found}
    assert key("request_reason", GV, "upstream_error") not in {f.key for f in found}


# -- quarantine transitions -----------------------------------------------------------------------------


def test_all_quarantined_transition_that_healed_is_info() -> None:
    f = one(moved(lambda p: p.add(ALL_QUARANTINED, 1)), key("all_quarantined"))
    assert f.severity is Severity.INFO
    assert "once" in f.title
    assert "back" in f.title


def test_all_quarantined_transition_still_broken_is_warning() -> None:
    f = one(moved(lambda p: p.add(ALL_QUARANTINED, 2).peers(0, 2)), key("all_quarantined"))
    assert f.severity is Severity.WARNING
    assert f.alert == "ResourceProxyTargetUnavailable"


def test_quarantine_churn_without_recoveries() -> None:
    found = moved(lambda p: p.add(QUARANTINES, 8).peers(0, 1))
    f = one(found, key("quarantine_churn"))
    assert f.severity is Severity.WARNING
    assert "without a single recovery" in f.title
    assert f.alert == "ResourceProxyPeerChurn"


def test_quarantines_with_recoveries_are_flapping_info() -> None:
    f = one(moved(lambda p: p.add(QUARANTINES, 8).add(RECOVERIES, 8)), key("quarantine_flapping"))
    assert f.severity is Severity.INFO


def test_five_quarantines_are_below_the_churn_threshold() -> None:
    assert [f.key for f in moved(lambda p: p.add(QUARANTINES, 5))] == [key("healthy")]


# -- watches, latency, saturation ------------------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "severity"), [(3600, Severity.WARNING), (900, Severity.INFO)])
def test_trap_silent_watches_carry_the_json_cbor_caveat(seconds: float, severity: Severity) -> None:
    f = one(moved(lambda p: p.watches(3), seconds=seconds), key("watches_silent"))
    assert f.severity is severity
    assert any("JSON" in e and "CBOR" in e for e in f.evidence)
    assert f.alert == "ResourceProxyWatchesSilent"


def test_watches_with_events_are_fine() -> None:
    found = moved(lambda p: p.watches(3).add(WATCH_EVENTS, 40), seconds=3600)
    assert [f.key for f in found] == [key("healthy")]


def test_watches_open_and_no_event_ever_counted_since_start() -> None:
    f = one(diagnose(Page().peers().set(ACTIVE_WATCHES, 2).snapshot()), key("watches_silent"))
    assert f.severity is Severity.INFO
    assert "since the proxy started" in f.title


def test_dial_latency_step_is_a_warning() -> None:
    base = Page().peers().observe(DIAL_DURATION, 0.02, times=500)
    f = one(moved(lambda p: p.observe(DIAL_DURATION, 0.4, times=100), base=base), key("dial_latency"))
    assert f.severity is Severity.WARNING
    assert "stepped up" in f.title
    assert "path check" in f.next_step


def test_steady_dial_latency_is_fine() -> None:
    base = Page().peers().observe(DIAL_DURATION, 0.02, times=500)
    found = moved(lambda p: p.observe(DIAL_DURATION, 0.02, times=100), base=base)
    assert [f.key for f in found] == [key("healthy")]


def test_dial_latency_near_the_timeout_since_start() -> None:
    page = Page().peers().observe(DIAL_DURATION, 4.0, times=50)
    f = one(diagnose(page.snapshot()), key("dial_latency"))
    assert f.severity is Severity.INFO
    assert "5 s dial timeout" in f.title


@pytest.mark.parametrize(
    ("inflight", "deadlines", "hinted"), [(80, 0, True), (3, 2, True), (3, 0, False), (0, 2, False)]
)
def test_inflight_saturation_hint(inflight: float, deadlines: float, hinted: bool) -> None:
    found = moved(lambda p: p.set(INFLIGHT, inflight).add(TERMINATIONS, deadlines, reason="deadline"))
    hints = [f for f in found if f.key == key("inflight_saturation")]
    assert bool(hints) is hinted
    assert all(h.severity is Severity.INFO for h in hints)


# -- shape -----------------------------------------------------------------------------------------------


def test_worst_first() -> None:
    page = Page().peers(0, 2).peers(3, gv=GV2).requests(4, "ownership_masked", "404").watches(1)
    found = diagnose(page.snapshot())
    severities = [f.severity for f in found]
    assert severities == sorted(severities, reverse=True)
    assert severities[0] is Severity.CRITICAL


def test_target_filter_and_unknown_target() -> None:
    page = Page().peers().peers(0, 2, target="shop/billing")
    assert {f.target for f in diagnose(page.snapshot(), target=T)} == {T}
    [f] = diagnose(page.snapshot(), target="shop/nothing")
    assert (f.severity, f.key) == (Severity.INFO, finding_key("no_series", "shop/nothing"))
    assert T in f.evidence[0]


def test_counter_reset_in_the_window_is_noted() -> None:
    before = Page().peers().requests(500)
    after = Page().peers().requests(20)
    found = diagnose(after.snapshot(), window(before, after))
    assert one(found, key("counter_reset")).severity is Severity.INFO


def test_keys_are_stable_across_runs_and_numbers() -> None:
    a = moved(lambda p: p.requests(5, "timeout", "503"))
    b = moved(lambda p: p.requests(50, "timeout", "503"))
    assert [f.key for f in a] == [f.key for f in b]
    assert a[0].title != b[0].title


def test_empty_snapshot_has_no_targets() -> None:
    assert diagnose(Page().snapshot()) == []


@pytest.mark.parametrize("age", [math.inf, math.nan])
def test_a_broken_age_gauge_is_shown_not_crashed_on(age: float) -> None:
    found = diagnose(Page().peers(0, 2, age=age).snapshot())
    assert one(found, key("no_healthy_peers", GV)).severity is Severity.CRITICAL


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(45, "45s"), (90, "90s"), (120, "2m"), (900, "15m"), (3600, "1h"), (5400, "1h30m"), (86400, "24h")],
)
def test_window_lengths_read_like_people_write_them(seconds: float, shown: str) -> None:
    assert fmt_duration(seconds) == shown
