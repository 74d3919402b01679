"""Alerts seen resolved per group: what makes a firing copy stale, and how much is kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from bot.domain.stale import MAX_SEEN, STALE_WINDOW_SECONDS, Ended, SeenResolved

START = datetime(2023, 11, 14, 22, 0, tzinfo=UTC)
END = START + timedelta(minutes=12)


def test_a_firing_alert_seen_resolved_with_the_same_start_is_stale_within_the_window() -> None:
    seen = SeenResolved().record([("a1", START, END)], now=100.0)
    assert seen.stale("a1", START, now=100.0 + STALE_WINDOW_SECONDS) == Ended(START, END, 100.0)
    assert seen.stale("a1", START, now=101.0 + STALE_WINDOW_SECONDS) is None  # a re-fire Alertmanager ended
    assert seen.stale("a1", START + timedelta(hours=1), now=100.0) is None  # a new episode
    assert seen.stale("a2", START, now=100.0) is None  # never seen resolved


def test_the_same_start_in_another_zone_is_the_same_episode() -> None:
    seen = SeenResolved().record([("a1", START, END)], now=0.0)
    assert seen.stale("a1", START.astimezone(timezone(timedelta(hours=2))), now=1.0) is not None


def test_the_same_episode_seen_again_keeps_when_it_was_first_seen() -> None:
    seen = SeenResolved().record([("a1", START, END)], now=100.0).record([("a1", START, None)], now=900.0)
    assert seen.alerts["a1"] == Ended(START, END, 100.0)
    later = START + timedelta(hours=2)
    assert seen.record([("a1", later, None)], now=950.0).alerts["a1"] == Ended(later, None, 950.0)


def test_only_the_last_fingerprints_seen_are_kept() -> None:
    seen = SeenResolved().record([(f"f{i}", START, END) for i in range(MAX_SEEN)], now=0.0)
    seen = seen.record([("f0", START, END)], now=1.0)  # seen again: the most recent now
    seen = seen.record([("new", START, END)], now=2.0)
    assert len(seen.alerts) == MAX_SEEN
    assert "f1" not in seen.alerts  # the least recently seen went
    assert list(seen.alerts)[-2:] == ["f0", "new"]
