"""The delivery worker end to end against the fake Slack over HTTP (planning: `test_plan.py`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from bot.clients.slack import Posted, SlackClient
from bot.delivery.keys import post_key
from bot.delivery.plan import DeliveryPolicy
from bot.delivery.worker import Delivery
from bot.domain.alerts import AlertStatus
from bot.domain.messages import LiveRead
from bot.domain.silences import Matcher, Silence
from bot.render.alert_message import alert_group_message
from bot.render.blocks import Button, Message, actions, section
from bot.render.slack import ACTION_PROBE, ACTION_SILENCE, ACTIONS_BLOCK_ID
from bot.store import AlertGroupState, OutboxItem, OutboxState, Store, open_store
from bot.store.models import GroupFacts, Withdrawal
from config.settings import SlackSettings
from tests.fakes import alert_views as views
from tests.fakes.slack_api import FakeSlack
from tests.waiting import eventually

FOLDED, OUT, UNQUEUED = Withdrawal.FOLDED, Withdrawal.OUT, Withdrawal.UNQUEUED
TOKEN = "xoxb-test-token"
# Channels are configured by name, as operators write them; Slack's ID for it is C1.
ALERTS = "#alerts"
# A channel configured by its ID.
ALERTS_ID = "C0ALERTS1"
FAST = DeliveryPolicy(
    posts_per_second=50, backoff_base=0.05, backoff_cap=0.2, wait_for_post=0.05, edit_interval=0.0
)

# -- the worker against the fake Slack (real HTTP, real time) ---------------------------------------------


def slack_at(api_url: str, token: str = TOKEN) -> SlackClient:
    return SlackClient.from_settings(SlackSettings(bot_token=token, api_url=api_url), timeout=2.0)


@asynccontextmanager
async def running(delivery: Delivery) -> AsyncIterator[Delivery]:
    task = asyncio.create_task(delivery.run())
    try:
        yield delivery
    finally:
        await delivery.stop()
        await task


async def until(check: Callable[[], Awaitable[bool]], limit: float = 10.0) -> None:
    """`check` holding, waited for with the one helper: fails naming it if it never does."""
    await eventually(check, "the outbox to drain", timeout=limit)


async def drained(store: Store) -> None:
    async def empty() -> bool:
        return await store.depth() == 0

    await until(empty)


class FakeTime:
    """A wall clock that moves only when a test moves it."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def msg(text: str) -> Message:
    return Message(text, (section(text),))


async def test_post_then_edit_then_reply_is_one_message(fake: FakeSlack, store: Store) -> None:
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", msg("firing"))
        await drained(store)
        await delivery.update(ALERTS, "grp", msg("resolved"), revision="n2")
        await delivery.reply(ALERTS, "grp", msg("resolved after 12 min"), revision="n2")
        await drained(store)
    [top] = fake.top_level()
    assert (top.text, [v["text"] for v in top.versions]) == ("resolved", ["firing"])
    assert [m.text for m in fake.thread(ALERTS, top.ts)] == ["resolved after 12 min"]
    group = await store.get_group(ALERTS, "grp")
    assert group is not None
    assert group.ts == top.ts


async def test_the_details_reply_is_posted_once_and_edited_in_place(fake: FakeSlack, store: Store) -> None:
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", msg("firing"))
        await delivery.reply_in_place(ALERTS, "grp", msg("details 1"), reply="details", revision="n1")
        await drained(store)
        for n in (2, 3):
            await delivery.update(ALERTS, "grp", msg(f"firing {n}"), revision=f"n{n}")
            await delivery.reply_in_place(
                ALERTS, "grp", msg(f"details {n}"), reply="details", revision=f"n{n}"
            )
            await delivery.reply_in_place(ALERTS, "grp", msg("again"), reply="details", revision=f"n{n}")
            await drained(store)
    [top] = fake.top_level()
    [details] = fake.thread(ALERTS, top.ts)
    assert (details.text, [v["text"] for v in details.versions]) == ("details 3", ["details 1", "details 2"])
    assert len(fake.calls_to("chat.postMessage")) == 2  # the message and its one reply


async def test_edits_of_a_details_reply_still_queued_go_out_with_it(fake: FakeSlack, store: Store) -> None:
    delivery = Delivery(store, slack_at(fake.api_url), policy=FAST)
    await delivery.post(ALERTS, "grp", msg("firing"))
    await delivery.reply_in_place(ALERTS, "grp", msg("details 1"), reply="details", revision="n1")
    await delivery.reply_in_place(ALERTS, "grp", msg("details 2"), reply="details", revision="n2")
    async with running(delivery):
        await drained(store)
    [top] = fake.top_level()
    [details] = fake.thread(ALERTS, top.ts)
    assert (details.text, details.versions) == ("details 2", [])
    assert fake.calls_to("chat.update") == []


async def test_chart_is_uploaded_into_the_thread(fake: FakeSlack, store: Store) -> None:
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", msg("firing"))
        await delivery.upload_png(ALERTS, "grp", b"\x89PNG-1", filename="c.png", title="p99", revision="n1")
        await drained(store)
    [top] = fake.top_level()
    [upload] = fake.uploads
    assert (upload["content"], upload["thread_ts"], upload["title"]) == (b"\x89PNG-1", top.ts, "p99")


async def test_429_pauses_the_channel_for_retry_after_then_delivers(fake: FakeSlack, store: Store) -> None:
    fake.fail("chat.postMessage", status=429, retry_after=1)
    delivery = Delivery(store, slack_at(fake.api_url), policy=FAST)
    await delivery.post(ALERTS, "grp", msg("firing"))
    await delivery.post(ALERTS, "other", msg("also firing"))
    await delivery.post("#other", "elsewhere", msg("another channel"))
    async with running(delivery):
        await drained(store)
    first, *rest = [c for c in fake.calls_to("chat.postMessage") if c.params["channel"] == ALERTS]
    # Nothing goes to the limited channel before Retry-After has passed, not even another group's post.
    assert [c.at - first.at >= 0.9 for c in rest] == [True, True]
    assert sorted(m.text for m in fake.top_level(ALERTS)) == ["also firing", "firing"]
    [other] = [c for c in fake.calls_to("chat.postMessage") if c.params["channel"] == "#other"]
    assert other.at - first.at < 0.9


async def test_5xx_retries_with_backoff_and_delivers(fake: FakeSlack, store: Store) -> None:
    fake.fail("chat.postMessage", status=500, retry_after=None, times=2)
    fake.fail("chat.update", status=503, retry_after=None, times=2)
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", msg("firing"))
        await drained(store)
        await delivery.update(ALERTS, "grp", msg("recovering"), revision="n2")
        await drained(store)
    assert len(fake.calls_to("chat.postMessage")) == 3
    assert len(fake.calls_to("chat.update")) == 3
    [top] = fake.top_level()
    assert top.text == "recovering"
    posted = await store.outbox_item(post_key(ALERTS, "grp"))
    assert posted is not None
    assert posted.state is OutboxState.DONE
    assert posted.attempts == 2


async def test_bad_token_keeps_everything_pending(fake: FakeSlack, store: Store) -> None:
    policy = DeliveryPolicy(posts_per_second=50, backoff_cap=30.0)
    async with running(Delivery(store, slack_at(fake.api_url, "xoxb-wrong"), policy=policy)) as delivery:
        await delivery.post(ALERTS, "grp", msg("firing"))
        await delivery.post(ALERTS, "other", msg("firing too"))

        async def refused() -> bool:
            item = await store.outbox_item(post_key(ALERTS, "grp"))
            return item is not None and item.attempts > 0

        await until(refused)
        await asyncio.sleep(0.2)  # room for a wrong second call to show up
    item = await store.outbox_item(post_key(ALERTS, "grp"))
    assert item is not None
    assert item.state is OutboxState.PENDING
    assert "invalid_auth" in (item.last_error or "")
    # The channel pauses: the second post is not hammered against the same refusal.
    assert len(fake.calls_to("chat.postMessage")) == 1
    assert await store.depth() == 2


async def test_due_edits_of_one_message_become_one_chat_update(fake: FakeSlack, store: Store) -> None:
    delivery = Delivery(store, slack_at(fake.api_url), policy=FAST)
    async with running(delivery):
        await delivery.post(ALERTS, "grp", msg("firing"))
        await drained(store)
    for n in range(5):
        await delivery.update(ALERTS, "grp", msg(f"edit {n}"), revision=f"n{n}")
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)):
        await drained(store)
    [call] = fake.calls_to("chat.update")
    assert call.params["text"] == "edit 4"
    older = await store.outbox_item(f"update:{ALERTS}:grp:n0")
    assert older is not None
    assert older.state is OutboxState.DONE
    assert older.result == {"superseded_by": (await _id(store, f"update:{ALERTS}:grp:n4"))}


async def test_a_show_again_edit_sends_the_newest_content_when_it_goes_out(
    fake: FakeSlack, store: Store
) -> None:
    delivery = Delivery(store, slack_at(fake.api_url), policy=FAST)
    async with running(delivery):
        await delivery.post(ALERTS, "grp", msg("firing"))
        await drained(store)
    await delivery.show_again(ALERTS, "grp", "ack:U1:1")  # queued first, sent after the content edit
    await delivery.update(ALERTS, "grp", msg("2 alerts firing"), revision="n2")
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)):
        await drained(store)
    [top] = fake.top_level()
    assert top.text == "2 alerts firing"
    await delivery.show_again(ALERTS, "grp", "ack:U1:2")
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)):
        await drained(store)
    assert [c.params["text"] for c in fake.calls_to("chat.update")][-1] == "2 alerts firing"
    assert top.text == "2 alerts firing", "shown again: the newest content, not the post's"


async def test_a_show_again_edit_with_no_content_kept_is_completed_without_a_call(
    fake: FakeSlack, store: Store
) -> None:
    delivery = Delivery(store, slack_at(fake.api_url), policy=FAST)
    async with running(delivery):
        await delivery.post(ALERTS, "grp", msg("firing"))
        await drained(store)
    assert await store.prune(before=float("inf")) > 0  # the post's row is gone (pruned), its ts kept
    edits = len(fake.calls_to("chat.update"))
    await delivery.show_again(ALERTS, "grp", "ack:U1:1")
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)):
        await drained(store)
    assert len(fake.calls_to("chat.update")) == edits
    done = await store.outbox_item(f"show:{ALERTS}:grp:ack:U1:1")
    assert done is not None
    assert done.state is OutboxState.DONE
    assert done.result == {"skipped": "no content of the message is kept to show again"}


async def _id(store: Store, key: str) -> int:
    item = await store.outbox_item(key)
    assert item is not None
    return item.id


async def test_posts_are_paced_per_channel_and_channels_run_concurrently(
    fake: FakeSlack, store: Store
) -> None:
    policy = DeliveryPolicy(posts_per_second=20)
    delivery = Delivery(store, slack_at(fake.api_url), policy=policy)
    for n in range(10):
        await delivery.post("#ca", f"a{n}", msg(f"a{n}"))
    await delivery.post("#cb", "b0", msg("b0"))
    async with running(delivery):
        await drained(store)
    calls = fake.calls_to("chat.postMessage")
    in_a = [c.at for c in calls if c.params["channel"] == "#ca"]
    # Ten posts at 20/s take at least nine intervals (0.45 s); measured where they arrive, with slack
    # for the network between the worker's clock and the server's.
    assert len(in_a) == 10
    assert in_a[-1] - in_a[0] >= 0.4
    # CB does not queue behind CA's ten posts.
    [b_at] = [c.at for c in calls if c.params["channel"] == "#cb"]
    assert b_at < in_a[-1]


async def test_a_post_for_a_group_already_in_slack_becomes_an_edit(fake: FakeSlack, store: Store) -> None:
    slack = slack_at(fake.api_url)
    posted = await slack.post(ALERTS, msg("posted before the crash"))
    state = AlertGroupState(ALERTS, "grp", AlertStatus.FIRING, ts=posted.ts, channel_id=posted.channel_id)
    await store.save_group(state)
    async with running(Delivery(store, slack, policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", msg("re-run after restart"))
        await drained(store)
    [top] = fake.top_level()
    assert (top.ts, top.text) == (posted.ts, "re-run after restart")


async def test_restart_delivers_what_was_pending_once(fake: FakeSlack, db_url: str) -> None:
    store = await open_store(db_url)
    first = Delivery(store, slack_at(fake.api_url), policy=FAST)
    async with running(first):
        await first.post(ALERTS, "a", msg("a firing"))
        await drained(store)
    for group in ("a", "b", "c"):
        await first.post(ALERTS, group, msg(f"{group} firing"))
        await first.update(ALERTS, group, msg(f"{group} resolved"), revision="r")
        await first.reply(ALERTS, group, msg(f"{group} resolved after 1 min"), revision="r")
    # Slack unreachable: the second worker only collects failed tries before it is stopped.
    async with running(Delivery(store, slack_at("http://127.0.0.1:9/api/"), policy=FAST)):
        await until(_tried(store, post_key(ALERTS, "b")))
    assert await store.depth() > 0
    await store.close()

    reopened = await open_store(db_url)
    try:
        async with running(Delivery(reopened, slack_at(fake.api_url), policy=FAST)):
            await drained(reopened)
    finally:
        await reopened.close()
    tops = fake.top_level(ALERTS)
    assert sorted(m.text for m in tops) == ["a resolved", "b resolved", "c resolved"]
    for top in tops:
        group = top.text.split()[0]
        assert [m.text for m in fake.thread(ALERTS, top.ts)] == [f"{group} resolved after 1 min"]


def _tried(store: Store, key: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        item = await store.outbox_item(key)
        return item is not None and item.attempts > 0

    return check


async def test_an_edit_of_a_message_never_posted_gives_up_eventually(fake: FakeSlack, store: Store) -> None:
    policy = DeliveryPolicy(wait_for_post=0.01, orphan_attempts=3, edit_interval=0.0)
    async with running(Delivery(store, slack_at(fake.api_url), policy=policy)) as delivery:
        await delivery.update(ALERTS, "ghost", msg("edit"), revision="n1")
        await drained(store)
    item = await store.outbox_item(f"update:{ALERTS}:ghost:n1")
    assert item is not None
    assert item.state is OutboxState.FAILED
    assert item.attempts == 3
    assert fake.calls == []


async def test_a_reply_waits_for_its_queued_post_however_many_looks_it_takes(
    fake: FakeSlack, store: Store
) -> None:
    fake.fail("chat.postMessage", status=500, retry_after=None, times=4)
    policy = DeliveryPolicy(
        posts_per_second=50,
        backoff_base=0.05,
        backoff_cap=0.1,
        wait_for_post=0.01,
        orphan_attempts=2,
        edit_interval=0.0,
        dispatch_gap=0.0,
    )
    delivery = Delivery(store, slack_at(fake.api_url), policy=policy)
    # Enqueued before its post, as a storm's first thread lines can be; the post keeps failing a while.
    await delivery.reply(ALERTS, "grp", msg("line"), revision="r1")
    await delivery.post(ALERTS, "grp", msg("summary"))
    async with running(delivery):
        await drained(store)
    reply = await store.outbox_item(f"reply:{ALERTS}:grp:r1")
    assert reply is not None
    assert reply.state is OutboxState.DONE
    assert reply.attempts >= policy.orphan_attempts  # it looked often enough to have given up before
    [top] = fake.top_level()
    assert [m.text for m in fake.thread(ALERTS, top.ts)] == ["line"]


async def test_a_post_folded_into_a_storm_is_not_sent_and_neither_are_its_replies(
    fake: FakeSlack, store: Store
) -> None:
    delivery = Delivery(store, slack_at(fake.api_url), policy=FAST)
    queued = await delivery.post(ALERTS, "grp", msg("firing"))
    await delivery.reply(ALERTS, "grp", msg("new alert"), revision="n2")
    assert await delivery.withdraw_post(ALERTS, "grp", folded_into="storm:alerts:1") is FOLDED
    async with running(delivery):
        await drained(store)
    assert fake.calls_to("chat.postMessage") == []
    post = await store.outbox_item(f"post:{ALERTS}:grp")
    assert post is not None
    assert (post.id, post.state, post.result) == (
        queued.id,
        OutboxState.DONE,
        {"folded_into": "storm:alerts:1"},
    )
    # Nothing of its thread can go out either: withdrawn with it, not an error to look at.
    reply = await store.outbox_item(f"reply:{ALERTS}:grp:n2")
    assert reply is not None
    assert (reply.state, reply.result) == (OutboxState.DONE, {"folded_into": "storm:alerts:1"})


async def test_withdrawing_again_for_the_same_storm_answers_the_same(fake: FakeSlack, store: Store) -> None:
    # A storm restored after a kill finishes the folds it began: the second ask must not read as "went out".
    delivery = Delivery(store, slack_at(fake.api_url), policy=FAST)
    await delivery.post(ALERTS, "grp", msg("firing"))
    assert await delivery.withdraw_post(ALERTS, "grp", folded_into="storm:alerts:1") is FOLDED
    assert await delivery.withdraw_post(ALERTS, "grp", folded_into="storm:alerts:1") is FOLDED
    assert await delivery.withdraw_post(ALERTS, "grp", folded_into="storm:alerts:2") is OUT


async def test_a_reply_queued_after_its_post_was_folded_is_completed_quietly(
    fake: FakeSlack, store: Store
) -> None:
    delivery = Delivery(store, slack_at(fake.api_url), policy=FAST)
    await delivery.post(ALERTS, "grp", msg("firing"))
    assert await delivery.withdraw_post(ALERTS, "grp", folded_into="storm:alerts:1") is FOLDED
    await delivery.reply(ALERTS, "grp", msg("later"), revision="n3")
    async with running(delivery):
        await drained(store)
    assert fake.calls_to("chat.postMessage") == []
    reply = await store.outbox_item(f"reply:{ALERTS}:grp:n3")
    assert reply is not None
    assert reply.state is OutboxState.DONE
    assert reply.result is not None
    assert "folded_into" in reply.result["folded"]


async def test_a_post_marked_in_flight_cannot_be_withdrawn(fake: FakeSlack, store: Store) -> None:
    delivery = Delivery(store, slack_at(fake.api_url), policy=FAST)
    await delivery.post(ALERTS, "grp", msg("firing"))
    item = await store.outbox_item(post_key(ALERTS, "grp"))
    assert item is not None
    assert await store.mark_sending(
        item.id, 1000.0
    )  # a sender started its chat.postMessage: Slack may have it
    assert await delivery.withdraw_post(ALERTS, "grp", folded_into="storm:alerts:1") is OUT
    still = await store.outbox_item(post_key(ALERTS, "grp"))
    assert still is not None
    assert still.state is OutboxState.PENDING


async def test_a_post_that_went_out_cannot_be_withdrawn(fake: FakeSlack, store: Store) -> None:
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", msg("firing"))
        await drained(store)
        assert await delivery.withdraw_post(ALERTS, "grp", folded_into="storm:alerts:1") is OUT
        assert await delivery.withdraw_post(ALERTS, "never-queued", folded_into="s:1") is UNQUEUED
    assert [m.text for m in fake.top_level(ALERTS)] == ["firing"]


async def test_a_reply_waits_until_due_and_takes_new_content_while_pending(
    fake: FakeSlack, store: Store
) -> None:
    clock = FakeTime(1000.0)
    delivery = Delivery(store, slack_at(fake.api_url), policy=FAST, clock=clock)
    first = await delivery.reply(ALERTS, "storm", msg("line 1"), "lines:0", not_before=1002.0)
    again = await delivery.reply(
        ALERTS, "storm", msg("line 1\nline 2"), "lines:0", not_before=1002.0, replace_pending=True
    )
    assert (again.id, again.replaced) == (first.id, True)
    assert await store.due(1001.0) == []
    [due] = await store.due(1002.0)
    assert (due.key, due.payload["text"]) == (f"reply:{ALERTS}:storm:lines:0", "line 1\nline 2")
    kept = await delivery.reply(ALERTS, "storm", msg("line 3"), "lines:0")  # no replace: a duplicate
    assert (kept.id, kept.duplicate, kept.replaced) == (first.id, True, False)


class SlowDue:
    """The store, with the outbox read that lists a row in flight held until the test releases it: a
    slow read (a busy PostgreSQL) during which the lane sending that row finishes."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def due(self, now: float, limit: int = 50) -> list[OutboxItem]:
        items = await self._store.due(now, limit)
        if not self.release.is_set() and any(i.sent_at is not None for i in items):
            self.holding.set()
            await self.release.wait()
        return items


async def test_a_row_sent_while_the_outbox_was_read_is_not_sent_again(fake: FakeSlack, store: Store) -> None:
    slow = SlowDue(store)
    async with running(Delivery(cast(Store, slow), slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", msg("firing"))
        await drained(store)
        fake.latency = 0.3  # the reply's chat.postMessage is in flight for a while
        queued = await delivery.reply(ALERTS, "grp", msg("a line"), revision="n2")

        async def marked() -> bool:
            item = await store.outbox_item(f"reply:{ALERTS}:grp:n2")
            return item is not None and item.sent_at is not None

        await until(marked)
        # A row for another channel: a read of the outbox while the reply is in flight ...
        await delivery.post("#other", "grp-b", msg("elsewhere"))
        await slow.holding.wait()

        async def reply_done() -> bool:
            item = await store.outbox_item(f"reply:{ALERTS}:grp:n2")
            return item is not None and item.state is OutboxState.DONE

        await until(reply_done)  # ... that returns only after the lane sent the reply and closed its row
        slow.release.set()
        await asyncio.sleep(0.3)  # time for a stale second send to show
        await drained(store)
    [top] = fake.top_level(ALERTS)
    assert [m.text for m in fake.thread(ALERTS, top.ts)] == ["a line"]
    assert [m.text for m in fake.top_level("#other")] == ["elsewhere"]
    replies = [c for c in fake.calls_to("chat.postMessage") if c.params.get("thread_ts")]
    assert len(replies) == 1
    assert fake.calls_to("conversations.replies") == []  # not even looked for: it was not sent again
    item = await store.outbox_item(f"reply:{ALERTS}:grp:n2")
    assert item is not None
    assert (item.id, item.state) == (queued.id, OutboxState.DONE)


# -- channel IDs: Slack takes a #name only in chat.postMessage --------------------------------------------


async def test_edits_replies_and_uploads_use_the_id_slack_answered(fake: FakeSlack, store: Store) -> None:
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", msg("firing"))
        await drained(store)
        await delivery.update(ALERTS, "grp", msg("resolved"), revision="n2")
        await delivery.reply(ALERTS, "grp", msg("resolved after 12 min"), revision="n2")
        await delivery.upload_png(ALERTS, "grp", b"\x89PNG-1", filename="c.png", title="p99", revision="n2")
        await drained(store)
    [edit] = fake.calls_to("chat.update")
    assert edit.params["channel"] == "C1"
    [_, reply] = fake.calls_to("chat.postMessage")
    assert reply.params["channel"] == "C1"
    [upload] = fake.uploads
    assert upload["channel_id"] == "C1"
    group = await store.get_group(ALERTS, "grp")
    assert group is not None
    assert group.channel_id == "C1"


async def stored_without_channel_id(fake: FakeSlack, store: Store, channel: str) -> Posted:
    """A message in Slack whose group row, as an older proxybot stored it, has its `ts` but no channel ID."""
    posted = await slack_at(fake.api_url).post(channel, msg("posted by an older proxybot"))
    await store.save_group(AlertGroupState(channel, "old", AlertStatus.FIRING, ts=posted.ts))
    return posted


async def test_a_message_stored_without_its_channel_id_edits_once_a_post_teaches_it(
    fake: FakeSlack, store: Store
) -> None:
    # Stored by a proxybot that kept only the ts (and Slack then refused every edit by name).
    legacy = await stored_without_channel_id(fake, store, ALERTS)
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.update(ALERTS, "old", msg("old resolved"), revision="n2")

        async def waited() -> bool:
            item = await store.outbox_item(f"update:{ALERTS}:old:n2")
            return item is not None and item.attempts > 0

        await until(waited)
        assert fake.calls_to("chat.update") == []  # never sent by name
        await delivery.post(ALERTS, "new", msg("a new alert"))
        await drained(store)
    [edit] = fake.calls_to("chat.update")
    assert edit.params["channel"] == "C1"
    assert next(m for m in fake.top_level(ALERTS) if m.ts == legacy.ts).text == "old resolved"
    old = await store.outbox_item(f"update:{ALERTS}:old:n2")
    assert old is not None
    assert (old.state, old.result) == (OutboxState.DONE, {"ts": legacy.ts, "channel_id": "C1"})


async def test_a_reply_to_a_message_stored_without_its_channel_id_goes_by_name(
    fake: FakeSlack, store: Store
) -> None:
    legacy = await stored_without_channel_id(fake, store, ALERTS)
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.reply(ALERTS, "old", msg("still firing"), revision="n2")
        await delivery.update(ALERTS, "old", msg("edited after the reply taught the ID"), revision="n3")
        await drained(store)
    assert [m.text for m in fake.thread(ALERTS, legacy.ts)] == ["still firing"]
    assert [c.params["channel"] for c in fake.calls_to("chat.update")] == ["C1"]


async def test_a_channel_configured_by_id_needs_no_lookup(fake: FakeSlack, store: Store) -> None:
    legacy = await stored_without_channel_id(fake, store, ALERTS_ID)
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.update(ALERTS_ID, "old", msg("resolved"), revision="n2")
        await drained(store)
    assert [(m.ts, m.text) for m in fake.top_level(ALERTS_ID)] == [(legacy.ts, "resolved")]


async def test_a_details_reply_given_up_or_withdrawn_gets_no_edits(fake: FakeSlack, store: Store) -> None:
    delivery = Delivery(store, slack_at(fake.api_url), policy=FAST)
    for group, end in (("given-up", "give_up"), ("folded", "complete")):
        await delivery.reply_in_place(ALERTS, group, msg("details 1"), reply="details", revision="n1")
        first = await store.outbox_item(f"reply:{ALERTS}:{group}:details")
        assert first is not None
        if end == "give_up":
            assert await store.give_up(first.id, "content refused three times")
        else:
            assert await store.complete(first.id, {"folded_into": "storm:alerts:1"})
        again = await delivery.reply_in_place(ALERTS, group, msg("details 2"), reply="details", revision="n2")
        assert (again.id, again.duplicate) == (first.id, True)
        assert await store.outbox_item(f"reply-edit:{ALERTS}:{group}:details:n2") is None


# -- the silence laid over a message ---------------------------------------------------------------------


@dataclass
class EverySilenced:
    """Alertmanager's last listing, as the delivery reads it: one silence covering every message."""

    def shown_for(self, label_sets: Sequence[Mapping[str, str]]) -> Silence | None:
        ends = datetime(2026, 12, 1, 14, 0, tzinfo=UTC)
        return Silence("s1", "active", (Matcher("target", "t"),), ends, ends, "ops", "node drain")


def alert_message(text: str, *, firing: bool) -> Message:
    buttons = [Button("Silence…", ACTION_SILENCE, "v")] if firing else []
    probe = Button("Probe now", ACTION_PROBE, "v")
    return Message(text, (section(text), actions([probe, *buttons], ACTIONS_BLOCK_ID)))


async def test_a_resolved_edit_shows_no_silence_though_the_groups_row_still_says_firing(
    fake: FakeSlack, store: Store
) -> None:
    # The pipeline queues a group's operations before it saves its row: its resolved edit can go out
    # while the row still says firing. The content (no Silence… on a resolved message) decides.
    facts = GroupFacts(firing_labels=({"alertname": "A", "target": "t"},))
    await store.save_group(AlertGroupState(ALERTS, "grp", AlertStatus.FIRING, facts=facts))
    delivery = Delivery(store, slack_at(fake.api_url), policy=FAST)
    delivery.show_silences(EverySilenced())
    async with running(delivery):
        await delivery.post(ALERTS, "grp", alert_message("FIRING", firing=True))
        await drained(store)
        [top] = fake.top_level()
        assert "Silenced by ops" in str(top.blocks)
        await delivery.update(ALERTS, "grp", alert_message("RESOLVED", firing=False), revision="r1")
        await drained(store)
    assert top.text == "RESOLVED"
    assert "Silenced by" not in str(top.blocks)


async def test_a_show_again_edit_tells_the_ages_of_its_content_as_they_are_when_it_goes_out(
    fake: FakeSlack, db_url: str
) -> None:
    # The message as the alert side rendered it at NOW: "since 10:02 (12 min ago)", "read 10:14:00 (just
    # now)". Acknowledged 10 minutes later, its edit must not say "just now" any more.
    clock = FakeTime(views.NOW.timestamp())
    store = await open_store(db_url, clock=clock)
    try:
        view = views.group(views.alert(snap=views.snapshot()), live=LiveRead.read(views.NOW))
        content = alert_group_message(view, views.NOW)
        delivery = Delivery(store, slack_at(fake.api_url), policy=FAST, clock=clock)
        async with running(delivery):
            await delivery.post(ALERTS, "grp", content)
            await drained(store)
            await delivery.show_again(ALERTS, "grp", "ack:U1:1")  # at once: nothing has aged
            await drained(store)
            clock.now += 600
            await delivery.show_again(ALERTS, "grp", "ack:U1:2")
            await drained(store)
    finally:
        await store.close()
    [quick, later] = [
        views.all_text(Message(c.params["text"], tuple(c.params["blocks"])))
        for c in fake.calls_to("chat.update")
    ]
    assert "since 2024-05-01 10:02 UTC (12 min ago)" in quick
    assert "Live state read 10:14:00 UTC (just now)" in quick
    assert "since 2024-05-01 10:02 UTC (22 min ago)" in later
    assert "Live state read 10:14:00 UTC (10 min ago)" in later
    assert "updated 10:14:00 UTC" in later  # when the content was made: a time, not an age
    assert "just now" not in later


async def test_ages_are_told_by_the_clock_messages_show_not_the_one_pacing_the_work(
    fake: FakeSlack, store: Store
) -> None:
    # The demo's messages tell the simulated world's time; its delivery is paced by the machine's.
    shown = FakeTime(views.NOW.timestamp())
    delivery = Delivery(store, slack_at(fake.api_url), policy=FAST, shown=shown)
    async with running(delivery):
        await delivery.post(ALERTS, "grp", msg("Live state read 10:14:00 UTC (just now)"))
        await drained(store)
        shown.now += 90
        await delivery.show_again(ALERTS, "grp", "ack:U1:1")
        await drained(store)
    assert fake.calls_to("chat.update")[-1].params["text"] == "Live state read 10:14:00 UTC (1 min ago)"
