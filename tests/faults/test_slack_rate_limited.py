"""Slack answers 429 with `Retry-After` to every call for a while, during a storm: the bot makes no call of
a method before that method's Retry-After has passed (read from the fake's call log), then delivers all.

Compressed tenfold: `Retry-After: 30` for 2 minutes becomes `Retry-After: 3` for 12 s. The bot takes the
wait from the header whatever its value, so only the number changes: four Retry-Afters fit the window
either way, and every call the bot makes is checked against the last 429 of its method.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.slack_api import FakeSlack, SlackCall
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import CHANNEL
from tests.faults.slack_faults import (
    FaultStore,
    Storm,
    assert_all_delivered_in_order,
    assert_never_crashed,
    duplicate_posts,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

RETRY_AFTER = 3
WINDOW = 12.0
GROUPS = 100
METHODS = ("chat.postMessage", "chat.update")
# The fake stamps a call when it arrives, the bot starts its wait when the 429 has come back: its next call
# can only be later. This allows for the two clocks being read a moment apart.
CLOCK_SLACK = 0.02


def early_calls(calls: list[SlackCall], method: str) -> list[tuple[float, float]]:
    """(seconds after a 429, the call's own answer) for each call of `method` made within Retry-After."""
    early, limited_at = [], None
    for call in calls:
        if call.method != method:
            continue
        if limited_at is not None and call.at - limited_at < RETRY_AFTER - CLOCK_SLACK:
            early.append((call.at - limited_at, call.status or 0))
        if call.status == 429:
            limited_at = call.at
    return early


def test_nothing_is_sent_before_retry_after_and_then_everything_is(
    tmp_path: Path, bots: BotLauncher, slack: FakeSlack
) -> None:
    bot = bots.start()
    store = FaultStore(tmp_path / "bot.db")
    storm = Storm(GROUPS, seconds=4.0)
    with storm.load(bot.url) as load:
        load.started()
        wait_until(lambda: slack.top_level(CHANNEL), 10.0, "the storm's first message in Slack")
        for method in METHODS:
            slack.rate_limit(method, seconds=WINDOW, retry_after=RETRY_AFTER)
        storm.record(load.outcomes())
    assert {storm.status[i] for i in range(len(storm.bodies))} == {202}

    store.wait_drained(60.0)
    calls = list(slack.calls)
    limited = [c for c in calls if c.status == 429]
    print(f"\n{len(limited)} calls answered 429 (Retry-After {RETRY_AFTER} s for {WINDOW:g} s)")
    assert len(limited) >= WINDOW // RETRY_AFTER - 1, "the bot kept calling, once per Retry-After"
    for method in METHODS:
        assert early_calls(calls, method) == [], f"{method} called before its Retry-After"
    assert store.outbox_failed() == 0
    assert store.bodies() == storm.accepted_bodies()
    assert_all_delivered_in_order(slack, storm.target_names)
    assert duplicate_posts(slack, store) == 0
    assert bot.running
    assert_never_crashed(bot)
