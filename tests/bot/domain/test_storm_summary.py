"""A storm summary's content: counts worst first, targets grouped by live state per cluster, the cause."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.domain.findings import Severity
from bot.domain.messages import Tally
from bot.domain.storm import (
    ClusterStates,
    CommonCause,
    StormCounts,
    StormEntry,
    StormView,
    TargetLive,
    TargetsRead,
    TargetState,
    storm_rows,
)

NOW = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
QUARANTINED = TargetLive(TargetState.NO_HEALTHY_QUARANTINED, True, None, 0, 2, 0)
UNSYNCED = TargetLive(TargetState.CACHE_UNSYNCED, False, None, 2, 0, 0)


def test_storm_tallies_worst_first_then_most() -> None:
    entries = (
        StormEntry("Warn", Severity.WARNING, "g1", "p/a", "c1"),
        StormEntry("Warn", Severity.WARNING, "g2", "p/b", "c1"),
        StormEntry("Warn", Severity.WARNING, "g2", "p/b", "c1"),
        StormEntry("Crit", Severity.CRITICAL, "g3", "p/a", "c2"),
    )
    storm = StormView(entries, NOW)
    assert storm.by_alert() == [Tally("Crit", 1, 1, Severity.CRITICAL), Tally("Warn", 3, 2, Severity.WARNING)]
    assert storm.by_target() == [Tally("p/a", 2, 1, Severity.CRITICAL), Tally("p/b", 2, 1, Severity.WARNING)]
    assert (storm.groups, storm.targets, storm.clusters) == (3, 2, 2)


def _entries(targets: int, clusters: int) -> list[StormEntry]:
    return [StormEntry("A", Severity.WARNING, f"g{i}", f"p/t{i}", f"c{i % clusters}") for i in range(targets)]


def test_the_cause_suspected_from_the_storms_shape() -> None:
    assert StormCounts(_entries(5, 2)).shape_cause() is CommonCause.PLATFORM_PATH
    assert StormCounts(_entries(5, 1)).shape_cause() is CommonCause.CLIENT_CLUSTER
    assert StormCounts(_entries(1, 1) * 3).shape_cause() is CommonCause.ONE_TARGET
    assert StormCounts(_entries(2, 2)).shape_cause() is CommonCause.UNCLEAR
    assert StormCounts([]).shape_cause() is CommonCause.UNCLEAR
    # Without live rows the view only suspects.
    cause = StormView(tuple(_entries(5, 1)), NOW).common_cause()
    assert (cause.kind, cause.evidence) == (CommonCause.CLIENT_CLUSTER, False)


def test_targets_are_grouped_by_live_state_per_cluster_worst_first() -> None:
    entries = [StormEntry("A", Severity.CRITICAL, f"g{i}", f"p/t{i:02}", "c0") for i in range(30)]
    entries += [StormEntry("A", Severity.CRITICAL, "b", "p/b", "c1", since=1.0, ended=2.0)]
    lives = {f"p/t{i:02}": QUARANTINED for i in range(20)}
    lives |= {f"p/t{i:02}": UNSYNCED for i in range(20, 25)}
    rows = storm_rows(entries, {"c0": TargetsRead(lives), "c1": TargetsRead({"p/b": UNSYNCED})})
    storm = StormView.of(StormCounts(entries), NOW, None, rows)
    [c0, c1] = storm.by_cluster()
    assert c0 == ClusterStates(
        "c0",
        30,
        (
            (TargetState.NO_HEALTHY_QUARANTINED, 20),
            (TargetState.CACHE_UNSYNCED, 5),
            (TargetState.NO_SERIES, 5),
        ),
        0,
        None,  # neither the peer feed nor the path explains every judged target
    )
    assert (c1.targets, c1.states, c1.resolved) == (1, (), 1)


def test_the_signature_changes_with_what_the_summary_shows_and_only_then() -> None:
    entries = _entries(12, 1)
    rows = storm_rows(entries, {"c0": TargetsRead({"p/t0": QUARANTINED})})
    one = StormView.of(StormCounts(entries), NOW, None, rows)
    assert one.signature() == StormView.of(StormCounts(entries), NOW, None, rows).signature()
    more = [*entries, StormEntry("A", Severity.WARNING, "g99", "p/t99", "c0")]
    assert StormView.of(StormCounts(more), NOW, None, rows).signature() != one.signature()
    moved = storm_rows(entries, {"c0": TargetsRead({"p/t0": UNSYNCED})})
    assert StormView.of(StormCounts(entries), NOW, None, moved).signature() != one.signature()


def test_a_storm_is_resolved_once_every_alert_ended() -> None:
    firing = StormEntry("A", Severity.WARNING, "g1", "p/a", "c0", since=1.0)
    ended = StormEntry("A", Severity.WARNING, "g1", "p/a", "c0", since=1.0, ended=5.0)
    counts = StormCounts([firing, ended])
    assert (counts.alerts, counts.firing, StormView.of(counts, NOW).resolved) == (2, 1, False)
    counts.remove(firing)
    assert StormView.of(counts, NOW).resolved
    assert not StormView.of(StormCounts(), NOW).resolved


def test_an_alert_without_a_target_is_its_own_row_and_no_target_of_the_cluster() -> None:
    found = [*_entries(3, 1), StormEntry("ResourceProxyProbeFailing", Severity.CRITICAL, "p", None, "c0")]
    rows = storm_rows(found, {"c0": TargetsRead({})})
    [c0] = StormView.of(StormCounts(found), NOW, None, rows).by_cluster()
    assert c0.targets == 3
    assert c0.states == ((TargetState.NO_SERIES, 3), (TargetState.NO_TARGET, 1))
