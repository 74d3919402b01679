"""The delivery worker: runs the store's Slack outbox, at least once, paced and in order per channel.

Every Slack operation is first a row in the outbox (`Delivery.post/update/reply/upload_png/upload_file/
delete_upload` enqueue one and wake the worker: `bot.delivery.enqueue`), so nothing accepted is lost when
proxybot dies: a restart runs what is still pending.

Per channel, pending operations run in enqueue order; channels run concurrently. Of one message's
operations, a later one never overtakes an earlier one that is waiting for a retry, and when several
edits of a message are due only the newest is sent (the others are completed as superseded; a post
that has not gone out yet is sent with the newest edit's content instead). `chat.postMessage` is paced
per channel. A 429 pauses the channel for `Retry-After`; 5xx, timeouts and connection errors back off
exponentially with jitter, capped, and never give up; a rejection of the message's content
(`invalid_blocks`, `msg_too_long`) is sent again smaller, then as text only (`bot.delivery.send`); any
other rejection of the message itself (`message_not_found`) gives the operation up with the reason kept
in the row; a rejection an operator fixes (token, scope, bot not in the channel, no such channel) pauses
the channel instead, and the other channels flow on.

With several replicas on one store, only the replica holding the leader lease (`bot.lease`) sends; it
checks the lease before every call with a margin longer than the call's timeout, so a replica that lost
it stops before another could send the same row.

What to send is planned in `bot.delivery.plan`; how one step becomes a Slack call (addresses, channel
IDs, pacing) is `bot.delivery.send`; the outbox keys are built in `bot.delivery.keys`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import defaultdict
from collections.abc import Callable

from bot.clients.slack import SlackRateLimited, SlackRejected, SlackTransient
from bot.delivery.addresses import ChannelIdUnknown, Folded, NotPostedYet, Unsendable
from bot.delivery.enqueue import HORIZON, Enqueuer
from bot.delivery.keys import post_key
from bot.delivery.plan import DeliveryPolicy, Step, backoff, group_of, plan
from bot.delivery.send import NotLeading, ShownSilences, SlackSender, Sleep, StepSender
from bot.lease import Lease
from bot.ports import Clock
from bot.store.base import Store
from bot.store.errors import StoreError
from bot.store.models import OutboxItem, OutboxKind, OutboxState

__all__ = ["Delivery", "DeliveryPolicy", "SlackSender"]

log = logging.getLogger(__name__)

# What an operator does about a refusal that is not the message's fault.
OPERATOR_FIX = {
    "channel_not_found": "check the channel in the config (a private channel needs the bot invited)",
    "not_in_channel": "invite the bot to the channel (/invite @proxybot)",
}


class Delivery(Enqueuer):
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
        lease: Lease | None = None,
        shown: Clock | None = None,
    ) -> None:
        self._policy = policy or DeliveryPolicy()
        # `clock` paces the work; `shown` (by default `clock`) is the time messages tell.
        super().__init__(store, clock, self._policy.batch, shown)
        self._lease = lease
        self._sleep = sleep
        self._rand = rand
        self._stopping = False
        self._lanes: dict[str, asyncio.Task[None]] = {}
        self._paused_until: dict[str, float] = {}
        self._next_edit_at: dict[tuple[str, str], float] = {}
        self._dispatched_at = float("-inf")
        self._sender = StepSender(
            store, slack, self._policy.posts_per_second, clock, sleep, lease, shown=self._shown
        )
        # Set when a stop cut Slack calls off mid-flight: the lease is then left to expire, not released,
        # so the next leader looks for those posts only once they could have reached Slack.
        self.cut_off = False

    def show_silences(self, silences: ShownSilences) -> None:
        """Lay the silence covering each message over its posts and edits (`bot.alerts.silences`)."""
        self._sender.silences = silences

    # -- the loop ------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Deliver until `stop()`; store failures are logged and retried, never end the loop."""
        try:
            while not self._stopping:
                await self._spaced()
                self._wake.clear()
                try:
                    if not await self._leading():
                        await self._idle_until(self._clock() + self._retry_every)
                        continue
                    wake_at = await self._dispatch()
                except StoreError as error:
                    log.error("delivery: the store failed, trying again shortly: %s", error)
                    wake_at = self._clock() + self._policy.wait_for_post
                await self._idle_until(wake_at)
        finally:
            await self._end_lanes(cancel=True)

    async def _leading(self, margin: float = 0.0) -> bool:
        return self._lease is None or await self._lease.ensure(margin)

    @property
    def _send_margin(self) -> float:
        """A call starts only while the lease outlasts it (`bot.lease.SEND_MARGIN`)."""
        return 0.0 if self._lease is None else self._lease.timings.send_margin

    @property
    def _retry_every(self) -> float:
        return 0.0 if self._lease is None else self._lease.timings.retry_every

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
            if cancel and not lane.done():
                self.cut_off = True
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
        # A channel busy before the read stays busy this round, even if its lane ends during the read:
        # the rows read for it may be those the lane has just sent (its end wakes the loop to read again).
        busy = {channel for channel, lane in self._lanes.items() if not lane.done()}
        if busy and self._channels_with_rows is not None and self._channels_with_rows <= busy:
            # Every channel with rows is sending: a read would plan nothing (a lane's end wakes the loop).
            # In a storm the worker is woken for every row enqueued, and each read lists every pending
            # row, so reading here made the storm's cost grow with the square of its size.
            return now + self._policy.idle_poll
        # Cleared before the read: a row enqueued while it runs adds its channel back.
        self._channels_with_rows = set()
        pending = await self._store.due(now + HORIZON, limit=self._policy.batch)
        if len(pending) >= self._policy.batch:
            self._channels_with_rows = None
        else:
            self._channels_with_rows.update(item.channel for item in pending)
        by_channel: dict[str, list[OutboxItem]] = defaultdict(list)
        for item in pending:
            by_channel[item.channel].append(item)
        self._next_edit_at = {k: at for k, at in self._next_edit_at.items() if at > now}
        wake_at = now + self._policy.idle_poll
        for channel, items in by_channel.items():
            if channel in busy:
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
                if paced >= self._policy.paced_per_lane and step.paced:
                    break  # the rest is planned again, after any edit enqueued meanwhile
                if not await self._leading(self._send_margin):
                    break  # another replica sends from now on
                paced += step.paced
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
            result = await self._sender.send(channel, step)
        except SlackRateLimited as error:
            return await self._pause(channel, item, error.retry_after, str(error))
        except SlackRejected as error:
            if error.needs_operator:
                log.error(
                    "delivery: Slack refused %s in %s (%s): %s; the channel waits %g s and tries again",
                    item.kind,
                    channel,
                    error,
                    OPERATOR_FIX.get(error.error_code, "fix the Slack app (token, scopes)"),
                    self._policy.backoff_cap,
                )
                return await self._pause(channel, item, self._policy.backoff_cap, str(error))
            return await self._give_up(item, str(error))
        except SlackTransient as error:
            delay = backoff(item.attempts, self._policy, self._rand())
            await self._store.retry_later(item.id, self._clock() + delay, str(error))
            return False
        except NotPostedYet as error:
            return await self._wait_for_post(item, str(error))
        except NotLeading as error:
            log.info("delivery: %s left to the leader: %s", item.key, error)
            return False
        except Folded as error:
            # Its message never went out: a storm's thread carries the group instead. Nothing to send.
            log.info("delivery: %s not sent: %s", item.key, error)
            await self._store.complete(item.id, {"folded": str(error)})
            return True
        except StoreError:
            raise  # the store, not this row: the lane stops and the loop tries again
        except Unsendable as error:
            return await self._give_up(item, str(error))
        except ChannelIdUnknown as error:
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
