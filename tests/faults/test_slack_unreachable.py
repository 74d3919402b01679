"""Slack unreachable during a 200-group storm: webhooks keep answering 202, `/readyz` stays 200, the outbox
depth and its oldest pending age show on `/metrics`, and afterwards everything reaches Slack in order.

How the "10 minutes" are compressed: Slack is gone for `OUTAGE` = 2 x 8 s, first unreachable (connections
refused, open ones reset: a TCP relay in front of the fake Slack is cut), then up but answering 503 (Slack's
own outage). What the length changes is how many tries each outbox row makes, doubling from 1 s to the
delivery worker's 120 s cap (`DeliveryPolicy.backoff_cap`, no config knob): about 9 tries in 10 min, 5 here,
and how long after Slack's return the last row waits, at most its last backoff (up to 120 s after 10 min,
up to 16 s here). The intake, readiness and metrics do not depend on the length at all; the backoff curve
and its cap are unit-tested (tests/bot/delivery/test_plan.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sim.server import SimServer
from sim.slack_api import FakeSlack
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import CHANNEL, BotProcess, write_bot_config
from tests.faults.slack_faults import (
    FaultStore,
    SlackGate,
    Storm,
    assert_all_delivered_in_order,
    assert_never_crashed,
    duplicate_posts,
    metric,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

PHASE = 8.0  # seconds unreachable, then seconds answering 503
GROUPS = 200
DELIVERY_TIMEOUT = 120.0  # ~30 s of paced thread replies (1 post/s per channel) plus the backoff tail
SLACK_METHODS = ("chat.postMessage", "chat.update")


@pytest.fixture
def gate(slack: FakeSlack) -> Iterator[SlackGate]:
    with SlackGate(slack) as relay:
        yield relay


@pytest.fixture
def bot(tmp_path: Path, sim: SimServer, gate: SlackGate) -> Iterator[BotProcess]:
    launcher = BotLauncher(write_bot_config(sim, tmp_path, gate.api_url), tmp_path)
    try:
        yield launcher.start()
    finally:
        launcher.close()


class Watch:
    """`/readyz` and the outbox gauges, sampled while Slack is down."""

    def __init__(self, bot: BotProcess) -> None:
        self.bot = bot
        self.ready: list[int] = []
        self.depth: list[float] = []
        self.oldest: list[float] = []

    def sample_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.ready.append(httpx.get(f"{self.bot.url}/readyz", timeout=5.0).status_code)
            self.depth.append(metric(self.bot.url, "proxybot_outbox_depth"))
            self.oldest.append(metric(self.bot.url, "proxybot_outbox_oldest_pending_age_seconds"))
            time.sleep(0.5)  # the sampling's pace: samples over a period, nothing awaited


def depth_at_rest(bot: BotProcess, store: FaultStore) -> tuple[float, int] | None:
    """(the depth gauge, the store's pending rows) when the store held the same count before and after the
    scrape, so both speak of one moment; None while rows are still being added or withdrawn."""
    before = store.pending()
    shown = metric(bot.url, "proxybot_outbox_depth")
    return (shown, before) if store.pending() == before else None


def test_slack_down_for_minutes_loses_nothing_and_the_bot_stays_ready(
    tmp_path: Path, bot: BotProcess, slack: FakeSlack, gate: SlackGate
) -> None:
    store = FaultStore(tmp_path / "bot.db")
    storm = Storm(GROUPS, seconds=8.0)  # most of it arrives while Slack is down
    watch = Watch(bot)
    with storm.load(bot.url) as load:
        load.started()
        wait_until(lambda: slack.top_level(CHANNEL), 10.0, "the storm's first message in Slack")
        gate.cut()
        watch.sample_for(PHASE)
        gate.restore()
        for method in SLACK_METHODS:
            slack.fail(method, status=503, retry_after=None, times=10**6)
        watch.sample_for(PHASE)
        storm.record(load.outcomes())
        shown, held = wait_until(lambda: depth_at_rest(bot, store), 30.0, "a moment the backlog is at rest")
    for method in SLACK_METHODS:
        slack.heal(method)
    tries = metric(bot.url, "proxybot_slack_calls_total", outcome="SlackTransient")

    assert {storm.status[i] for i in range(len(storm.bodies))} == {202}, "every webhook accepted"
    assert set(watch.ready) == {200}, "readiness never depends on Slack"
    # How many rows wait depends on how many groups the bot took in before storm mode folded the rest,
    # i.e. on the machine's speed; what must hold is that the gauge is the store's own backlog.
    assert shown == held >= 1, "the depth on /metrics is what the store holds undelivered"
    assert max(watch.depth) >= held
    assert watch.oldest[-1] >= 2 * PHASE - 3, "the oldest pending age grows through the outage"
    assert watch.oldest == sorted(watch.oldest), "nothing is delivered meanwhile"
    assert tries >= 2

    store.wait_drained(DELIVERY_TIMEOUT)
    assert store.outbox_failed() == 0
    assert store.bodies() == storm.accepted_bodies()
    assert_all_delivered_in_order(slack, storm.target_names)
    duplicates = duplicate_posts(slack, store)
    depth = max(watch.depth)
    print(f"\nSlack down {2 * PHASE:g} s: {tries:g} failed tries, depth {depth:g}, duplicates {duplicates}")
    assert duplicates == 0
    assert bot.running
    assert_never_crashed(bot)
