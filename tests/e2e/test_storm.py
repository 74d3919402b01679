"""An alert storm through the running server: 1 000 alerts over 500 targets, as webhooks within ~2 s and
through a real Alertmanager.

Every webhook is answered 2xx, every notification is stored and processed, every group is counted in
one storm summary, and Slack sees a number of top-level messages and calls bounded by the channel, not
by the alerts. Through Alertmanager (`group_wait: 2s`) and Slack's pace, every target is named in Slack
(the summary, and the table of targets in its thread) in at most 5 posting calls. (Speed is measured by
bench/storm.py, not asserted here.)
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from bot.alerts.storm import StormPolicy
from sim.slack_api import FakeSlack
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import CHANNEL, WEBHOOK_TOKEN, StoreView, auth, text_of
from tests.e2e.storm_load import (
    SlackCoverage,
    by_method,
    fire,
    posting_calls,
    storm_alerts,
    storm_bodies,
    storm_target,
)
from tests.harness.alertmanager import Alertmanager, Route
from tests.waiting import wait_until

TARGETS = 500
ALERTS = 2 * TARGETS
STORM_TITLE = "🌩️ Alert storm"
# StormPolicy's default: this many groups are posted on their own before a storm starts.
POSTED_ALONE = 10
# Processing 1 000 notifications is slow today (see the report); this only bounds a hang.
PROCESSING_TIMEOUT = 100.0


def slack_calls(slack: FakeSlack) -> int:
    return sum(1 for call in slack.calls if call.method != "auth.test")


async def test_a_storm_is_accepted_whole_and_summarised_with_calls_bounded_by_channel(
    tmp_path: Path, bots: BotLauncher, slack: FakeSlack
) -> None:
    bot = bots.start()
    store = StoreView(tmp_path / "bot.db")

    webhooks, _ = await fire(bot.url, storm_bodies(TARGETS), seconds=2.0)

    assert len(webhooks) == ALERTS
    assert {sent.status for sent in webhooks} == {202}
    assert store.notifications() == ALERTS  # each one durable before its 202
    await asyncio.to_thread(
        wait_until, lambda: store.unprocessed() == 0, PROCESSING_TIMEOUT, "every notification to be processed"
    )

    entries = store.storm_entries()
    assert len(entries) == TARGETS  # every group is in the storm, the first ones too
    # Processed is not yet delivered: the summary waits for its slot at Slack's pace behind the first post.
    summarised = lambda: any(m.text.startswith(STORM_TITLE) for m in slack.top_level(CHANNEL))  # noqa: E731
    await asyncio.to_thread(wait_until, summarised, 30.0, "the storm summary in Slack")
    top = slack.top_level(CHANNEL)
    storms = [m for m in top if m.text.startswith(STORM_TITLE)]
    assert len(storms) == 1, [m.text for m in top]
    assert len(top) <= POSTED_ALONE + 1
    assert slack_calls(slack) < 100
    # The table waits for its summary's post however long the channel's queue is: nothing given up.
    assert store.outbox_failed() == 0
    # No per-target lines: the summary's thread holds the table of targets, no reply.
    assert slack.thread(CHANNEL, storms[0].ts) == []
    # The table follows once the storm's count stops changing (the summary may have gone before it).
    await asyncio.to_thread(wait_until, slack.shown_uploads, 30.0, "the storm's table in its thread")
    [table] = slack.shown_uploads()
    assert table["thread_ts"] == storms[0].ts


async def test_the_storm_summary_counts_later_alerts_of_the_groups_that_started_it(
    tmp_path: Path, bots: BotLauncher
) -> None:
    bot = bots.start()
    store = StoreView(tmp_path / "bot.db")
    targets = POSTED_ALONE + 2
    bodies = storm_bodies(targets)  # firsts (one alert each), then updates (two alerts each)
    async with httpx.AsyncClient(base_url=bot.url, headers=auth(), timeout=60.0) as client:
        for body in bodies:
            response = await client.post(
                "/alertmanager", content=body, headers={"Content-Type": "application/json"}
            )
            assert response.status_code == 202
    await asyncio.to_thread(
        wait_until, lambda: store.unprocessed() == 0, PROCESSING_TIMEOUT, "every notification to be processed"
    )
    entries = store.storm_entries()
    assert len(entries) == targets
    assert sum(len(alerts) for alerts in entries.values()) == 2 * targets


@pytest.mark.slow
async def test_through_alertmanager_every_target_is_named_in_slack_in_at_most_five_posting_calls(
    tmp_path: Path, bots: BotLauncher, slack: FakeSlack
) -> None:
    slack.limit_posts()  # Slack's pace: about 1 post a second per channel
    targets = [storm_target(i) for i in range(TARGETS)]
    coverage = SlackCoverage(slack, targets)
    bot = bots.start()
    store = StoreView(tmp_path / "bot.db")
    (tmp_path / "alertmanager").mkdir()
    route = Route(group_by=("alertname", "cluster", "target"), group_wait="2s", group_interval="5m")
    with Alertmanager(tmp_path / "alertmanager", f"{bot.url}/alertmanager", WEBHOOK_TOKEN, route=route) as am:
        am.post_alerts(storm_alerts(TARGETS))
        await asyncio.to_thread(
            wait_until, lambda: coverage.covered_at is not None, PROCESSING_TIMEOUT, "every target in Slack"
        )
        await asyncio.to_thread(
            wait_until, lambda: store.outbox_pending() == 0, PROCESSING_TIMEOUT, "the outbox to drain"
        )
    assert coverage.covered_at is not None
    made = posting_calls(slack.calls, coverage.covered_at)
    # Five when the batch is processed within the summary's first wait (StormPolicy.first_within_seconds):
    # the summary, the one group posted before the storm, the table's three upload steps. A batch a loaded
    # machine processes over longer is a trickle as far as the bot can tell, and a trickle's bar holds
    # (bench/edges.py: at most 8); which one applies is read from the store, not guessed.
    span = store.processing_span()
    bar = 8 if span > StormPolicy().first_within_seconds else 5
    assert len(made) <= bar, (by_method(made), f"the batch processed over {span:.2f} s")
    assert store.notifications() == TARGETS  # one notification per group, both alerts in it
    [summary] = [m for m in slack.top_level(CHANNEL) if m.text.startswith(STORM_TITLE)]
    assert f"{TARGETS} targets" in text_of(summary)
    [table] = slack.shown_uploads()
    assert table["thread_ts"] == summary.ts
    content = table["content"].decode()
    assert all(target in content for target in targets)
    assert slack.thread(CHANNEL, summary.ts) == []  # no per-target lines: the table is the thread
