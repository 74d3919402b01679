"""The tour's stops: every scenario PRODUCT.md names, each in a channel of its own, bounded in time.

Running it end to end, with the page in a browser, is tests/e2e/test_demo_page.py.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from bot.cli.demo_tour import SILENCE_COMMENT, SILENCE_FOR, TOUR_EPOCH, single_stop, tour_stops
from bot.cli.main import main
from bot.domain.durations import parse_duration
from sim.scenarios import SCENARIOS


def test_the_tour_walks_restart_target_down_incident_shared_change_flap_storm_digest() -> None:
    stops = tour_stops()
    assert [s.scenario for s in stops] == [
        "target-rolling-restart",
        "target-down",
        "peer-watch-dropped",
        "shared-target-down",
        "config-change",
        "flapping",
        "storm",
        "target-down",
    ]
    assert all(s.scenario in SCENARIOS for s in stops)
    assert len({s.channel for s in stops}) == len(stops)
    assert all(s.goal and s.title and s.tour for s in stops)
    # Each stop ends when its goal shows; the bound only caps a loaded machine.
    assert sum(s.seconds for s in stops) <= 20 * 60
    # The digest tells of a fleet: the demo's, not one client with one target.
    assert [s.wide for s in stops] == [False] * 7 + [True]


def test_the_tours_silence_lasts_until_the_time_its_reason_gives() -> None:
    # Made at the earliest at the tour's t=0: a silence that ends before "back by" re-pages too soon.
    back_by = re.search(r"back by (\d\d):(\d\d)", SILENCE_COMMENT)
    assert back_by is not None
    start = datetime.fromtimestamp(TOUR_EPOCH, UTC)
    span = parse_duration(SILENCE_FOR, field="duration", low=1, high=7 * 86400)
    back = start.replace(hour=int(back_by[1]), minute=int(back_by[2]))
    assert start + timedelta(seconds=span) >= back


def test_a_speed_given_applies_to_every_stop_and_one_scenario_runs_its_duration() -> None:
    assert {s.speed for s in tour_stops(80.0)} == {80.0}
    one = single_stop("flapping", None, 12.0, "#proxy-alerts")
    assert (one.speed, one.seconds, one.tour) == (SCENARIOS["flapping"].demo_speed, 12.0, False)
    assert "tour" not in one.announcement(1, 1, "http://127.0.0.1:1/", "C1")


def test_demo_takes_tour(capsys: pytest.CaptureFixture[str]) -> None:
    # Parsed, then refused for its duration before anything starts: no demo runs here.
    assert main(["demo", "--tour", "--duration", "0"]) == 2
    assert "--speed and --duration must be positive" in capsys.readouterr().err
