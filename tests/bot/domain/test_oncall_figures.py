"""The digest's on-call figures: quantiles, never acknowledged, escalated, the noisiest targets."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.domain.digest import Digest
from bot.domain.oncall_figures import ActiveSilence, OpenEpisode, figures, quantile
from bot.domain.resolution import EpisodeRecord

NOW = 1_700_100_000.0
SINCE = NOW - 86400


def record(
    target: str, started: float, fired: float, acked: float | None, escalated: bool = False
) -> EpisodeRecord:
    return EpisodeRecord((target,), started, fired, acked, None if acked is None else "U1", escalated)


def test_quantile_interpolates_between_the_closest_ranks() -> None:
    assert quantile([], 0.5) is None
    assert quantile([60.0], 0.9) == 60.0
    assert quantile([60.0, 120.0], 0.5) == 90.0
    assert quantile([float(n) for n in range(1, 11)], 0.9) == pytest.approx(9.1)


def test_figures_of_a_period() -> None:
    records = [
        record("team-a/db", NOW - 7200, 600, 60),
        record("team-a/db", NOW - 3600, 1200, 180, escalated=True),
        record("team-b/queue", NOW - 1800, 300, None, escalated=True),
        # Began before the period: only its time inside the period counts toward the noisiest.
        record("team-c/cache", SINCE - 1000, 1600, 30),
    ]
    silence = ActiveSilence("alice (U1)", datetime(2023, 11, 16, 14, 0, tzinfo=UTC), "db maintenance", ())
    found = figures(records, [OpenEpisode(("team-b/queue",), NOW - 100)], [silence], since=SINCE, now=NOW)
    assert (found.incidents, found.resolved, found.open) == (5, 4, 1)
    assert found.never_acknowledged == 1
    assert found.escalated == 2
    assert found.tta_median == 60.0  # of 30, 60, 180
    assert found.ttr_median == pytest.approx((600 + 1200) / 2)
    assert found.ttr_p90 is not None
    assert 1200 < found.ttr_p90 <= 1600
    assert found.noisiest == (("team-a/db", 1800.0), ("team-c/cache", 600.0), ("team-b/queue", 400.0))
    assert found.silences == (silence,)


def test_a_quiet_period_has_no_figures_to_show() -> None:
    found = figures([], [], [], since=SINCE, now=NOW)
    assert found.empty
    assert found.tta_median is None
    assert found.ttr_p90 is None


def test_an_episode_firing_now_counts_its_acknowledgement_and_escalation() -> None:
    firing = [
        OpenEpisode(("team-a/db",), NOW - 600),  # nobody took it yet
        OpenEpisode(("team-b/queue",), NOW - 900, acked_after=120.0),
        OpenEpisode(("team-c/cache",), NOW - 1200, escalated=True),
    ]
    found = figures([record("team-d/x", NOW - 7200, 600, 60)], firing, [], since=SINCE, now=NOW)
    assert (found.never_acknowledged, found.not_acknowledged_yet) == (0, 2)
    assert found.escalated == 1
    assert found.tta_median == 90.0  # of 60 (resolved) and 120 (firing now)
    assert found.ttr_median == 600.0  # only the resolved one has ended


def test_the_digests_json_counts_the_episodes_nobody_took_yet() -> None:
    found = figures([], [OpenEpisode(("team-a/db",), NOW - 600)], [], since=SINCE, now=NOW)
    shown = Digest("p", NOW, (), oncall=found).as_dict()["oncall"]
    assert (shown["never_acknowledged"], shown["not_acknowledged_yet"]) == (0, 1)
