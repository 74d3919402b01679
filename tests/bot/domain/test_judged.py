"""One judgement per alert: the verdict decides the standing, cause and next step every line shows."""

from __future__ import annotations

import pytest

from bot.domain.diagnosis import Standing, diagnose_alert, judged
from bot.domain.diagnosis_readings import Readings
from bot.domain.findings import Severity
from bot.domain.verdict import (
    NEXT_STEPS,
    PodState,
    TargetPods,
    TargetVerdict,
    Verdict,
    judge,
    metrics_signal,
)
from tests.bot.domain.diagnosis_pages import GV, Page, T, window

UNAVAILABLE = "ResourceProxyTargetUnavailable"
NO_HEALTHY = "ResourceProxyNoHealthyPeers"
LABELS = {"target": T, "group_version": GV, "pod": "orders-0", "severity": "critical"}
DOWN = TargetPods((PodState("orders-0", False, "not Ready (ContainersNotReady)"),))
READY = TargetPods((PodState("orders-0", True, "Ready"),))


def test_target_down_gives_the_cause_and_step_not_the_alerts_guess() -> None:
    page = Page().peers(0, 1)
    d = diagnose_alert(UNAVAILABLE, LABELS, page.snapshot())
    v = judge(DOWN, metrics_signal(Readings(page.snapshot(), None, T)))
    one = judged(d, v)
    assert one.standing is Standing.STILL_BROKEN
    assert one.next_step == NEXT_STEPS[Verdict.TARGET_DOWN]
    assert "down" in one.cause
    assert "rolling restart" not in one.cause
    assert one.verdict is v


@pytest.mark.parametrize("changed", [False, True])
def test_a_healed_reading_beside_a_down_target_is_evidence_not_a_second_conclusion(changed: bool) -> None:
    before = Page().peers(2)
    after = before.copy()
    win = window(before, after) if changed else None
    d = diagnose_alert(NO_HEALTHY, LABELS, after.snapshot(), win)
    assert d.standing in (Standing.RECOVERING, Standing.RECOVERED)
    one = judged(d, judge(DOWN, metrics_signal(Readings(after.snapshot(), win, T))))
    assert one.standing is Standing.STILL_BROKEN
    assert "down" in one.now
    assert any("has not noticed the target is down yet" in e for e in one.now_evidence)
    assert "Nothing to do" not in one.next_step
    assert "Watch it resolve" not in one.next_step
    assert all("self-healed" not in e for e in one.now_evidence)
    assert [f for f in d.findings if f.severity is Severity.OK]  # the metrics alone said healthy
    assert [f for f in one.findings if f.severity is Severity.OK] == []


def test_a_healthy_verdict_never_says_nothing_to_do_beside_a_broken_alert() -> None:
    page = Page().peers(0, 2)
    d = diagnose_alert(NO_HEALTHY, LABELS, page.snapshot())
    healthy = judge(READY, metrics_signal(Readings(Page().peers().requests(5).snapshot(), None, T)))
    assert healthy.verdict is Verdict.HEALTHY
    one = judged(d, healthy)
    assert one.standing is Standing.STILL_BROKEN
    assert one.next_step == d.next_step
    assert "Nothing to do" not in one.next_step


def test_check_reason_keeps_a_broken_alerts_own_reading_of_the_reasons() -> None:
    d = diagnose_alert(NO_HEALTHY, LABELS, Page().peers(0, 2).snapshot())
    assert d.standing is Standing.STILL_BROKEN
    v = TargetVerdict(Verdict.CHECK_REASON, "503s", (), (), NEXT_STEPS[Verdict.CHECK_REASON])
    one = judged(d, v)
    assert (one.standing, one.cause, one.next_step) == (d.standing, d.cause, d.next_step)
    assert one.verdict is v


def test_check_reason_says_an_alert_that_looked_healed_is_not() -> None:
    page = Page().peers().requests(9, "upstream", "503")
    d = diagnose_alert(UNAVAILABLE, LABELS, page.snapshot(), window(Page().peers(), page))
    assert d.standing is Standing.RECOVERED  # its own reason (all_quarantined) stopped
    v = judge(READY, metrics_signal(Readings(page.snapshot(), None, T)))
    assert v.verdict is Verdict.CHECK_REASON
    one = judged(d, v)
    assert one.standing is Standing.STILL_BROKEN
    assert one.next_step == v.next_step
    assert any("the verdict's evidence has not" in e for e in one.now_evidence)


def test_an_unsynced_cache_beside_a_down_target_keeps_its_own_cause_and_adds_the_targets_step() -> None:
    page = Page().peers(1, synced=0)
    d = diagnose_alert("ResourceProxyPeerCacheUnsynced", LABELS, page.snapshot())
    assert d.standing is Standing.STILL_BROKEN
    one = judged(d, judge(DOWN, metrics_signal(Readings(page.snapshot(), None, T))))
    assert one.cause == d.cause  # the client's peer feed
    assert one.next_step.startswith(d.next_step)
    assert "The target is down as well: fix the target tenant cluster's control plane" in one.next_step
