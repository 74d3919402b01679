"""The delivery worker: runs the store's Slack outbox, at least once, paced and in order per channel.

Every Slack operation is first a row in the outbox (`Delivery.post/update/reply/upload_png` enqueue one and
wake the worker), so nothing accepted is lost when proxybot dies: a restart runs what is still pending.

Per channel, pending operations run in enqueue order; channels run concurrently. Of one message's
operations, a later one never overtakes an earlier one that is waiting for a retry, and when several
edits of a message are due only the newest is sent (the others are completed as superseded; a post
that has not gone out yet is sent with the newest edit's content instead). `chat.postMessage` is paced
per channel. A 429 pauses the channel for `Retry-After`; 5xx, timeouts and connection errors back off
exponentially with jitter, capped, and never give up; a rejection of the message itself
(`invalid_blocks`, `message_not_found`) gives the operation up with the reason kept in the row; a
rejection an operator fixes (token, scope, bot not in the channel) pauses the channel instead.

A post is keyed by (channel, group): when the group's `ts` is already known (a re-run after a crash
between Slack's answer and our completion), the post becomes an edit, never a second top-level message.

Channels are configured by `#name` or ID, and the outbox keeps what was configured; Slack takes a name only
in chat.postMessage, so every later call on a message or its thread uses the channel ID from the post's
answer (kept with the group). A message stored without one (by a proxybot before it kept IDs) waits for the
ID until any message posted in its channel teaches it; a channel configured by ID needs no lookup.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import random
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from bot.clients.slack import Posted, SlackRateLimited, SlackRejected, SlackTransient
from bot.domain.alerts import AlertStatus
from bot.render.blocks import Message
from bot.store.errors import StoreError
from bot.store.models import AlertGroupState, Enqueued, OutboxItem, OutboxKind, OutboxState
from bot.store.sqlite import Store
from config.validation import SLACK_CHANNEL_ID

log = logging.getLogger(__name__)

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
# Far enough ahead that `Store.due(now + HORIZON)` lists every pending row, due or waiting.
HORIZON = 10 * 365 * 86400.0


class SlackSender(Protocol):
    """What the worker needs of Slack: `bot.clients.slack.SlackClient`, or the demo's terminal sink."""

    async def post(self, channel: str, message: Message, thread_ts: str | None = None) -> Posted: ...

    async def update(self, channel_id: str, ts: str, message: Message) -> None: ...

    async def upload_png(
        self, channel_id: str, thread_ts: str, png: bytes, filename: str, title: str
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class DeliveryPolicy:
    """Pacing and retry timing of the worker."""

    posts_per_second: float = 1.0
    backoff_base: float = 1.0
    backoff_cap: float = 120.0
    # Edits of one message go at most this often; what arrives meanwhile is folded into the next one.
    edit_interval: float = 1.0
    # An edit or reply whose message has not been posted yet looks again this soon.
    wait_for_post: float = 1.0
    # ... and gives up after this many looks when no post for its message was ever enqueued (while the
    # post is queued it waits however long that takes: in a storm the pacing queue can be long).
    orphan_attempts: int = 30
    # Paced calls (posts, replies) one lane makes before the channel is planned afresh, so an edit
    # enqueued meanwhile (a storm summary's) does not wait behind a long run of paced replies.
    paced_per_lane: int = 2
    # The outbox is read at most this often however often `notify()` is called (in a storm it is called
    # for every enqueued row, and every read lists every pending row).
    dispatch_gap: float = 0.1
    # How many pending rows one pass reads.
    batch: int = 1000
    # Look at the store this often even when nobody calls `notify()`.
    idle_poll: float = 30.0


def post_key(channel: str, group_key: str) -> str:
    """The outbox key of a message's top-level post: one per channel and group, ever."""
    return f"post:{channel}:{group_key}"


def backoff(attempts: int, policy: DeliveryPolicy, rand: float) -> float:
    """Seconds before try `attempts + 1`: doubling from the base, capped, with jitter in [half, full]."""
    full = min(policy.backoff_cap, policy.backoff_base * 2.0 ** min(attempts, 32))
    return full / 2 + rand * full / 2


@dataclass(frozen=True, slots=True)
class Step:
    """One Slack call planned from the outbox, and the older edits it makes unnecessary."""

    item: OutboxItem
    payload: Mapping[str, Any]
    superseded: tuple[OutboxItem, ...] = ()

    @property
    def group_key(self) -> str:
        return group_of(self.item)


def group_of(item: OutboxItem) -> str:
    return str(item.payload.get("group_key", ""))


@dataclass(frozen=True, slots=True)
class Plan:
    """The calls one channel can make now, and when rows held back now may become runnable."""

    steps: list[Step]
    next_at: float | None


def plan(items: Sequence[OutboxItem], now: float, edit_ready: Mapping[str, float] | None = None) -> Plan:
    """The calls to make now for one channel's pending rows, in enqueue order.

    A message's rows after one that is not due yet wait behind it. Of a message's due edits only the
    newest is sent, and not before `edit_ready[group]` (edits of one message are spaced); when the
    message's post is due too, the post carries the newest content and no edit is sent. Edits go
    before the paced calls (posts, replies): they are not paced, and must not wait behind them.
    """
    runnable, later = _runnable(items, now)
    ready = edit_ready or {}
    edits: dict[str, list[OutboxItem]] = defaultdict(list)
    for item in runnable:
        if item.kind is OutboxKind.UPDATE:
            edits[group_of(item)].append(item)
    posts = {group_of(i) for i in runnable if i.kind is OutboxKind.POST}
    steps: list[Step] = []
    for item in runnable:
        group = group_of(item)
        newer = edits.get(group, [])
        if item.kind is OutboxKind.POST and newer:
            steps.append(Step(item, {**item.payload, **_content(newer[-1])}, tuple(newer)))
        elif item.kind is not OutboxKind.UPDATE:
            steps.append(Step(item, item.payload))
        elif group in posts or item is not newer[-1]:
            continue
        elif ready.get(group, 0.0) > now:
            later.append(ready[group])
        else:
            steps.append(Step(item, item.payload, tuple(newer[:-1])))
    # Stable: edits (not paced), then posts (a storm summary before the lines of its thread), then the
    # rest; a message's post goes before its replies, and an edit is only planned once its post is done.
    steps.sort(key=lambda step: _RANK.get(step.item.kind, 2))
    return Plan(steps, min(later, default=None))


_RANK = {OutboxKind.UPDATE: 0, OutboxKind.POST: 1}


def _runnable(items: Sequence[OutboxItem], now: float) -> tuple[list[OutboxItem], list[float]]:
    """Due rows not queued behind a waiting row of their message; and the times the waiting ones are due.

    A post is never held back: a row of its message that waits can only be waiting for the post.
    """
    runnable: list[OutboxItem] = []
    later: list[float] = []
    waiting: set[str] = set()
    for item in sorted(items, key=lambda i: i.id):
        if item.next_attempt_at > now:
            later.append(item.next_attempt_at)
            waiting.add(group_of(item))
        elif item.kind is OutboxKind.POST or group_of(item) not in waiting:
            runnable.append(item)
    return runnable, later


def _content(item: OutboxItem) -> dict[str, Any]:
    return {k: item.payload[k] for k in ("text", "blocks") if k in item.payload}


class _NotPostedYet(Exception):
    """The message an edit, reply or upload belongs to has no `ts` yet."""


class _Unsendable(Exception):
    """The row can never be sent (its message failed, or its payload is malformed)."""


class _ChannelIdUnknown(Exception):
    """The message was stored without its channel's ID, and no post in that channel has taught it yet."""


@dataclass(frozen=True, slots=True)
class _Address:
    """Where a posted message is, as every call after chat.postMessage wants it."""

    channel_id: str
    ts: str


class Delivery:
    """The outbox worker; `run()` as a task, `notify()` (or the enqueue methods) wake it, `stop()` ends it."""

    def __init__(
        self,
        store: Store,
        slack: SlackSender,
        *,
        policy: DeliveryPolicy | None = None,
        clock: Clock = time.time,
        sleep: Sleep = asyncio.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._store = store
        self._slack = slack
        self._policy = policy or DeliveryPolicy()
        self._clock = clock
        self._sleep = sleep
        self._rand = rand
        self._wake = asyncio.Event()
        self._stopping = False
        self._lanes: dict[str, asyncio.Task[None]] = {}
        self._paused_until: dict[str, float] = {}
        self._next_post_at: dict[str, float] = {}
        self._next_edit_at: dict[tuple[str, str], float] = {}
        self._dispatched_at = float("-inf")
        # Configured channel (a `#name` or an ID) -> its Slack ID, from chat.postMessage answers.
        self._channel_ids: dict[str, str] = {}

    # -- enqueueing ----------------------------------------------------------------------------------
    async def post(self, channel: str, group_key: str, message: Message) -> Enqueued:
        """Queue the group's top-level message (once per channel and group; newer content replaces)."""
        payload = {"group_key": group_key, **message.as_kwargs()}
        key = post_key(channel, group_key)
        return await self._enqueue(key, channel, OutboxKind.POST, payload, replace_pending=True)

    async def update(self, channel: str, group_key: str, message: Message, revision: str) -> Enqueued:
        """Queue an edit of the group's message; `revision` makes a redelivered notification a no-op."""
        payload = {"group_key": group_key, **message.as_kwargs()}
        key = f"update:{channel}:{group_key}:{revision}"
        return await self._enqueue(key, channel, OutboxKind.UPDATE, payload)

    async def reply(self, channel: str, group_key: str, message: Message, revision: str) -> Enqueued:
        """Queue a reply in the group message's thread."""
        payload = {"group_key": group_key, **message.as_kwargs()}
        key = f"reply:{channel}:{group_key}:{revision}"
        return await self._enqueue(key, channel, OutboxKind.REPLY, payload)

    async def upload_png(
        self, channel: str, group_key: str, png: bytes, *, filename: str, title: str, revision: str
    ) -> Enqueued:
        """Queue a PNG upload into the group message's thread."""
        payload = {
            "group_key": group_key,
            "png": base64.b64encode(png).decode("ascii"),
            "filename": filename,
            "title": title,
        }
        key = f"upload:{channel}:{group_key}:{revision}"
        return await self._enqueue(key, channel, OutboxKind.UPLOAD, payload)

    async def _enqueue(
        self,
        key: str,
        channel: str,
        kind: OutboxKind,
        payload: Mapping[str, Any],
        replace_pending: bool = False,
    ) -> Enqueued:
        queued = await self._store.enqueue(key, channel, kind, payload, replace_pending=replace_pending)
        self.notify()
        return queued

    def notify(self) -> None:
        """Something was enqueued: look at the outbox now."""
        self._wake.set()

    # -- the loop ------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Deliver until `stop()`; store failures are logged and retried, never end the loop."""
        try:
            while not self._stopping:
                await self._spaced()
                self._wake.clear()
                try:
                    wake_at = await self._dispatch()
                except StoreError as error:
                    log.error("delivery: the store failed, trying again shortly: %s", error)
                    wake_at = self._clock() + self._policy.wait_for_post
                await self._idle_until(wake_at)
        finally:
            await self._end_lanes(cancel=True)

    async def stop(self, grace: float = 5.0) -> None:
        """Stop after the calls in flight (cut off after `grace` s; cut-off rows run again next start)."""
        self._stopping = True
        self._wake.set()
        lanes = [lane for lane in self._lanes.values() if not lane.done()]
        if lanes:
            await asyncio.wait(lanes, timeout=grace)
        await self._end_lanes(cancel=True)

    async def _end_lanes(self, *, cancel: bool) -> None:
        lanes = list(self._lanes.values())
        for lane in lanes:
            if cancel:
                lane.cancel()
        await asyncio.gather(*lanes, return_exceptions=True)
        self._lanes.clear()

    async def _spaced(self) -> None:
        gap = self._dispatched_at + self._policy.dispatch_gap - self._clock()
        if gap > 0 and not self._stopping:
            await self._sleep(gap)
        self._dispatched_at = self._clock()

    async def _idle_until(self, wake_at: float) -> None:
        delay = min(wake_at - self._clock(), self._policy.idle_poll)
        if delay <= 0 or self._stopping:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), delay)

    async def _dispatch(self) -> float:
        """Start a lane for every idle channel with work; returns when to look again."""
        now = self._clock()
        pending = await self._store.due(now + HORIZON, limit=self._policy.batch)
        by_channel: dict[str, list[OutboxItem]] = defaultdict(list)
        for item in pending:
            by_channel[item.channel].append(item)
        self._next_edit_at = {k: at for k, at in self._next_edit_at.items() if at > now}
        wake_at = now + self._policy.idle_poll
        for channel, items in by_channel.items():
            lane = self._lanes.get(channel)
            if lane is not None and not lane.done():
                continue
            paused = self._paused_until.get(channel, 0.0)
            if paused > now:
                wake_at = min(wake_at, paused)
                continue
            ready = {g: at for (c, g), at in self._next_edit_at.items() if c == channel}
            planned = plan(items, now, ready)
            if planned.steps:
                self._lanes[channel] = asyncio.create_task(self._lane(channel, planned.steps))
            if planned.next_at is not None:
                wake_at = min(wake_at, planned.next_at)
        return wake_at

    async def _lane(self, channel: str, steps: list[Step]) -> None:
        held: set[str] = set()
        paced = 0
        try:
            for step in steps:
                if self._stopping or self._paused_until.get(channel, 0.0) > self._clock():
                    break
                if paced >= self._policy.paced_per_lane and _is_paced(step):
                    break  # the rest is planned again, after any edit enqueued meanwhile
                paced += _is_paced(step)
                if step.group_key not in held and not await self._attempt(channel, step):
                    held.add(step.group_key)
        except StoreError as error:
            log.error("delivery: the store failed in channel %s: %s", channel, error)
        finally:
            self._wake.set()

    # -- one step ------------------------------------------------------------------------------------
    async def _attempt(self, channel: str, step: Step) -> bool:
        """Run one step and record its outcome; False when the message's later steps must wait."""
        item = step.item
        try:
            result = await self._execute(channel, step)
        except SlackRateLimited as error:
            return await self._pause(channel, item, error.retry_after, str(error))
        except SlackRejected as error:
            if error.needs_operator:
                log.error(
                    "delivery: Slack refused %s in %s (%s): fix the Slack app", item.kind, channel, error
                )
                return await self._pause(channel, item, self._policy.backoff_cap, str(error))
            return await self._give_up(item, str(error))
        except SlackTransient as error:
            delay = backoff(item.attempts, self._policy, self._rand())
            await self._store.retry_later(item.id, self._clock() + delay, str(error))
            return False
        except _NotPostedYet as error:
            return await self._wait_for_post(item, str(error))
        except _Unsendable as error:
            return await self._give_up(item, str(error))
        except _ChannelIdUnknown as error:
            if item.attempts == 0:
                log.warning("delivery: %s %s waits: %s", item.kind, item.key, error)
            delay = backoff(item.attempts, self._policy, self._rand())
            await self._store.retry_later(item.id, self._clock() + delay, str(error))
            return False
        except Exception as error:  # a bug or a sender we do not know: keep the row, try later
            log.exception("delivery: unexpected failure of %s %s in %s", item.kind, item.key, channel)
            delay = backoff(item.attempts, self._policy, self._rand())
            await self._store.retry_later(item.id, self._clock() + delay, f"unexpected: {error!r}")
            return False
        if result is None:
            return True  # the row was completed by someone else meanwhile (a storm folded the post)
        if item.kind in (OutboxKind.POST, OutboxKind.UPDATE):
            self._next_edit_at[(channel, step.group_key)] = self._clock() + self._policy.edit_interval
        await self._store.complete(item.id, result)
        for older in step.superseded:
            await self._store.complete(older.id, {"superseded_by": item.id})
        return True

    async def _pause(self, channel: str, item: OutboxItem, seconds: float, error: str) -> bool:
        until = self._clock() + seconds
        self._paused_until[channel] = max(until, self._paused_until.get(channel, 0.0))
        await self._store.retry_later(item.id, until, error)
        return False

    async def _give_up(self, item: OutboxItem, error: str) -> bool:
        log.error("delivery: gave up %s %s in %s: %s", item.kind, item.key, item.channel, error)
        await self._store.give_up(item.id, error)
        return False

    async def _wait_for_post(self, item: OutboxItem, error: str) -> bool:
        # Only an orphan gives up: while its message's post is queued (pending) it is on its way.
        posted = await self._store.outbox_item(post_key(item.channel, group_of(item)))
        orphan = posted is None or posted.state is OutboxState.FAILED
        if orphan and item.attempts + 1 >= self._policy.orphan_attempts:
            return await self._give_up(item, f"{error}, and no post for it arrived")
        await self._store.retry_later(item.id, self._clock() + self._policy.wait_for_post, error)
        return False

    async def _execute(self, channel: str, step: Step) -> dict[str, Any] | None:
        kind, payload, group = step.item.kind, step.payload, step.group_key
        if kind is OutboxKind.POST:
            return await self._post(step)
        # A reply is a chat.postMessage: it may name the channel, and its answer teaches the ID.
        where = await self._address(channel, group, by_name=kind is OutboxKind.REPLY)
        if kind is OutboxKind.UPDATE:
            await self._slack.update(where.channel_id, where.ts, _message(payload))
            return {"ts": where.ts, "channel_id": where.channel_id}
        if kind is OutboxKind.REPLY:
            await self._paced(channel)
            posted = self._learn(
                channel, await self._slack.post(where.channel_id, _message(payload), where.ts)
            )
            return {"ts": posted.ts, "thread_ts": where.ts, "channel_id": posted.channel_id}
        png, filename, title = _upload(payload)
        await self._slack.upload_png(where.channel_id, where.ts, png, filename, title)
        return {"thread_ts": where.ts, "channel_id": where.channel_id}

    async def _post(self, step: Step) -> dict[str, Any] | None:
        channel, group, payload = step.item.channel, step.group_key, step.payload
        state = await self._store.get_group(channel, group)
        if state is not None and state.ts is not None:
            # Slack already has this message (we died after posting): edit it, never post a second one.
            channel_id = self._channel_id(channel, state.channel_id)
            await self._slack.update(channel_id, state.ts, _message(payload))
            return {"ts": state.ts, "channel_id": channel_id, "edited": True}
        # A storm may fold a queued post into its thread; looked at before and after the pacing wait.
        if not await self._still_pending(step.item):
            return None
        slot = await self._paced(channel)
        if not await self._still_pending(step.item):
            self._next_post_at[channel] = slot  # unused: the next post (the storm's summary) takes it
            return None
        posted = self._learn(channel, await self._slack.post(channel, _message(payload)))
        await self._remember(channel, group, state, posted)
        return {"ts": posted.ts, "channel_id": posted.channel_id}

    async def _still_pending(self, item: OutboxItem) -> bool:
        current = await self._store.outbox_item(item.key)
        return current is not None and current.state is OutboxState.PENDING

    async def _remember(
        self, channel: str, group: str, state: AlertGroupState | None, posted: Posted
    ) -> None:
        # Re-read: the alert side may have saved the group while the post was in flight.
        state = await self._store.get_group(channel, group) or state
        if state is None:
            state = AlertGroupState(channel=channel, group_key=group, status=AlertStatus.FIRING)
        await self._store.save_group(replace(state, ts=posted.ts, channel_id=posted.channel_id))

    def _learn(self, channel: str, posted: Posted) -> Posted:
        self._channel_ids[channel] = posted.channel_id
        return posted

    def _channel_id(self, channel: str, stored: str | None, *, by_name: bool = False) -> str:
        """The Slack ID of a configured channel: as stored with the message, configured, or learnt
        (`by_name`: the configured name will do when the ID is not known)."""
        if stored:
            return stored
        if SLACK_CHANNEL_ID.match(channel):
            return channel
        learnt = self._channel_ids.get(channel)
        if learnt is None and by_name:
            return channel
        if learnt is None:
            raise _ChannelIdUnknown(
                f"the message was posted to {channel} by an older proxybot, which did not keep the "
                f"channel's ID; it is learnt from the next message posted there (or configure the "
                f"channel by its ID)"
            )
        return learnt

    async def _address(self, channel: str, group: str, *, by_name: bool = False) -> _Address:
        """Where the group's message is: from the group, else from its completed post."""
        state = await self._store.get_group(channel, group)
        if state is not None and state.ts is not None:
            return _Address(self._channel_id(channel, state.channel_id, by_name=by_name), state.ts)
        posted = await self._store.outbox_item(post_key(channel, group))
        result = posted.result if posted is not None else None
        if result is not None and isinstance(result.get("ts"), str):
            stored = result.get("channel_id")
            known = stored if isinstance(stored, str) else None
            return _Address(self._channel_id(channel, known, by_name=by_name), result["ts"])
        if posted is not None and posted.state is OutboxState.FAILED:
            raise _Unsendable(f"the message of group {group} was never posted: {posted.last_error}")
        if posted is not None and posted.state is OutboxState.DONE:
            # Completed without a message: folded into a storm's thread before it went out.
            raise _Unsendable(f"the message of group {group} was not posted: {posted.result}")
        raise _NotPostedYet(f"the message of group {group} is not posted yet")

    async def _paced(self, channel: str) -> float:
        """Wait for this channel's next chat.postMessage slot, and take it; the slot's time."""
        interval = 1.0 / self._policy.posts_per_second
        now = self._clock()
        slot = max(now, self._next_post_at.get(channel, 0.0))
        self._next_post_at[channel] = slot + interval
        if slot > now:
            await self._sleep(slot - now)
        return slot


def _is_paced(step: Step) -> bool:
    return step.item.kind in (OutboxKind.POST, OutboxKind.REPLY)


def _message(payload: Mapping[str, Any]) -> Message:
    text, blocks = payload.get("text"), payload.get("blocks") or []
    if not isinstance(text, str) or not isinstance(blocks, list):
        raise _Unsendable("malformed outbox payload: needs text (string) and blocks (list)")
    return Message(text, tuple(blocks))


def _upload(payload: Mapping[str, Any]) -> tuple[bytes, str, str]:
    try:
        png = base64.b64decode(str(payload["png"]), validate=True)
        return png, str(payload["filename"]), str(payload["title"])
    except (KeyError, ValueError) as error:
        raise _Unsendable(f"malformed upload payload: {error}") from None
