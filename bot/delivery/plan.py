"""What the delivery worker sends next, decided without I/O: one channel's calls now, and retry timing.

Of one message's rows, a later one never overtakes an earlier one that is waiting for a retry; when
several edits of a message are due only the newest is sent (the others are superseded), and a post that
has not gone out yet carries the newest edit's content instead. Edits of a reply (`REPLY_EDIT`, the
details reply kept in place) go the same way: the newest only, and a reply not sent yet carries it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.delivery.keys import reply_key
from bot.store.models import OutboxItem, OutboxKind


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

    @property
    def paced(self) -> bool:
        """Whether the call is a chat.postMessage (posts and replies), which Slack paces per channel."""
        return self.item.kind in (OutboxKind.POST, OutboxKind.REPLY)


def group_of(item: OutboxItem) -> str:
    return str(item.payload.get("group_key", ""))


def _edited_reply(item: OutboxItem) -> str:
    """The key of the reply a `REPLY_EDIT` row edits."""
    return reply_key(item.channel, group_of(item), str(item.payload.get("reply", "")))


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
    reply_edits: dict[str, list[OutboxItem]] = defaultdict(list)
    for item in runnable:
        if item.kind is OutboxKind.UPDATE:
            edits[group_of(item)].append(item)
        elif item.kind is OutboxKind.REPLY_EDIT:
            reply_edits[_edited_reply(item)].append(item)
    posts = {group_of(i) for i in runnable if i.kind is OutboxKind.POST}
    replies = {i.key for i in runnable if i.kind is OutboxKind.REPLY}
    steps: list[Step] = []
    for item in runnable:
        group = group_of(item)
        newer = edits.get(group, [])
        if item.kind is OutboxKind.REPLY_EDIT:
            edited = reply_edits[_edited_reply(item)]
            if _edited_reply(item) not in replies and item is edited[-1]:
                steps.append(Step(item, item.payload, tuple(edited[:-1])))
        elif item.kind is OutboxKind.REPLY and reply_edits.get(item.key):
            newest = reply_edits[item.key]
            steps.append(Step(item, {**item.payload, **_content(newest[-1])}, tuple(newest)))
        elif item.kind is OutboxKind.POST and newer:
            steps.append(Step(item, {**item.payload, **_newest_content(newer)}, tuple(newer)))
        elif item.kind is not OutboxKind.UPDATE:
            steps.append(Step(item, item.payload))
        elif group in posts or item is not newer[-1]:
            continue
        elif ready.get(group, 0.0) > now:
            later.append(ready[group])
        else:
            steps.append(Step(item, item.payload, tuple(newer[:-1])))
    # Stable: edits (not paced), then posts (a storm summary before the rows of its thread), then the
    # rest; a message's post goes before its replies, and an edit is only planned once its post is done.
    steps.sort(key=lambda step: _RANK.get(step.item.kind, 2))
    return Plan(steps, min(later, default=None))


_RANK = {OutboxKind.UPDATE: 0, OutboxKind.REPLY_EDIT: 0, OutboxKind.POST: 1}


# A payload flag: the edit carries no content, it shows the message again as it is when sent (its newest
# content, with the acknowledgement and silence of that moment: `bot.delivery.send`).
SHOW_AGAIN = "show_again"
# A payload flag: the row was queued to wait (`Delivery.reply_in_place(..., defer=)`), not for a retry.
DEFERRED = "deferred"
# A message content's time (epoch seconds, on the clock messages tell the time by) when it was queued: the
# moment its ages ("just now", "12 min ago") were told against, aged when a `SHOW_AGAIN` edit shows it later.
SHOWN_AT = "shown_at"


def _runnable(items: Sequence[OutboxItem], now: float) -> tuple[list[OutboxItem], list[float]]:
    """Due rows not queued behind a waiting row of their message; and the times the waiting ones are due.

    A post is never held back: a row of its message that waits can only be waiting for the post. A reply
    deferred at enqueue (`Delivery.reply_in_place(..., defer=)`, never tried yet) holds back only its own
    edits: the message's other rows do not wait for it.
    """
    runnable: list[OutboxItem] = []
    later: list[float] = []
    waiting: set[str] = set()
    deferred: set[str] = set()
    for item in sorted(items, key=lambda i: i.id):
        if item.next_attempt_at > now:
            later.append(item.next_attempt_at)
            if item.kind is OutboxKind.REPLY and item.attempts == 0 and item.payload.get(DEFERRED):
                deferred.add(item.key)
            else:
                waiting.add(group_of(item))
        elif item.kind is OutboxKind.REPLY_EDIT and _edited_reply(item) in deferred:
            continue
        elif item.kind is OutboxKind.POST or group_of(item) not in waiting:
            runnable.append(item)
    return runnable, later


def _newest_content(edits: Sequence[OutboxItem]) -> dict[str, Any]:
    """The content of the newest edit that carries some (a `SHOW_AGAIN` edit carries none)."""
    return next((found for found in map(_content, reversed(edits)) if found), {})


def _content(item: OutboxItem) -> dict[str, Any]:
    return {k: item.payload[k] for k in ("text", "blocks", SHOWN_AT) if k in item.payload}
