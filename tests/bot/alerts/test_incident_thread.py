"""A member's details reply as Slack shows it: the real pipeline and the real delivery worker against the
fake Slack over HTTP, with a restart between storing the reply and posting it, and a post whose answer
Slack lost (the sender died, or timed out, after Slack made the reply)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.alerts.pipeline import AlertPipeline
from bot.delivery.worker import Delivery
from bot.domain.alerts import AlertmanagerWebhook
from bot.domain.parser import parse_syncer
from bot.store import Store, open_store
from tests.bot.alerts.test_incident import (
    CHANNEL,
    NO_HEALTHY,
    UNAVAILABLE,
    UNSYNCED,
    member_update,
    notify,
)
from tests.bot.delivery.test_worker import FAST, TOKEN, drained, running, slack_at
from tests.e2e.test_alertmanager_flow import full_text
from tests.fakes.alert_pipeline import PAGE, FakeLive, settings
from tests.fakes.slack_api import FakeSlack, Message

CHANNEL_ID = "C0ALPHA01"


class Skewed:
    """The wall clock, moved ahead by the test: a deferred details reply falls due without a real wait."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=TOKEN, channels={CHANNEL_ID: CHANNEL}) as slack:
        yield slack


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(f"sqlite:///{tmp_path / 'proxybot.db'}")
    yield opened
    await opened.close()


class Bot:
    """One process of the bot: the pipeline over an outbox, and (when it lives long enough) a sender."""

    def __init__(self, store: Store, fake: FakeSlack, clock: Skewed) -> None:
        self.store, self.clock, self.fake = store, clock, fake
        live = FakeLive()
        live.snapshot = parse_syncer(PAGE + UNSYNCED)
        outbox = self._delivery()
        self.pipeline = AlertPipeline(settings(), store, outbox, live, clock=clock)

    def _delivery(self) -> Delivery:
        return Delivery(self.store, slack_at(self.fake.api_url), policy=FAST, clock=self.clock)

    async def process(self, raw: bytes) -> None:
        await self.store.accept(raw, AlertmanagerWebhook.model_validate_json(raw), self.clock())
        await self.pipeline.restore()
        for notification in await self.store.pending():
            await self.pipeline.process(notification, settle=True)

    async def deliver(self) -> None:
        """Send everything queued, deferred details replies included."""
        self.clock.ahead += 10.0
        async with running(self._delivery()):
            await drained(self.store)


def member_replies(fake: FakeSlack, top: Message) -> list[Message]:
    return [m for m in fake.thread(CHANNEL, top.ts) if "Joined this incident" in full_text(m)]


async def test_a_members_one_details_reply_survives_a_restart_and_a_lost_answer(
    fake: FakeSlack, store: Store
) -> None:
    clock = Skewed()
    first = Bot(store, fake, clock)
    await first.process(notify(NO_HEALTHY, "a1"))
    await first.deliver()
    [top] = fake.top_level(CHANNEL)
    # The member joins; the process dies with its details reply stored, not posted.
    await first.process(member_update("b1"))
    assert member_replies(fake, top) == []
    # Restarted, its first post of the reply times out after Slack made it: found in the thread, kept.
    second = Bot(store, fake, clock)
    fake.lose_answers("chat.postMessage", hold=4.0)
    await second.deliver()
    [reply] = member_replies(fake, top)
    assert f"FIRING: {UNAVAILABLE}" in full_text(reply)
    assert fake.calls_to("conversations.replies")  # looked for in the thread before it was sent again
    # Its updates edit that reply in place; its resolve turns its header resolved.
    await second.process(member_update("b1", "b2"))
    await second.deliver()
    await second.process(member_update("b1", "b2", resolved=("b1", "b2")))
    await second.deliver()
    [reply] = member_replies(fake, top)
    assert f"*Details:* ✅ RESOLVED: {UNAVAILABLE}" in full_text(reply)
    assert len(reply.versions) >= 1  # edited, not posted again
    # In the thread: the first group's details, the member's, and one reply for the alert it added.
    thread = fake.thread(CHANNEL, top.ts)
    assert len(thread) == 3
    assert sum("New: " in full_text(m) for m in thread) == 1
    assert [m.ts for m in fake.top_level(CHANNEL)] == [top.ts]
