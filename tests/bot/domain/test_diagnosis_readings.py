"""Readings (bot/domain/diagnosis_readings.py): absent counters are zero, windows, durations."""

from __future__ import annotations

import pytest

from bot.domain.diagnosis import diagnose
from bot.domain.diagnosis_readings import Readings, fmt_duration
from bot.domain.findings import Severity
from bot.domain.snapshot import REQUESTS
from tests.bot.domain.diagnosis_pages import GV, Page, T, key, moved, one, text

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


# -- durations as people write them ------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(45, "45s"), (90, "90s"), (120, "2m"), (900, "15m"), (3600, "1h"), (5400, "1h30m"), (86400, "24h")],
)
def test_window_lengths_read_like_people_write_them(seconds: float, shown: str) -> None:
    assert fmt_duration(seconds) == shown


# -- several series of one (code, reason): summed, never one of them --------------------------------------


def two_verbs(page: Page, get: float, listed: float) -> Page:
    """503/upstream requests on two series, as a real page splits them by verb."""
    page.requests(get, "upstream", "503")
    return page.add(REQUESTS, listed, group_version=GV, verb="list", code="503", reason="upstream")


def test_a_reason_counted_on_several_series_is_their_sum() -> None:
    readings = Readings(two_verbs(Page().peers(), 7, 5).snapshot(), None, T)
    assert readings.counter_by(REQUESTS, "code", "reason") == {("503", "upstream"): 12}
    assert readings.counter_by(REQUESTS, "group_version", "reason") == {(GV, "upstream"): 12}


def test_the_alerts_reason_counts_sum_every_series_of_a_reason() -> None:
    f = one(moved(lambda p: two_verbs(p, 7, 5)), key("request_reason", GV, "upstream"))
    assert ": 12 requests " in f.title
