"""diagnose(): healthy targets and the shape of what it returns (order, keys, filters)."""

from __future__ import annotations

import math

import pytest

from bot.domain.diagnosis import diagnose
from bot.domain.findings import Severity, finding_key
from tests.bot.domain.diagnosis_pages import GV, GV2, Page, T, key, moved, one, window

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
