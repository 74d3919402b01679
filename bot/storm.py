"""Storm mode: many new alert groups in one channel become one summary message and lines in its thread.

When a channel gets more than `groups` new alert groups within `window_seconds`, further new groups are
not posted on their own: one storm summary (counts per alert and per target, the likely common cause)
is posted and edited in place, and each group becomes a compact line in its thread. The storm ends after
`quiet_seconds` without a new group, and the summary says so.

Slack calls stay bounded by channels, not alerts: the delivery worker sends only the newest of a
message's due edits, and thread lines are gathered into replies of up to `lines_per_reply` lines. A line
reply is an outbox row due `linger` seconds after it was opened, rewritten with more lines
(`replace_pending`) only during the first half of that time, so a row the delivery worker may already be
sending is never changed under it; later lines go to the next row.

The storm's state lives in the store as the group row `storm:<channel>:<n>` (its `details`), so a restart
keeps editing the same summary.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from bot.domain.alerts import AlertStatus
from bot.domain.findings import Severity
from bot.domain.messages import AlertGroupView, StormEntry, StormView
from bot.render.blocks import Message, message, section_lines
from bot.render.slack import storm_group_line, storm_message
from bot.store.models import AlertGroupState, Enqueued, OutboxKind

log = logging.getLogger(__name__)

Clock = Callable[[], float]
STORM_PREFIX = "storm:"


class Outbox(Protocol):
    """The Slack operations storm mode queues (`bot.delivery.Delivery` is one)."""

    async def post(self, channel: str, group_key: str, message: Message) -> Enqueued: ...

    async def update(self, channel: str, group_key: str, message: Message, revision: str) -> Enqueued: ...

    def notify(self) -> None: ...


class StormStore(Protocol):
    """What storm mode needs of the store (`bot.store.Store` is one)."""

    async def get_group(self, channel: str, group_key: str) -> AlertGroupState | None: ...

    async def save_group(self, state: AlertGroupState) -> AlertGroupState: ...

    async def groups(
        self, channel: str | None = None, status: AlertStatus | None = None
    ) -> list[AlertGroupState]: ...

    async def enqueue(
        self,
        key: str,
        channel: str,
        kind: OutboxKind,
        payload: Mapping[str, Any],
        *,
        not_before: float | None = None,
        replace_pending: bool = False,
    ) -> Enqueued: ...


@dataclass(frozen=True)
class StormPolicy:
    """When a channel enters and leaves storm mode, and how its Slack calls are coalesced."""

    groups: int = 10  # more new groups than this ...
    window_seconds: float = 60.0  # ... within this many seconds start a storm
    quiet_seconds: float = 120.0  # a storm ends after this long without a new group
    linger_seconds: float = 2.0  # how long summary edits and thread lines gather before they are sent
    lines_per_reply: int = 15  # group lines per thread reply (a section holds 3000 characters)


def storm_key(channel: str, n: int) -> str:
    return f"{STORM_PREFIX}{channel}:{n}"


def is_storm_key(group_key: str) -> bool:
    return group_key.startswith(STORM_PREFIX)


@dataclass
class _Slot:
    """A coalescing outbox row: number `n` of a series, rewritable until `open_until`."""

    n: int
    open_until: float


@dataclass
class _Storm:
    """One storm in one channel."""

    key: str
    channel: str
    started_at: float
    last_new_at: float
    entries: dict[str, tuple[StormEntry, ...]] = field(default_factory=dict)
    ended_at: float | None = None
    posted: bool = False
    lines: _Slot = field(default_factory=lambda: _Slot(-1, 0.0))
    chunk: list[str] = field(default_factory=list)

    def view(self) -> StormView:
        every = tuple(e for group in self.entries.values() for e in group)
        ended = None if self.ended_at is None else _dt(self.ended_at)
        return StormView(every, _dt(self.started_at), ended)

    def details(self) -> dict[str, Any]:
        return {
            "kind": "storm",
            "started_at": self.started_at,
            "last_new_at": self.last_new_at,
            "ended_at": self.ended_at,
            "entries": {k: [_entry_json(e) for e in v] for k, v in self.entries.items()},
            "posted": self.posted,
            "line_slot": [self.lines.n, self.lines.open_until],
            "chunk": list(self.chunk),
        }

    @classmethod
    def from_state(cls, state: AlertGroupState) -> _Storm:
        d = state.details
        entries = {k: tuple(_entry(k, e) for e in v) for k, v in dict(d.get("entries", {})).items()}
        return cls(
            key=state.group_key,
            channel=state.channel,
            started_at=float(d["started_at"]),
            last_new_at=float(d["last_new_at"]),
            entries=entries,
            ended_at=None if d.get("ended_at") is None else float(d["ended_at"]),
            posted=bool(d.get("posted", False)),
            lines=_Slot(int(d["line_slot"][0]), float(d["line_slot"][1])),
            chunk=[str(line) for line in d.get("chunk", [])],
        )


def _dt(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _entry_json(e: StormEntry) -> list[Any]:
    return [e.alertname, int(e.severity), e.target, e.cluster]


def _entry(group_key: str, raw: list[Any]) -> StormEntry:
    name, severity, target, cluster = raw
    return StormEntry(str(name), Severity(int(severity)), group_key, target, cluster)


def entries_of(view: AlertGroupView) -> tuple[StormEntry, ...]:
    """The storm's count of one group: one entry per alert."""
    return tuple(StormEntry(a.name, a.severity, view.group_key, a.target, view.cluster) for a in view.alerts)


class StormDesk:
    """Decides which new groups go into a storm and keeps each channel's storm summary and thread."""

    def __init__(self, store: StormStore, outbox: Outbox, policy: StormPolicy, clock: Clock) -> None:
        self._store = store
        self._outbox = outbox
        self._policy = policy
        self._clock = clock
        self._active: dict[str, _Storm] = {}
        # Recent new groups per channel: (when, group key, entries), for the threshold and the first count.
        self._arrivals: dict[str, deque[tuple[float, str, tuple[StormEntry, ...]]]] = {}

    async def restore(self) -> None:
        """Pick up storms that were active when the process stopped."""
        for state in await self._store.groups(status=AlertStatus.FIRING):
            if is_storm_key(state.group_key) and state.details.get("kind") == "storm":
                self._active[state.channel] = _Storm.from_state(state)

    def active(self, channel: str) -> str | None:
        storm = self._active.get(channel)
        return None if storm is None else storm.key

    async def place(self, channel: str, view: AlertGroupView, revision: str) -> str | None:
        """Record a new group; the storm key when it goes into the channel's storm, else None (post it)."""
        now = self._clock()
        await self.expire(channel)
        arrivals = self._arrivals.setdefault(channel, deque())
        while arrivals and now - arrivals[0][0] > self._policy.window_seconds:
            arrivals.popleft()
        arrivals.append((now, view.group_key, entries_of(view)))
        storm = self._active.get(channel)
        if storm is None and len(arrivals) <= self._policy.groups:
            return None
        if storm is None:
            storm = self._start(channel, now)
            log.warning(
                "alert storm in %s: %d new groups within %gs", channel, len(arrivals), now - storm.started_at
            )
        storm.last_new_at = now
        await self._add(storm, view, now, revision)
        return storm.key

    async def report(self, channel: str, key: str, view: AlertGroupView, revision: str) -> None:
        """A later notification of a group that went into storm `key`: a thread line and a fresh summary."""
        storm = self._active.get(channel)
        if storm is None or storm.key != key:
            state = await self._store.get_group(channel, key)
            if state is None:
                log.error(
                    "storm %s of group %r is not in the store; the change is not shown", key, view.group_key
                )
                return
            storm = _Storm.from_state(state)
        await self._add(storm, view, self._clock(), revision)

    async def expire(self, channel: str | None = None) -> list[str]:
        """End the storms (of one channel, or all) that have been quiet long enough; their keys."""
        now = self._clock()
        ended = [
            s
            for s in list(self._active.values())
            if (channel is None or s.channel == channel) and now - s.last_new_at >= self._policy.quiet_seconds
        ]
        for storm in ended:
            storm.ended_at = storm.last_new_at
            del self._active[storm.channel]
            self._arrivals.pop(storm.channel, None)
            await self._refresh_summary(storm, now, "ended")
            await self._save(storm)
        return [s.key for s in ended]

    def next_deadline(self) -> float | None:
        """When the earliest active storm would end if nothing new arrives."""
        ends = [s.last_new_at + self._policy.quiet_seconds for s in self._active.values()]
        return min(ends, default=None)

    # -- inside ----------------------------------------------------------------------------------------
    def _start(self, channel: str, now: float) -> _Storm:
        storm = _Storm(storm_key(channel, int(now)), channel, started_at=now, last_new_at=now)
        # The groups that brought the channel over the threshold already have their own messages;
        # they still count in the summary, since they are part of the same storm.
        for _, group_key, entries in self._arrivals.get(channel, ()):
            storm.entries[group_key] = entries
        self._active[channel] = storm
        return storm

    async def _add(self, storm: _Storm, view: AlertGroupView, now: float, revision: str) -> None:
        storm.entries[view.group_key] = entries_of(view)
        await self._add_line(storm, storm_group_line(view, _dt(now)).text, now)
        await self._refresh_summary(storm, now, revision)
        await self._save(storm)

    async def _refresh_summary(self, storm: _Storm, now: float, revision: str) -> None:
        content = storm_message(storm.view(), _dt(now))
        if not storm.posted:
            await self._outbox.post(storm.channel, storm.key, content)
            storm.posted = True
        else:
            await self._outbox.update(storm.channel, storm.key, content, revision)

    async def _add_line(self, storm: _Storm, line: str, now: float) -> None:
        if now < storm.lines.open_until and len(storm.chunk) < self._policy.lines_per_reply:
            chunk = [*storm.chunk, line]
            result = await self._enqueue_lines(storm, chunk, replace=True)
            if result.replaced or not result.duplicate:
                storm.chunk = chunk
                return
        storm.lines = _Slot(storm.lines.n + 1, now + self._policy.linger_seconds / 2)
        storm.chunk = [line]
        await self._enqueue_lines(storm, storm.chunk, not_before=now + self._policy.linger_seconds)

    async def _enqueue_lines(
        self, storm: _Storm, chunk: list[str], *, replace: bool = False, not_before: float | None = None
    ) -> Enqueued:
        content = message("\n".join(chunk), [section_lines(chunk)])
        payload = {"group_key": storm.key, **content.as_kwargs()}
        key = f"reply:{storm.channel}:{storm.key}:lines:{storm.lines.n}"
        result = await self._store.enqueue(
            key, storm.channel, OutboxKind.REPLY, payload, not_before=not_before, replace_pending=replace
        )
        self._outbox.notify()
        return result

    async def _save(self, storm: _Storm) -> None:
        # Re-read right before saving: the delivery worker writes the summary's `ts` into this row.
        current = await self._store.get_group(storm.channel, storm.key)
        status = AlertStatus.FIRING if storm.ended_at is None else AlertStatus.RESOLVED
        await self._store.save_group(
            AlertGroupState(
                channel=storm.channel,
                group_key=storm.key,
                status=status,
                ts=None if current is None else current.ts,
                first_firing_at=storm.started_at,
                resolved_at=storm.ended_at,
                details={**(current.details if current else {}), **storm.details()},
            )
        )
