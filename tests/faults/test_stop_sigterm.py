"""SIGTERM to `proxybot serve` while a real Alertmanager delivers a storm to it: it stops accepting at once
(503 with `Retry-After`, `/readyz` 503), lets its Slack calls in flight finish, exits 0 within 10 s, and a
restart on the same store and port ends up with everything delivered, Alertmanager retrying what was
refused. Slack answers in 0.3 s here, as it does under load, so calls are in flight when the signal comes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sim.ports import free_port
from sim.slack_api import FakeSlack
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import CLIENT, WEBHOOK_TOKEN, BotProcess, now, proxy_alert, rfc3339, summary_of
from tests.e2e.storm_load import SECONDARY_GV, storm_bodies, storm_target
from tests.faults.slack_faults import (
    FaultStore,
    assert_all_delivered_in_order,
    assert_never_crashed,
    duplicate_posts,
    metric,
)
from tests.harness.alertmanager import Alertmanager, Route
from tests.waiting import WaitTimeout, wait_until

pytestmark = pytest.mark.slow

TARGETS = 100
BATCHES = 10  # the storm reaches Alertmanager in batches, a quarter of a second apart
ROUTE = Route(group_by=("alertname", "cluster", "target"), group_wait="1s", group_interval="1s")
EXIT_WITHIN = 10.0


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def alertmanager(tmp_path: Path, port: int) -> Iterator[Alertmanager]:
    with Alertmanager(tmp_path, f"http://127.0.0.1:{port}/alertmanager", WEBHOOK_TOKEN, route=ROUTE) as am:
        yield am


def storm_alerts() -> list[dict[str, Any]]:
    """Two alerts per target (two group/versions), as Prometheus would push them."""
    starts = rfc3339(now())
    alerts = []
    for gv in ("example.com/v1", SECONDARY_GV):
        for i in range(TARGETS):
            labels = proxy_alert(target=storm_target(i), cluster=CLIENT, group_version=gv)
            alerts.append(
                {"labels": labels, "annotations": {"summary": summary_of(labels)}, "startsAt": starts}
            )
    return alerts


def push_until(am: Alertmanager, alerts: list[dict[str, Any]], store: FaultStore, accepted: int) -> int:
    """Push the storm's first alerts batch by batch until the bot has accepted `accepted` notifications;
    how many alerts were pushed."""
    size = TARGETS // BATCHES
    for n in range(BATCHES):
        am.post_alerts(alerts[n * size : (n + 1) * size])
        with contextlib.suppress(WaitTimeout):  # the storm's pace: the next batch follows 0.25 s later
            wait_until(
                lambda: store.notifications() >= accepted, 0.25, f"{accepted} notifications", interval=0.05
            )
            return (n + 1) * size
    wait_until(lambda: store.notifications() >= accepted, 30.0, f"{accepted} notifications accepted")
    return TARGETS


def refused_while_stopping(bot: BotProcess) -> tuple[httpx.Response, httpx.Response, float]:
    """A webhook and a readiness probe right after the signal, and the 503s counted so far."""
    headers = {"Authorization": f"Bearer {WEBHOOK_TOKEN}", "Content-Type": "application/json"}
    body = storm_bodies(1)[0]
    webhook = httpx.post(f"{bot.url}/alertmanager", content=body, headers=headers, timeout=5.0)
    ready = httpx.get(f"{bot.url}/readyz", timeout=5.0)
    return webhook, ready, metric(bot.url, "proxybot_notifications_refused_total", status="503")


def test_sigterm_mid_storm_stops_accepting_finishes_in_flight_and_loses_nothing(
    tmp_path: Path, bots: BotLauncher, slack: FakeSlack, alertmanager: Alertmanager, port: int
) -> None:
    slack.latency = 0.3
    store = FaultStore(tmp_path / "bot.db")
    bot = bots.start(port=port)
    alerts = storm_alerts()
    pushed = push_until(alertmanager, alerts, store, accepted=TARGETS // 2)

    assert bot.pid is not None
    signalled = time.monotonic()
    os.kill(bot.pid, signal.SIGTERM)
    webhook, ready, refused = refused_while_stopping(bot)
    alertmanager.post_alerts(alerts[pushed:])  # the storm goes on: Alertmanager must retry these
    wait_until(lambda: not bot.running, EXIT_WITHIN + 5, "proxybot serve to exit", interval=0.05)
    took = time.monotonic() - signalled
    code = bot.stop()  # it has exited: this only collects the status
    accepted_by_first = store.notifications()
    print(f"\nSIGTERM after {accepted_by_first} notifications accepted: exit {code} in {took:.1f} s")

    assert (webhook.status_code, webhook.headers.get("Retry-After")) == (503, "1")
    assert ready.status_code == 503
    assert refused >= 1
    assert code == 0
    assert took < EXIT_WITHIN
    assert "stopped by SIGTERM" in bot.log_text()
    assert store.in_doubt() == 0, "every Slack call in flight was finished, none cut off"
    assert accepted_by_first < 2 * TARGETS, "the signal came while the storm was still arriving"

    restarted = bots.start(port=port)
    targets = [storm_target(i) for i in range(TARGETS)]
    with contextlib.suppress(WaitTimeout):  # the assertions below say what is missing
        wait_until(lambda: store.drained() and _all_shown(slack, targets), 60.0, "everything delivered")
    assert store.drained(), (store.unprocessed(), store.outbox_pending())
    assert store.outbox_failed() == 0
    assert_all_delivered_in_order(slack, targets)
    assert duplicate_posts(slack, store) == 0
    assert_never_crashed(bot, restarted)


def _all_shown(slack: FakeSlack, targets: list[str]) -> bool:
    try:
        assert_all_delivered_in_order(slack, targets)
    except AssertionError:
        return False
    return True
