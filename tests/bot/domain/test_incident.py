"""Incidents, pure: the cause an alert's diagnosis names, which open incident a group joins, flap counts."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from bot.domain.alert_standing import Standing
from bot.domain.diagnosis import AlertDiagnosis
from bot.domain.findings import Finding, Severity, finding_key
from bot.domain.incident import (
    FLAP_NOTE_EVERY_SECONDS,
    FLAP_WINDOW_SECONDS,
    FLAPPING_AT,
    Cause,
    CauseKey,
    Flaps,
    OpenIncident,
    cause_of,
    group_cause,
    pick_incident,
    probe_subject,
)
from bot.domain.verdict import TargetVerdict, Verdict

TARGET = "platform/crd-store"


def finding(
    kind: str, severity: Severity = Severity.CRITICAL, reason: str | None = None, target: str = TARGET
) -> Finding:
    return Finding(
        severity=severity,
        kind=kind,
        key=finding_key(kind, target, None, reason),
        title=kind,
        evidence=(),
        cause="",
        next_step="",
        guide_section="",
        target=target,
        reason=reason,
    )


def diagnosis(
    *findings: Finding, verdict: Verdict | None = None, severity: Severity = Severity.CRITICAL
) -> AlertDiagnosis:
    return AlertDiagnosis(
        alertname="ResourceProxyPeerCacheUnsynced",
        known=True,
        severity=severity,
        meaning="",
        standing=Standing.STILL_BROKEN,
        now="",
        now_evidence=(),
        cause="",
        next_step="",
        traps=(),
        guide_section=None,
        target=TARGET,
        group_version=None,
        pod=None,
        findings=findings,
        live=True,
        verdict=None if verdict is None else TargetVerdict(verdict, "", (), (), ""),
    )


# -- the cause of an alert ------------------------------------------------------------------------------


def test_the_chain_from_an_unsynced_cache_names_the_peer_feed() -> None:
    # PeerCacheUnsynced, DiscoveryDegraded (stale_peers) and a failing probe over the same state.
    assert cause_of(diagnosis(verdict=Verdict.NO_PEER_FEED)) is Cause.PEER_FEED
    assert cause_of(diagnosis(finding("cache_unsynced"))) is Cause.PEER_FEED
    stale = finding("request_reason", Severity.WARNING, reason="stale_peers")
    assert cause_of(diagnosis(stale)) is Cause.PEER_FEED


def test_the_chain_from_no_healthy_peers_names_the_endpoints_whether_down_or_unreachable() -> None:
    for verdict in (Verdict.TARGET_DOWN, Verdict.PROXY_PATH):
        assert cause_of(diagnosis(verdict=verdict)) is Cause.ENDPOINTS
    for kind in ("no_healthy_peers", "all_quarantined", "quarantine_churn", "quarantine_flapping"):
        assert cause_of(diagnosis(finding(kind, Severity.WARNING))) is Cause.ENDPOINTS


def test_an_unsynced_cache_alert_is_the_peer_feed_even_beside_a_down_target() -> None:
    """The storm's shard-00: its target down and team-a's peer feed dropped. Its PeerCacheUnsynced alert
    joined the endpoints incident ("Same cause: no healthy peer"): it is the client's peer feed."""
    unsynced = finding("cache_unsynced")
    assert cause_of(diagnosis(unsynced, verdict=Verdict.TARGET_DOWN)) is Cause.PEER_FEED
    # Once its cache is synced again, the verdict names the cause as for any alert.
    assert cause_of(diagnosis(verdict=Verdict.TARGET_DOWN)) is Cause.ENDPOINTS


def test_a_strong_verdict_wins_over_findings_and_a_finding_over_a_counters_verdict() -> None:
    unsynced = finding("cache_unsynced")
    other = replace(diagnosis(unsynced, verdict=Verdict.TARGET_DOWN), alertname="ResourceProxyNoHealthyPeers")
    assert cause_of(other) is Cause.ENDPOINTS
    # check_reason rests on 503s counted over a window: a quarantine finding says what is behind them.
    flapping = finding("quarantine_flapping", Severity.INFO)
    assert cause_of(diagnosis(flapping, verdict=Verdict.CHECK_REASON)) is Cause.ENDPOINTS
    assert cause_of(diagnosis(verdict=Verdict.CHECK_REASON)) is Cause.TARGET_ANSWERS
    assert cause_of(diagnosis(verdict=Verdict.SLOW_TARGET)) is Cause.SLOW_TARGET


def test_no_live_state_or_a_healthy_one_names_no_cause() -> None:
    assert cause_of(diagnosis()) is None
    assert cause_of(diagnosis(finding("healthy", Severity.OK), verdict=Verdict.HEALTHY)) is None
    assert cause_of(diagnosis(verdict=Verdict.UNKNOWN)) is None
    assert cause_of(diagnosis(finding("dial_latency", Severity.WARNING))) is None


def test_a_group_takes_the_cause_of_its_worst_alert_naming_one() -> None:
    warning = diagnosis(finding("no_healthy_peers"), severity=Severity.WARNING)
    critical = diagnosis(finding("cache_unsynced"), severity=Severity.CRITICAL)
    assert group_cause([warning, None, critical]) is Cause.PEER_FEED
    assert group_cause([diagnosis(severity=Severity.CRITICAL), warning]) is Cause.ENDPOINTS
    assert group_cause([None]) is None


def test_a_probes_findings_name_the_target_and_cause_behind_it() -> None:
    info = finding("quarantine_flapping", Severity.INFO, target="other/one")
    found = diagnosis(info, finding("cache_unsynced"), finding("no_healthy_peers", target="other/two"))
    assert probe_subject([None, found]) == (TARGET, Cause.PEER_FEED)
    assert probe_subject([diagnosis(info)]) is None  # an info finding does not explain a failing probe


# -- which incident a group joins ------------------------------------------------------------------------

FEED = CauseKey("team-a", TARGET, Cause.PEER_FEED)
OPEN = [
    OpenIncident(CauseKey("team-a", "platform/other", Cause.ENDPOINTS), "g-other", 10.0),
    OpenIncident(FEED, "g-feed", 20.0),
    OpenIncident(CauseKey("team-b", TARGET, Cause.PEER_FEED), "g-b", 5.0),
]


def test_a_group_joins_only_the_incident_of_its_own_key() -> None:
    assert pick_incident(FEED, "team-a", OPEN) == OPEN[1]
    assert pick_incident(replace(FEED, cause=Cause.ENDPOINTS), "team-a", OPEN) is None
    assert pick_incident(replace(FEED, cluster="team-c"), "team-c", OPEN) is None
    assert pick_incident(None, "team-a", OPEN) is None


def test_a_cause_on_the_targets_side_joins_another_clients_incident_of_that_target() -> None:
    down = [
        OpenIncident(CauseKey("team-a", TARGET, Cause.ENDPOINTS), "g-a", 10.0),
        OpenIncident(CauseKey("team-c", TARGET, Cause.ENDPOINTS), "g-c", 5.0),
        OpenIncident(CauseKey("team-d", TARGET, Cause.PEER_FEED), "g-d", 1.0),
    ]
    assert pick_incident(CauseKey("team-b", TARGET, Cause.ENDPOINTS), "team-b", down) == down[1]  # oldest
    # The peer feed is each client's own: no other client's incident is its.
    assert pick_incident(CauseKey("team-b", TARGET, Cause.PEER_FEED), "team-b", down) is None
    assert pick_incident(CauseKey("team-b", "platform/x", Cause.ENDPOINTS), "team-b", down) is None
    # Its own key first, when it has one open.
    assert pick_incident(CauseKey("team-a", TARGET, Cause.ENDPOINTS), "team-a", down) == down[0]


def test_a_failing_probe_joins_its_clusters_incident_its_own_cause_first_else_the_oldest() -> None:
    assert pick_incident(FEED, "team-a", OPEN, probe=True) == OPEN[1]
    assert pick_incident(None, "team-a", OPEN, probe=True) == OPEN[0]
    other = CauseKey("team-a", "platform/nope", Cause.SLOW_TARGET)
    assert pick_incident(other, "team-a", OPEN, probe=True) == OPEN[0]
    assert pick_incident(None, "team-c", OPEN, probe=True) is None
    assert pick_incident(None, None, OPEN, probe=True) is None


# -- flapping ---------------------------------------------------------------------------------------------


def test_a_group_is_flapping_from_its_second_refire_within_the_hour() -> None:
    flaps = Flaps().record(0.0, refired=False)
    assert flaps.count(0.0) == 0
    flaps = flaps.record(600.0, refired=True)
    assert (flaps.count(600.0), flaps.flapping(600.0), flaps.note_due(600.0)) == (1, False, False)
    flaps = flaps.record(1200.0, refired=True)
    assert (flaps.count(1200.0), flaps.flapping(1200.0), flaps.note_due(1200.0)) == (2, True, True)
    assert not flaps.noted(1200.0).note_due(1300.0)
    # An hour after the first refire it counts no more: one left, not flapping.
    assert flaps.count(600.0 + FLAP_WINDOW_SECONDS) == 1
    assert not flaps.record(600.0 + FLAP_WINDOW_SECONDS, refired=False).flapping(4000.0)


# Gaps between notifications, and whether each is a resolve -> fire transition.
steps = st.lists(st.tuples(st.floats(0.0, 2000.0), st.booleans()), max_size=60)


@given(steps)
def test_the_count_is_the_refires_of_the_last_hour_and_notes_come_at_most_hourly(
    sequence: list[tuple[float, bool]],
) -> None:
    flaps, now, refires, notes = Flaps(), 0.0, [], []
    for gap, refired in sequence:
        now += gap
        flaps = flaps.record(now, refired=refired)
        if refired:
            refires.append(now)
        assert flaps.count(now) == sum(1 for t in refires if now - t < FLAP_WINDOW_SECONDS)
        assert flaps.flapping(now) is (flaps.count(now) >= FLAPPING_AT)
        assert len(flaps.refired_at) == flaps.count(now)  # nothing older is kept
        if flaps.note_due(now):
            notes.append(now)
            flaps = flaps.noted(now)
    assert all(b - a >= FLAP_NOTE_EVERY_SECONDS for a, b in pairwise(notes))
