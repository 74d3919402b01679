"""A storm summary's content: counts worst first, and the likely common cause."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.domain.findings import Severity
from bot.domain.messages import Tally
from bot.domain.storm_summary import CommonCause, StormCounts, StormEntry, StormView

NOW = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


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


def test_the_likely_common_cause() -> None:
    assert StormCounts(_entries(5, 2)).common_cause() is CommonCause.PLATFORM_PATH
    assert StormCounts(_entries(5, 1)).common_cause() is CommonCause.CLIENT_CLUSTER
    assert StormCounts(_entries(1, 1) * 3).common_cause() is CommonCause.ONE_TARGET
    assert StormCounts(_entries(2, 2)).common_cause() is CommonCause.UNCLEAR
    assert StormCounts([]).common_cause() is CommonCause.UNCLEAR
