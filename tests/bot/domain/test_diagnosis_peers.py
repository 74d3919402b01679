"""Peer findings (bot/domain/diagnosis_peers.py): peer states per group/version, list age, quarantines."""

from __future__ import annotations

import pytest

from bot.domain.diagnosis import diagnose
from bot.domain.findings import Severity
from bot.domain.snapshot import (
    ALL_QUARANTINED,
    QUARANTINES,
    RECOVERIES,
)
from tests.bot.domain.diagnosis_pages import GV, GV2, Page, key, moved, one

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
