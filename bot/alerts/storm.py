"""Storm mode: many new alert groups in one channel become one summary message and lines in its thread.

When a channel gets more than `groups` new alert groups within `window_seconds`, further new groups are
not posted on their own: one storm summary (counts per alert and per target, the likely common cause)
is posted and edited in place, and each group becomes a compact line in its thread. The groups that
brought the channel over the threshold join the thread too when their own posts have not gone out yet
(their queued posts are folded), so the summary is the channel's next message. The storm ends after
`quiet_seconds` without a new group, and the summary says so.

Work per notification stays small and bounded however big the storm: counts are kept entry by entry
(`StormCounts`), and the summary is re-rendered and saved at most once per `linger_seconds` (a dirty
flag that `flush()` clears; the alert worker calls it from its deadline loop and between notifications).
Slack calls stay bounded by channels, not alerts: the delivery worker sends only the newest of a
message's due edits, and thread lines are gathered into replies of up to `lines_per_reply` lines (fewer
when they would not fit the reply's one section). A line reply is an outbox row due `linger` seconds after
it was opened, rewritten with more lines (`replace_pending`) only during the first half of that time, so a
row the delivery worker may already be sending is never changed under it; later lines go to the next row.

What survives a restart: each group's share of the count is saved with the group's own row (the
pipeline writes its `GroupFacts.storm_share`), and the storm's row `storm:<channel>:<n>` holds the
summary's `StormRecord`: its state and, as of its last flush, every entry. `restore()` joins both.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Protocol

from bot.alerts.outbox import Outbox
from bot.domain.alerts import AlertStatus
from bot.domain.messages import AlertGroupView
from bot.domain.storm_summary import StormCounts, StormEntry, StormView
from bot.render.blocks import MAX_SECTION_TEXT, message, section_lines, units
from bot.render.slack import storm_group_line, storm_message
from bot.store.models import AlertGroupState, Enqueued, StormRecord, StormShare

log = logging.getLogger(__name__)

Clock = Callable[[], float]
STORM_PREFIX = "storm:"


class StormStore(Protocol):
    """What storm mode needs of the store (`bot.store.Store` is one)."""

    async def get_group(self, channel: str, group_key: str) -> AlertGroupState | None: ...

    async def save_group(self, state: AlertGroupState) -> AlertGroupState: ...

    async def groups(
        self, channel: str | None = None, status: AlertStatus | None = None
    ) -> list[AlertGroupState]: ...


@dataclass(frozen=True)
class StormPolicy:
    """When a channel enters and leaves storm mode, and how its Slack calls are coalesced."""

    groups: int = 10  # more new groups than this ...
    window_seconds: float = 60.0  # ... within this many seconds start a storm
    quiet_seconds: float = 120.0  # a storm ends after this long without a new group
    linger_seconds: float = 2.0  # how long summary edits and thread lines gather before they are sent
    # When the alert queue runs empty, the storm's row (every entry) is saved at most this often.
    settle_seconds: float = 0.25
    lines_per_reply: int = 15  # group lines per thread reply, as many as its section's 3000 characters hold


def storm_key(channel: str, n: int) -> str:
    return f"{STORM_PREFIX}{channel}:{n}"


def is_storm_key(group_key: str) -> bool:
    return group_key.startswith(STORM_PREFIX)


def entries_of(view: AlertGroupView) -> tuple[StormEntry, ...]:
    """The storm's count of one group: one entry per alert."""
    return tuple(StormEntry(a.name, a.severity, view.group_key, a.target, view.cluster) for a in view.alerts)


@dataclass
class _Slot:
    """A coalescing outbox row: number `n` of a series, rewritable until `open_until`."""

    n: int
    open_until: float


@dataclass(frozen=True, slots=True)
class _Arrival:
    """A new group of the storm window: when it came, its count and its thread line."""

    at: float
    group_key: str
    entries: tuple[StormEntry, ...]
    line: str


@dataclass
class _Storm:
    """One storm in one channel."""

    key: str
    channel: str
    started_at: float
    last_new_at: float
    entries: dict[str, tuple[StormEntry, ...]] = field(default_factory=dict)
    counts: StormCounts = field(default_factory=StormCounts)
    ended_at: float | None = None
    posted: bool = False
    lines: _Slot = field(default_factory=lambda: _Slot(-1, 0.0))
    chunk: list[str] = field(default_factory=list)
    dirty: bool = False  # the summary in the outbox is older than the counts
    unsaved: bool = False  # the storm's row is older than the counts
    flushed_at: float = float("-inf")
    saved_at: float = float("-inf")
    flushes: int = 0

    def count(self, group_key: str, entries: tuple[StormEntry, ...]) -> None:
        """Replace the group's entries, adjusting the running counts by the difference only."""
        for old in self.entries.get(group_key, ()):
            self.counts.remove(old)
        for new in entries:
            self.counts.add(new)
        self.entries[group_key] = entries
        self.dirty = self.unsaved = True

    def view(self) -> StormView:
        ended = None if self.ended_at is None else _dt(self.ended_at)
        return StormView.of(self.counts, _dt(self.started_at), ended)

    def record(self) -> StormRecord:
        return StormRecord(self.started_at, self.last_new_at, self.ended_at, self.posted, dict(self.entries))

    @classmethod
    def from_record(cls, key: str, channel: str, record: StormRecord, now: float) -> _Storm:
        storm = cls(
            key=key,
            channel=channel,
            started_at=record.started_at,
            last_new_at=record.last_new_at,
            ended_at=record.ended_at,
            posted=record.posted,
            # Line rows numbered after the last flush may exist: continue in a series of our own.
            lines=_Slot(int(now * 1000), 0.0),
        )
        for group_key, entries in record.entries.items():
            storm.count(group_key, entries)
        return storm


def _dt(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


class StormDesk:
    """Decides which new groups go into a storm and keeps each channel's storm summary and thread."""

    def __init__(self, store: StormStore, outbox: Outbox, policy: StormPolicy, clock: Clock) -> None:
        self._store = store
        self._outbox = outbox
        self._policy = policy
        self._clock = clock
        self._active: dict[str, _Storm] = {}
        # Recent new groups per channel, for the threshold and the storm's first count and lines.
        self._arrivals: dict[str, deque[_Arrival]] = {}

    async def restore(self) -> None:
        """Pick up storms that were active when the process stopped, with every group's latest count.

        What this process held in memory is dropped first: another replica may have moved the storms on
        while this one was not the leader."""
        self._active.clear()
        self._arrivals.clear()
        for state in await self._store.groups(status=AlertStatus.FIRING):
            if is_storm_key(state.group_key) and state.storm is not None:
                storm = _Storm.from_record(state.group_key, state.channel, state.storm, self._clock())
                await self._recount_from_groups(storm)
                storm.dirty = True  # the summary may lag the counts saved with the groups
                self._active[state.channel] = storm

    def active(self, channel: str) -> str | None:
        storm = self._active.get(channel)
        return None if storm is None else storm.key

    async def place(self, channel: str, view: AlertGroupView) -> str | None:
        """Record a new group; the storm key when it goes into the channel's storm, else None (post it)."""
        now = self._clock()
        await self.expire(channel)
        arrivals = self._arrivals.setdefault(channel, deque())
        while arrivals and now - arrivals[0].at > self._policy.window_seconds:
            arrivals.popleft()
        line = storm_group_line(view, _dt(now)).text
        arrivals.append(_Arrival(now, view.group_key, entries_of(view), line))
        storm = self._active.get(channel)
        if storm is None and len(arrivals) <= self._policy.groups:
            return None
        if storm is None:
            storm = self._start(channel, now)
            # The summary's post goes first: the thread lines wait for it, and it is the channel's next
            # message (the storm's first groups join its thread when their posts have not gone out).
            await self._flush(storm, now, "start")
            await self._fold_arrivals(storm, now)
        else:
            storm.count(view.group_key, entries_of(view))
        storm.last_new_at = now
        await self._add_line(storm, line, now)
        return storm.key

    async def report(self, channel: str, key: str, view: AlertGroupView) -> None:
        """A later notification of a group that went into storm `key`: a thread line and a fresh count."""
        storm = self._active.get(channel)
        if storm is None or storm.key != key:
            await self._report_to_ended(channel, key, view)
            return
        now = self._clock()
        storm.count(view.group_key, entries_of(view))
        await self._add_line(storm, storm_group_line(view, _dt(now)).text, now)

    def recount(self, channel: str, view: AlertGroupView) -> str | None:
        """A later notification of a group with its own message: its count in the channel's storm, if
        the storm counts it (it was one of the groups that started it); the storm's key, else None."""
        storm = self._active.get(channel)
        if storm is None or view.group_key not in storm.entries:
            return None
        storm.count(view.group_key, entries_of(view))
        return storm.key

    async def flush(self, *, settle: bool = False) -> bool:
        """Send and save the summaries that changed, at most once per linger; True when every storm's
        row is current. With `settle` (the alert queue ran empty) a row lagging its counts is saved,
        at most once per `settle_seconds`, without a Slack call."""
        now = self._clock()
        for storm in list(self._active.values()):
            if storm.dirty and now - storm.flushed_at >= self._policy.linger_seconds:
                await self._flush(storm, now, f"summary:{int(now * 1000)}:{storm.flushes}")
            elif settle and storm.unsaved and now - storm.saved_at >= self._policy.settle_seconds:
                await self._save(storm, now)
        return not any(s.unsaved for s in self._active.values())

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
            await self._flush(storm, now, "ended")
        return [s.key for s in ended]

    def next_deadline(self) -> float | None:
        """When `flush` or `expire` next has something to do (wall-clock seconds), if ever."""
        ends = [s.last_new_at + self._policy.quiet_seconds for s in self._active.values()]
        ends += [s.flushed_at + self._policy.linger_seconds for s in self._active.values() if s.dirty]
        ends += [s.saved_at + self._policy.settle_seconds for s in self._active.values() if s.unsaved]
        return min(ends, default=None)

    # -- inside ----------------------------------------------------------------------------------------
    def _start(self, channel: str, now: float) -> _Storm:
        arrivals = self._arrivals.get(channel, deque())
        storm = _Storm(storm_key(channel, int(now)), channel, started_at=now, last_new_at=now)
        log.warning(
            "alert storm in %s: %d new groups within %gs", channel, len(arrivals), now - arrivals[0].at
        )
        self._active[channel] = storm
        # The groups that brought the channel over the threshold (and this one, the last) are counted.
        for arrival in arrivals:
            storm.count(arrival.group_key, arrival.entries)
        return storm

    async def _fold_arrivals(self, storm: _Storm, now: float) -> None:
        """Move the storm's first groups into its thread when their own posts have not gone out yet."""
        for arrival in list(self._arrivals.get(storm.channel, ()))[:-1]:
            if await self._fold(storm, arrival.group_key):
                await self._add_line(storm, arrival.line, now)

    async def _fold(self, storm: _Storm, group_key: str) -> bool:
        """Take a group's queued post back and make its storm line its only trace; False if it went out."""
        if not await self._outbox.withdraw_post(storm.channel, group_key, folded_into=storm.key):
            return False
        state = await self._store.get_group(storm.channel, group_key)
        if state is not None:
            share = StormShare(storm.key, storm.entries[group_key])
            facts = replace(state.facts, storm_thread=storm.key, storm_share=share)
            await self._store.save_group(replace(state, facts=facts))
        return True

    async def _report_to_ended(self, channel: str, key: str, view: AlertGroupView) -> None:
        """A group of a storm that is over: its line still goes into that storm's thread."""
        state = await self._store.get_group(channel, key)
        if state is None or state.storm is None:
            log.error(
                "storm %s of group %r is not in the store; the change is not shown", key, view.group_key
            )
            return
        now = self._clock()
        storm = _Storm.from_record(key, channel, state.storm, now)
        storm.count(view.group_key, entries_of(view))
        await self._add_line(storm, storm_group_line(view, _dt(now)).text, now)
        await self._flush(storm, now, f"late:{int(now * 1000)}")

    async def _recount_from_groups(self, storm: _Storm) -> None:
        for group in await self._store.groups(channel=storm.channel):
            share = group.facts.storm_share
            if share is not None and share.storm == storm.key:
                storm.count(group.group_key, share.entries)

    async def _flush(self, storm: _Storm, now: float, revision: str) -> None:
        content = storm_message(storm.view(), _dt(now))
        if not storm.posted:
            await self._outbox.post(storm.channel, storm.key, content)
            storm.posted = True
        else:
            await self._outbox.update(storm.channel, storm.key, content, revision)
        storm.dirty, storm.flushed_at, storm.flushes = False, now, storm.flushes + 1
        await self._save(storm, now)

    async def _add_line(self, storm: _Storm, line: str, now: float) -> None:
        chunk = [*storm.chunk, line]
        # A reply is one section: lines beyond its 3000 characters would be cut off ("… +N more"), lost.
        fits = len(chunk) <= self._policy.lines_per_reply and units("\n".join(chunk)) <= MAX_SECTION_TEXT
        if now < storm.lines.open_until and fits:
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
        revision = f"lines:{storm.lines.n}"
        return await self._outbox.reply(
            storm.channel, storm.key, content, revision, not_before=not_before, replace_pending=replace
        )

    async def _save(self, storm: _Storm, now: float) -> None:
        storm.unsaved, storm.saved_at = False, now
        # `ts` None keeps the one the delivery worker stored; the record is the storm desk's alone.
        status = AlertStatus.FIRING if storm.ended_at is None else AlertStatus.RESOLVED
        await self._store.save_group(
            AlertGroupState(
                channel=storm.channel,
                group_key=storm.key,
                status=status,
                first_firing_at=storm.started_at,
                resolved_at=storm.ended_at,
                storm=storm.record(),
            )
        )
