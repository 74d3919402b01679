"""A post whose answer was lost is found in Slack by its metadata, not posted twice (both store backends)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.delivery.worker import Delivery
from bot.store import OutboxState, Store, open_store
from sim.slack_workspace import MANIFEST_SCOPES
from tests.bot.delivery.test_worker import ALERTS, FAST, TOKEN, drained, msg, running, slack_at
from tests.fakes import postgres
from tests.fakes.slack_api import FakeSlack
from tests.waiting import eventually

postgres_server = postgres.postgres_server
ALERTS_ID = "C0ALERTS0"  # Slack's ID of #alerts
BY_ID = "C0ALERTS1"  # a channel configured by its ID
HISTORY = frozenset({"channels:history", "groups:history"})


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=TOKEN, channels={ALERTS_ID: ALERTS, BY_ID: "#by-id"}) as slack:
        yield slack


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'proxybot.db'}"
    else:
        server: postgres.PostgresServer = request.getfixturevalue("postgres_server")
        url = await server.new_database()
    opened = await open_store(url)
    yield opened
    await opened.close()


async def test_a_post_whose_answer_was_lost_is_adopted_not_posted_again(
    fake: FakeSlack, store: Store
) -> None:
    # A fresh sender (another replica, or this one restarted) knows the channel's ID only from the store.
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "earlier", msg("an earlier alert"))
        await drained(store)
    fake.lose_answers("chat.postMessage", hold=4.0)  # the client gives up after 2 s: a timeout
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", msg("firing"))
        await drained(store)
        await delivery.update(ALERTS, "grp", msg("resolved"), revision="n2")
        await drained(store)
    _, top = fake.top_level(ALERTS)
    # Adopted, then edited to the row's content (it may have changed since the lost try), then resolved.
    assert (top.text, [v["text"] for v in top.versions]) == ("resolved", ["firing", "firing"])
    assert top.metadata is not None
    assert top.metadata["event_type"] == "proxybot_message"
    assert len(fake.calls_to("chat.postMessage")) == 2
    [looked] = fake.calls_to("conversations.history")
    assert looked.params["channel"] == ALERTS_ID
    item = await store.outbox_item(f"post:{ALERTS}:grp")
    assert item is not None
    assert item.state is OutboxState.DONE
    assert item.result is not None
    assert (item.result["ts"], item.result.get("adopted")) == (top.ts, True)
    group = await store.get_group(ALERTS, "grp")
    assert group is not None
    assert (group.ts, group.channel_id) == (top.ts, ALERTS_ID)


async def test_content_newer_than_the_lost_try_reaches_the_adopted_message(
    fake: FakeSlack, store: Store
) -> None:
    fake.lose_answers("chat.postMessage", hold=4.0)
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(BY_ID, "grp", msg("firing"))
        await until_marked(store, f"post:{BY_ID}:grp")
        await delivery.post(BY_ID, "grp", msg("resolved"))  # replaces the pending post's content
        await drained(store)
    [top] = fake.top_level(BY_ID)
    assert top.text == "resolved"


async def until_marked(store: Store, key: str) -> None:
    async def marked() -> bool:
        item = await store.outbox_item(key)
        return item is not None and item.sent_at is not None

    await eventually(marked, f"{key} marked in flight", timeout=10)


async def test_the_first_post_to_a_channel_named_by_name_is_at_least_once_and_says_so(
    fake: FakeSlack, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    # Slack's history wants the channel's ID, which only a post's answer teaches (without extra scopes).
    fake.lose_answers("chat.postMessage", hold=4.0)
    with caplog.at_level(logging.WARNING, logger="bot.delivery.send"):
        async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
            await delivery.post(ALERTS, "grp", msg("firing"))
            await drained(store)
    assert len(fake.top_level(ALERTS)) == 2
    assert any("configure the channel by ID" in r.getMessage() for r in caplog.records)


async def test_a_channel_configured_by_id_is_exactly_once_from_the_first_post(
    fake: FakeSlack, store: Store
) -> None:
    fake.lose_answers("chat.postMessage", hold=4.0)
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(BY_ID, "grp", msg("firing"))
        await drained(store)
    assert len(fake.top_level(BY_ID)) == 1


async def test_a_reply_whose_answer_was_lost_is_adopted_from_the_thread(
    fake: FakeSlack, store: Store
) -> None:
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", msg("firing"))
        await drained(store)
        fake.lose_answers("chat.postMessage", hold=4.0)
        await delivery.reply(ALERTS, "grp", msg("still firing"), revision="n2")
        await drained(store)
    [top] = fake.top_level(ALERTS)
    assert [m.text for m in fake.thread(ALERTS, top.ts)] == ["still firing"]
    [looked] = fake.calls_to("conversations.replies")
    assert looked.params["ts"] == top.ts


async def test_a_post_slack_refused_is_sent_again_without_looking(fake: FakeSlack, store: Store) -> None:
    fake.fail("chat.postMessage", status=429, retry_after=0)  # Slack answered: no message was made
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", msg("firing"))
        await drained(store)
    assert len(fake.top_level(ALERTS)) == 1
    assert fake.calls_to("conversations.history") == []


async def test_without_the_history_scopes_it_is_at_least_once_and_says_so(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeSlack(bot_token=TOKEN, channels={BY_ID: "#by-id"}, scopes=MANIFEST_SCOPES - HISTORY) as fake:
        fake.lose_answers("chat.postMessage", hold=4.0)
        with caplog.at_level(logging.WARNING, logger="bot.delivery.send"):
            async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
                await delivery.post(BY_ID, "grp", msg("firing"))
                await drained(store)
        # The first try's message is in Slack and the retry could not look for it: two messages.
        assert len(fake.top_level(BY_ID)) == 2
    [warning] = [r for r in caplog.records if "refused reading the history" in r.getMessage()]
    assert "missing_scope" in warning.getMessage()
    assert "channels:history" in warning.getMessage()
