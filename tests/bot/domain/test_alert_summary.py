"""What the compact alert message folds: findings, peer states, the trap that applies now, links."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import unquote

import pytest

from bot.domain.alert_summary import (
    PeerReading,
    WorstSeen,
    common_labels,
    current_trap,
    fold_findings,
    fold_peers,
    peer_readings,
    silence_page,
    web_link,
    worst_of,
)
from bot.domain.alerts_catalog import ALERTS, NO_HEALTHY_PEERS, PEER_CACHE_UNSYNCED, PROBE_FAILING
from bot.domain.diagnosis import diagnose, diagnose_alert
from bot.domain.findings import Finding, Severity
from tests.bot.domain.diagnosis_pages import GV, GV2, Page, T, key, one


def degraded(target: str = T) -> Page:
    page = Page()
    for gv in (GV, GV2):
        page.peers(healthy=0, quarantined=2, gv=gv, target=target)
    return page


def test_the_same_finding_on_two_group_versions_and_replicas_is_one_with_its_places() -> None:
    found = diagnose(degraded().snapshot())
    pairs = [(f, pod) for f in found for pod in ("vc-0", "vc-1")]
    [folded] = [f for f in fold_findings(pairs) if f.severity is Severity.CRITICAL]
    assert folded.title == "no healthy peers, all 2 quarantined; requests fail with 503"
    assert folded.group_versions == (GV2, GV)
    assert folded.replicas == ("vc-0", "vc-1")
    assert folded.count == 2  # two conditions (one per group/version), each seen by two replicas


def test_numbers_that_differ_become_a_range_and_targets_fold_too() -> None:
    base = one(diagnose(degraded().snapshot()), key("no_healthy_peers", GV))
    other = replace(base, key="other", target="shop/billing", title="shop/billing: 7 of 9 failed in 30s")
    mine = replace(base, key="mine", title=f"{T}: 12 of 9 failed in 30s")
    [folded] = fold_findings([(mine, None), (other, None)])
    assert folded.title == "7-12 of 9 failed in 30s"
    assert folded.targets == ("shop/billing", T)


def test_different_conditions_stay_apart_worst_first() -> None:
    found = diagnose(degraded().snapshot())
    folded = fold_findings((f, None) for f in found)
    assert [f.severity for f in folded] == sorted((f.severity for f in folded), reverse=True)
    assert len({f.title for f in folded}) == len(folded)


def test_peer_states_fold_when_they_agree_worst_first() -> None:
    snap = degraded().peers(healthy=3, quarantined=0, gv=GV2).snapshot()
    readings = peer_readings(snap, [T, "not/there"], "vc-0")
    assert [(r.group_version, r.healthy, r.replica) for r in readings] == [(GV2, 3, "vc-0"), (GV, 0, "vc-0")]
    states = fold_peers([*readings, PeerReading(T, "third/v1", 0, 2, 0, True, "vc-0")])
    assert [(s.healthy, len(s.caches)) for s in states] == [(0, 2), (3, 1)]


@pytest.mark.parametrize(
    ("alert", "kinds", "expected"),
    [
        (NO_HEALTHY_PEERS, [], 0),
        (NO_HEALTHY_PEERS, ["empty_peer_list"], 1),
        (PEER_CACHE_UNSYNCED, ["peer_list_age_hint"], 2),
        (PROBE_FAILING, [], 0),
        (PROBE_FAILING, ["no_healthy_peers"], 1),
    ],
)
def test_the_one_trap_that_applies_now(alert: str, kinds: list[str], expected: int) -> None:
    d = diagnose_alert(alert, {"target": T, "group_version": GV}, degraded().snapshot())
    base = d.findings[0]
    found = tuple(replace(base, kind=k, severity=Severity.WARNING) for k in kinds)
    assert current_trap(replace(d, findings=found)) == ALERTS[alert].traps[expected]


def test_an_alert_without_traps_has_none() -> None:
    d = diagnose_alert("SomethingElse", {}, None)
    assert current_trap(d) is None


def test_the_worst_state_keeps_the_earlier_on_a_tie() -> None:
    first, second = WorstSeen(Severity.CRITICAL, "first"), WorstSeen(Severity.CRITICAL, "second")
    assert second.worse(first) == first
    assert WorstSeen(Severity.CRITICAL, "x").worse(WorstSeen(Severity.WARNING, "y")).what == "x"
    assert worst_of([]) is None


def test_silence_page_is_alertmanagers_own_filter() -> None:
    url = silence_page("https://am.example:9093/", {"alertname": "A", "target": 'p/"n"', "pod": "vc-0"})
    assert url is not None
    assert url.startswith("https://am.example:9093/#/silences/new?filter=")
    assert unquote(url.split("filter=")[1]) == '{pod="vc-0", target="p/\\"n\\"", alertname="A"}'
    assert silence_page("", {"alertname": "A"}) is None
    assert silence_page("https://am/", {}) is None


@pytest.mark.parametrize(
    "bad", ["", "javascript:alert(1)", "ftp://x/", "//x/y", "http://", "http://a b", "http://h/" + "h" * 3000]
)
def test_only_http_links_are_kept(bad: str) -> None:
    assert web_link(bad) is None


def test_common_labels_are_those_every_alert_shares() -> None:
    assert common_labels([{"a": "1", "b": "2"}, {"a": "1", "b": "3"}]) == {"a": "1"}
    assert common_labels([]) == {}


def test_a_finding_without_place_prefix_keeps_its_title() -> None:
    f = Finding(Severity.INFO, "k", "k", "plain title", (), "c", "n", "g", T)
    [folded] = fold_findings([(f, None)])
    assert folded.title == "plain title"
    assert folded.group_versions == ()
