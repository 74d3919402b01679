"""Neutral message content: button references, alert groups, live reads."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.domain.findings import Severity
from bot.domain.messages import (
    ActionRef,
    AlertGroupView,
    AlertView,
    GroupStatus,
    LiveRead,
    group_id,
    valid_target,
)

NOW = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def test_action_ref_round_trips_and_drops_invalid_names() -> None:
    ref = ActionRef.for_group("prod-a", "shop/orders", '{}:{alertname="X"}')
    assert ActionRef.decode(ref.encode()) == ref
    assert ref.group == group_id('{}:{alertname="X"}')
    assert len(ref.group) == 16
    hostile = ActionRef.for_group("<!channel>", "shop/../secrets", "k")
    assert (hostile.cluster, hostile.target) == (None, None)


@pytest.mark.parametrize("name", ["shop/orders", "a/b", "p-1/n.2"])
def test_valid_targets(name: str) -> None:
    assert valid_target(name) == name


@pytest.mark.parametrize(
    "name", ["orders", "shop/orders/x", "Shop/orders", "/x", "a/%2e", "a/b?c", "", "a/b c"]
)
def test_invalid_targets(name: str) -> None:
    assert valid_target(name) is None


def _alert(name: str, target: str | None, severity: str = "warning") -> AlertView:
    labels = {"severity": severity} | ({"target": target} if target else {})
    return AlertView(name, GroupStatus.FIRING, NOW, labels)


def test_group_names_worst_first_and_single_target_reference() -> None:
    alerts = (_alert("B", "p/a"), _alert("A", "p/a"), _alert("C", "p/a", "critical"), _alert("A", "p/a"))
    view = AlertGroupView("k", GroupStatus.FIRING, alerts, NOW, LiveRead.read(NOW), "prod-a")
    assert view.names() == ["C", "A", "B"]
    assert view.severity is Severity.CRITICAL
    assert view.action_ref().target == "p/a"
    mixed = AlertGroupView("k", GroupStatus.FIRING, (*alerts, _alert("A", "p/b")), NOW, LiveRead(), "prod-a")
    assert mixed.action_ref().target is None


def test_alert_severity_falls_back_to_label_then_warning() -> None:
    assert _alert("X", None, "critical").severity is Severity.CRITICAL
    assert _alert("X", None, "page-me").severity is Severity.WARNING


def test_live_read_ok_only_when_read() -> None:
    assert LiveRead.read(NOW, "vc-0").ok
    assert not LiveRead.missing("timeout").ok
    assert not LiveRead().ok
