"""How often the delivery worker reads the store: the outbox not while every channel with rows is sending,
and a message's address once.

In a storm the worker is woken for every row enqueued and each read lists every pending row, and every
reply and edit of the storm read the summary's row, which holds every entry of the storm: both made a
storm's cost grow with the square of its size (bench/scale.py).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from bot.clients.slack import SlackClient
from bot.delivery.plan import DeliveryPolicy
from bot.delivery.worker import Delivery
from bot.render.blocks import Message, section
from bot.store import AlertGroupState, OutboxItem, Store, open_store
from config.settings import SlackSettings
from tests.fakes.slack_api import FakeSlack
from tests.waiting import eventually

TOKEN = "xoxb-test-token"
ALERTS, OTHER = "#alerts", "#other"
# Slack answers each call after this long: the channel's lane is sending all that time.
IN_FLIGHT = 2.0


class CountedReads:
    """The store, counting the delivery worker's reads of the outbox and of each group."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.reads = 0
        self.group_reads: Counter[tuple[str, str]] = Counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def due(self, now: float, limit: int = 50) -> list[OutboxItem]:
        self.reads += 1
        return await self._store.due(now, limit)

    async def get_group(self, channel: str, group_key: str) -> AlertGroupState | None:
        self.group_reads[(channel, group_key)] += 1
        return await self._store.get_group(channel, group_key)


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=TOKEN, channels={"C1": ALERTS, "C2": OTHER}) as slack:
        yield slack


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(f"sqlite:///{tmp_path / 'proxybot.db'}")
    yield opened
    await opened.close()


def slack_at(fake: FakeSlack) -> SlackClient:
    return SlackClient.from_settings(SlackSettings(bot_token=TOKEN, api_url=fake.api_url), timeout=10.0)


def msg(text: str) -> Message:
    return Message(text, (section(text),))


async def until_true(check: Any, limit: float = 10.0) -> None:
    await eventually(check, "the condition", timeout=limit, interval=0.01)


async def test_rows_for_a_channel_that_is_sending_are_read_once_it_is_free_and_others_at_once(
    fake: FakeSlack, store: Store
) -> None:
    counted = CountedReads(store)
    delivery = Delivery(cast(Store, counted), slack_at(fake), policy=DeliveryPolicy(posts_per_second=50))
    task = asyncio.create_task(delivery.run())
    try:
        await delivery.post(ALERTS, "grp", msg("firing"))
        fake.latency = IN_FLIGHT
        await until_true(lambda: fake.calls_to("chat.postMessage"))  # the post is in flight
        reads = counted.reads
        for n in range(20):
            await delivery.reply(ALERTS, "grp", msg(f"line {n}"), revision=f"n{n}")
        await asyncio.sleep(0.3)  # three dispatch gaps: time for reads, had any been wanted
        assert counted.reads == reads
        await delivery.post(OTHER, "grp2", msg("another channel"))
        await until_true(lambda: counted.reads > reads)  # a channel with no lane: read at once
        fake.latency = 0.0
        await until_true(lambda: len(fake.calls_to("chat.postMessage")) == 22, limit=30.0)
    finally:
        await delivery.stop()
        await task
    [top] = fake.top_level(ALERTS)
    assert [m.text for m in fake.thread(ALERTS, top.ts)] == [f"line {n}" for n in range(20)]
    assert [m.text for m in fake.top_level(OTHER)] == ["another channel"]


async def test_the_replies_and_edits_of_a_message_read_its_address_once(
    fake: FakeSlack, store: Store
) -> None:
    counted = CountedReads(store)
    policy = DeliveryPolicy(posts_per_second=50, edit_interval=0.0)
    delivery = Delivery(cast(Store, counted), slack_at(fake), policy=policy)
    task = asyncio.create_task(delivery.run())
    try:
        await delivery.post(ALERTS, "grp", msg("firing"))
        for n in range(5):
            await delivery.reply(ALERTS, "grp", msg(f"line {n}"), revision=f"r{n}")
            await delivery.update(ALERTS, "grp", msg(f"firing, {n + 1} lines"), revision=f"u{n}")
        await until_true(lambda: len(fake.calls_to("chat.postMessage")) == 6, limit=30.0)
        await until_true(lambda: fake.top_level(ALERTS)[0].text == "firing, 5 lines", limit=30.0)
    finally:
        await delivery.stop()
        await task
    [top] = fake.top_level(ALERTS)
    assert [m.text for m in fake.thread(ALERTS, top.ts)] == [f"line {n}" for n in range(5)]
    # Once before the post (is it in Slack already?), once for the address its answer stored.
    assert counted.group_reads[(ALERTS, "grp")] == 2
