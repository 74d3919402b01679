"""Load findings (bot/domain/diagnosis_load.py): watches, latency, in-flight saturation."""

from __future__ import annotations

import pytest

from bot.domain.diagnosis import diagnose
from bot.domain.findings import Severity
from bot.domain.snapshot import (
    ACTIVE_WATCHES,
    DIAL_DURATION,
    INFLIGHT,
    TERMINATIONS,
    WATCH_EVENTS,
)
from tests.bot.domain.diagnosis_pages import Page, key, moved, one

# -- watches, latency, saturation ------------------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "severity"), [(3600, Severity.WARNING), (900, Severity.INFO)])
def test_trap_silent_watches_carry_the_json_cbor_caveat(seconds: float, severity: Severity) -> None:
    f = one(moved(lambda p: p.watches(3), seconds=seconds), key("watches_silent"))
    assert f.severity is severity
    assert any("JSON" in e and "CBOR" in e for e in f.evidence)
    assert f.alert == "ResourceProxyWatchesSilent"


def test_watches_with_events_are_fine() -> None:
    found = moved(lambda p: p.watches(3).add(WATCH_EVENTS, 40), seconds=3600)
    assert [f.key for f in found] == [key("healthy")]


def test_watches_open_and_no_event_ever_counted_since_start() -> None:
    f = one(diagnose(Page().peers().set(ACTIVE_WATCHES, 2).snapshot()), key("watches_silent"))
    assert f.severity is Severity.INFO
    assert "since the proxy started" in f.title


def test_dial_latency_step_is_a_warning() -> None:
    base = Page().peers().observe(DIAL_DURATION, 0.02, times=500)
    f = one(moved(lambda p: p.observe(DIAL_DURATION, 0.4, times=100), base=base), key("dial_latency"))
    assert f.severity is Severity.WARNING
    assert "stepped up" in f.title
    assert "path check" in f.next_step


def test_steady_dial_latency_is_fine() -> None:
    base = Page().peers().observe(DIAL_DURATION, 0.02, times=500)
    found = moved(lambda p: p.observe(DIAL_DURATION, 0.02, times=100), base=base)
    assert [f.key for f in found] == [key("healthy")]


def test_dial_latency_near_the_timeout_since_start() -> None:
    page = Page().peers().observe(DIAL_DURATION, 4.0, times=50)
    f = one(diagnose(page.snapshot()), key("dial_latency"))
    assert f.severity is Severity.INFO
    assert "5 s dial timeout" in f.title


def test_dial_latency_near_the_timeout_is_dials_failing_not_the_relay() -> None:
    """loft-sh/vcluster-docs troubleshoot/resource-proxy.mdx, "Requests time out after about 60 seconds":
    failures near 5 s are dial failures on the peer path; the operations page, "Confirm which path you are
    on": a relay raises dial latency by a step (and keeps traffic flowing), it does not time dials out."""
    base = Page().peers().observe(DIAL_DURATION, 0.02, times=500)
    f = one(moved(lambda p: p.observe(DIAL_DURATION, 4.8, times=100), base=base), key("dial_latency"))
    assert "close to the 5 s dial timeout" in f.title
    assert "DERP" not in f.cause
    assert "fail on the peer path" in f.cause
    assert "path check" not in f.next_step


@pytest.mark.parametrize(
    ("inflight", "deadlines", "hinted"), [(80, 0, True), (3, 2, True), (3, 0, False), (0, 2, False)]
)
def test_inflight_saturation_hint(inflight: float, deadlines: float, hinted: bool) -> None:
    found = moved(lambda p: p.set(INFLIGHT, inflight).add(TERMINATIONS, deadlines, reason="deadline"))
    hints = [f for f in found if f.key == key("inflight_saturation")]
    assert bool(hints) is hinted
    assert all(h.severity is Severity.INFO for h in hints)
