"""Storm mode: many new alert groups in one channel become one summary message and one table of targets.

When a channel gets more than `groups` new alert groups within `window_seconds`, further new groups are
not posted on their own, and the groups that brought the channel over the threshold join the storm too
when their own posts have not gone out yet (their queued posts are folded; one that went out keeps its
message, edited only when the group resolves or fires again while the storm lasts: the summary counts its
other changes, and its message is brought up to date once when the storm ends). Once the storm's changes
pause (`gather_seconds` without a new group or a changed count, and at most `first_within_seconds` after
it started; or the worker has applied the newest arrival and it came `gather_seconds` ago or more,
which only one replica on SQLite can know) one summary is posted: every target's live state grouped per
client cluster, the common cause with its evidence, counts per alert. Every target with its state now goes
into the summary's thread as one table (cluster, target, alerts, state now, since): a reply holding
Slack's own `table` block up to 99 targets, a file beyond (`bot.render.storm`), with the summary or,
when the storm still changes at its latest, once the changes pause (at most `table_within_seconds` after
the start; the summary is edited with it). Meanwhile the summary's count is edited as the storm grows,
`grow_seconds` after the post, then each edit `grow_factor` times as long after the one before: however
the alerts arrive (one Alertmanager batch, a trickle of webhooks over 20 s), the storm is whole in Slack
`gather_seconds` after its last change, in a handful of calls (when the worker was behind and nothing
arrived for that long, as soon as it has applied the newest arrival: on SQLite, where one process takes
every notification in). A storm of 500 targets arriving together costs one post and one upload.

Once the table is in the thread, later changes (new targets, resolves) edit the summary and replace the
table at most once per `refresh_seconds`, and only when what they show changed: the table reply is
edited in place; a file is replaced (the new one uploaded, the old one deleted); a storm outgrowing
Slack's table gets a file for good, and its table reply says where the table went. A storm whose
alerts have all resolved is edited to resolved, with its duration; one without a new group for
`quiet_seconds` ends (the summary says so), and later changes of its groups still edit its summary.

Work per notification stays small and bounded however big the storm: counts are kept entry by entry
(`StormCounts`); the live reads, the rows and the rendering happen only when the summary is sent.

What survives a restart: each group's share of the count is saved with the group's own row (the
pipeline writes its `GroupFacts.storm_share`), and the storm's row `storm:<channel>:<n>` holds the
summary's `StormRecord`: its state, the table in its thread and, as of its last save, every entry.
`restore()` joins both. The storm's row is saved when it starts, before any group is folded into it, and
a folded group is marked as the storm's before its post is withdrawn: `restore()` finishes a fold a kill
interrupted (the post withdrawn now), or gives the group its own message back when its post went out.

Below: one storm as the storm desk keeps it (`Storm`: its running counts in memory, its record in the
store), and the live reads behind its summary and table (`StormReads`: each cluster read once, within a
budget). The cluster reads are `bot.live.LiveState`'s, shared and cached: in a storm the pipeline has just
read the same clusters for the alerts, so these answer from the cache. A read that is late is not waited for
(its targets show "not read"); it goes on for the next caller, since a shared read outlives one that stops
waiting. Every target's state is worked out once per snapshot read, in one pass over it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from bot.alerts.outbox import Outbox
from bot.domain.alerts import AlertStatus
from bot.domain.messages import ActionRef, AlertGroupView, GroupStatus
from bot.domain.moments import from_epoch
from bot.domain.snapshot import ProxySnapshot
from bot.domain.storm import (
    StormCounts,
    StormEntry,
    StormRow,
    StormView,
    TargetLive,
    TargetsRead,
    live_by_target,
    storm_rows,
)
from bot.live import ClusterRead
from bot.ports import Clock
from bot.render.blocks import Message
from bot.render.storm import (
    TABLE_BLOCK_TARGETS,
    TableFile,
    storm_message,
    storm_table,
    storm_table_reply,
)
from bot.store.base import GroupStore
from bot.store.models import AlertGroupState, StormRecord, StormShare, Withdrawal


@dataclass(frozen=True, slots=True)
class NewGroup:
    """A new group of the storm window: when it came, and its count."""

    at: float
    group_key: str
    entries: tuple[StormEntry, ...]
    member: bool = False  # joined an incident's message: counted, but no post of its own to fold


@dataclass
class Storm:
    """One storm in one channel."""

    key: str
    channel: str
    started_at: float
    last_new_at: float
    changed_at: float = float("-inf")  # the last new group or changed count (in memory only)
    grown: int = 0  # edits of the count before the table (in memory only)
    entries: dict[str, tuple[StormEntry, ...]] = field(default_factory=dict)
    counts: StormCounts = field(default_factory=StormCounts)
    ended_at: float | None = None
    posted: bool = False
    table: str | None = None  # the revision of the table in the thread (`TABLE_REPLY`'s, or an upload's)
    refreshed_at: float = float("-inf")
    dirty: bool = False  # the summary in Slack may be older than the counts
    unsaved: bool = False  # the storm's row is older than the counts
    saved_at: float = float("-inf")
    shown: tuple[object, ...] | None = None  # the signature of the summary last sent
    tabled: tuple[StormRow, ...] | None = None  # the rows of the table last uploaded

    def __post_init__(self) -> None:
        self.changed_at = max(self.changed_at, self.last_new_at)

    def count(self, group_key: str, entries: tuple[StormEntry, ...]) -> None:
        """Replace the group's entries, adjusting the running counts by the difference only."""
        for old in self.entries.get(group_key, ()):
            self.counts.remove(old)
        for new in entries:
            self.counts.add(new)
        self.entries[group_key] = entries
        self.dirty = self.unsaved = True

    def all_entries(self) -> list[StormEntry]:
        return [e for found in self.entries.values() for e in found]

    def clusters(self) -> set[str]:
        return {e.cluster for e in self.all_entries() if e.cluster is not None}

    def view(self, rows: tuple[StormRow, ...]) -> StormView:
        ended = None if self.ended_at is None else from_epoch(self.ended_at)
        return StormView.of(self.counts, from_epoch(self.started_at), ended, rows)

    def record(self) -> StormRecord:
        return StormRecord(
            self.started_at,
            self.last_new_at,
            self.ended_at,
            self.posted,
            dict(self.entries),
            table=self.table,
            refreshed_at=None if self.refreshed_at == float("-inf") else self.refreshed_at,
        )

    @classmethod
    def from_record(cls, key: str, channel: str, record: StormRecord) -> Storm:
        storm = cls(
            key=key,
            channel=channel,
            started_at=record.started_at,
            last_new_at=record.last_new_at,
            ended_at=record.ended_at,
            posted=record.posted,
            table=record.table,
            refreshed_at=float("-inf") if record.refreshed_at is None else record.refreshed_at,
        )
        for group_key, entries in record.entries.items():
            storm.count(group_key, entries)
        return storm


class LiveReader(Protocol):
    """Live proxy state per cluster (`bot.live.LiveState` is one); failures are returned, never raised."""

    async def read(self, cluster: str) -> ClusterRead: ...


class StormReads:
    """Reads the storm's clusters for its table; remembers each snapshot's targets."""

    def __init__(self, live: LiveReader | None, budget: float) -> None:
        self._live = live
        self._budget = budget
        self._seen: dict[str, tuple[ProxySnapshot, Mapping[str, TargetLive]]] = {}

    async def read(self, clusters: Iterable[str]) -> dict[str, TargetsRead]:
        """Every cluster's targets with their state now, or why the cluster was not read."""
        names = sorted(set(clusters))
        if self._live is None:
            return {name: TargetsRead(None, "no live state source") for name in names}
        live = self._live
        tasks = {name: asyncio.create_task(live.read(name), name=f"storm-read-{name}") for name in names}
        if tasks:
            await asyncio.wait(tasks.values(), timeout=self._budget)
        late = [task for task in tasks.values() if not task.done()]
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        return {name: await self._targets(name, task) for name, task in tasks.items()}

    async def _targets(self, cluster: str, task: asyncio.Task[ClusterRead]) -> TargetsRead:
        if task.cancelled():
            return TargetsRead(None, f"not read within {self._budget:g} s")
        error = task.exception()
        if error is not None:
            return TargetsRead(None, f"read failed: {type(error).__name__}")
        read = task.result()
        if read.snapshot is None:
            return TargetsRead(None, read.unavailable or "no live state")
        seen = self._seen.get(cluster)
        if seen is None or seen[0] is not read.snapshot:
            # A page of hundreds of targets: read off the event loop (the snapshot is never changed).
            found = await asyncio.to_thread(live_by_target, read.snapshot, read.window)
            seen = (read.snapshot, found)
            self._seen[cluster] = seen
        return TargetsRead(seen[1])


log = logging.getLogger(__name__)

STORM_PREFIX = "storm:"
# The storm's table as it goes to Slack: a reply holding a table block, or a file.
Table = Message | TableFile
# The name of the storm's table reply (`Outbox.reply_in_place`), and the prefix of its revisions: a
# table revision without it names an upload (a file).
TABLE_REPLY = "table"
TABLE_REPLY_REVISION = "block:"


def is_table_reply(revision: str | None) -> bool:
    return revision is not None and revision.startswith(TABLE_REPLY_REVISION)


@dataclass(frozen=True)
class StormPolicy:
    """When a channel enters and leaves storm mode, and how often its summary and table change."""

    groups: int = 10  # more new groups than this ...
    window_seconds: float = 60.0  # ... within this many seconds start a storm
    quiet_seconds: float = 120.0  # a storm ends after this long without a new group
    gather_seconds: float = 0.5  # the first summary and the table wait for the storm's changes to pause
    first_within_seconds: float = 1.5  # ... the summary at most this long after the storm started ...
    table_within_seconds: float = 60.0  # ... and the table at most this long, while the storm still changes
    grow_seconds: float = 4.0  # until the table, the summary's count is edited this long after the post,
    grow_factor: float = 4.0  # then each edit this many times as long after the one before: a 20 s
    # trickle gets one growth edit (its table, with the last edit, follows once it pauses)
    refresh_seconds: float = 30.0  # later changes edit the summary and replace the table at most this often
    # When the alert queue runs empty, the storm's row (every entry) is saved at most this often.
    settle_seconds: float = 0.25
    read_seconds: float = 1.0  # the live reads behind the summary wait at most this long


def storm_key(channel: str, n: int) -> str:
    return f"{STORM_PREFIX}{channel}:{n}"


def is_storm_key(group_key: str) -> bool:
    return group_key.startswith(STORM_PREFIX)


def entries_of(view: AlertGroupView) -> tuple[StormEntry, ...]:
    """The storm's count of one group: one entry per alert."""
    return tuple(
        StormEntry(
            a.name,
            a.severity,
            view.group_key,
            a.target,
            view.cluster,
            since=a.starts_at.timestamp(),
            ended=None if a.status is GroupStatus.FIRING else (a.ends_at or a.starts_at).timestamp(),
        )
        for a in view.alerts
    )


# A storm whose alerts have all resolved: (channel, storm key, started at, resolved at).
StormResolved = Callable[[str, str, float, float], Awaitable[None]]


class StormDesk:
    """Decides which new groups go into a storm and keeps each channel's storm summary and table."""

    def __init__(
        self,
        store: GroupStore,
        outbox: Outbox,
        policy: StormPolicy,
        clock: Clock,
        live: LiveReader | None = None,
        resolved: StormResolved | None = None,
        *,
        told: Clock | None = None,
    ) -> None:
        # Told when a storm's alerts have all resolved: its resolution summary (`bot.alerts.resolution`).
        self._resolved = resolved
        self._store = store
        self._outbox = outbox
        self._policy = policy
        self._clock = clock  # paces the storm: its window, pauses, refreshes
        self._told = told or clock  # the time its summary and table show
        self._reads = StormReads(live, policy.read_seconds)
        self._active: dict[str, Storm] = {}
        # Recent new groups per channel, for the threshold and the storm's first count.
        self._arrivals: dict[str, deque[NewGroup]] = {}

    async def restore(self) -> None:
        """Pick up storms that were active when the process stopped, with every group's latest count.

        What this process held in memory is dropped first: another replica may have moved the storms on
        while this one was not the leader."""
        self._active.clear()
        self._arrivals.clear()
        for state in await self._store.groups(status=AlertStatus.FIRING):
            if is_storm_key(state.group_key) and state.storm is not None:
                storm = Storm.from_record(state.group_key, state.channel, state.storm)
                await self._recount_from_groups(storm)
                storm.dirty = True  # the summary may lag the counts saved with the groups
                self._active[state.channel] = storm

    async def place(self, channel: str, view: AlertGroupView) -> str | None:
        """Record a new group; the storm key when it goes into the channel's storm, else None (post it)."""
        now = self._clock()
        await self.expire(channel)
        arrivals = self._arrivals.setdefault(channel, deque())
        while arrivals and now - arrivals[0].at > self._policy.window_seconds:
            arrivals.popleft()
        arrivals.append(NewGroup(now, view.group_key, entries_of(view)))
        storm = self._active.get(channel)
        if storm is None and sum(not a.member for a in arrivals) <= self._policy.groups:
            return None
        if storm is None:
            storm = self._start(channel, now)
            # Saved before any group is folded into it: a group marked as the storm's always finds it.
            await self._save(storm, now)
            await self._fold_arrivals(storm)
        else:
            storm.count(view.group_key, entries_of(view))
        storm.last_new_at = storm.changed_at = now
        return storm.key

    async def report(self, channel: str, key: str, view: AlertGroupView) -> None:
        """A later notification of a group that went into storm `key`: a fresh count."""
        storm = self._active.get(channel)
        if storm is None or storm.key != key:
            await self._report_to_ended(channel, key, view)
            return
        storm.count(view.group_key, entries_of(view))
        storm.changed_at = self._clock()

    def count_member(self, channel: str, view: AlertGroupView, *, new: bool) -> None:
        """A group that joined an incident's message (`new`: its first notification): no message of its
        own, but its alerts are the channel's too. Counted in the channel's storm, the one lasting or the
        one its arrival is part of (it brings no storm on: it posts nothing)."""
        now, entries = self._clock(), entries_of(view)
        if new:
            self._arrivals.setdefault(channel, deque()).append(
                NewGroup(now, view.group_key, entries, member=True)
            )
        storm = self._active.get(channel)
        if storm is None or not (new or view.group_key in storm.entries):
            return
        storm.count(view.group_key, entries)
        storm.changed_at = now

    def recount(self, channel: str, view: AlertGroupView) -> str | None:
        """A later notification of a group with its own message: its count in the channel's storm, if
        the storm counts it (it was one of the groups that started it); the storm's key, else None."""
        storm = self._active.get(channel)
        if storm is None or view.group_key not in storm.entries:
            return None
        storm.count(view.group_key, entries_of(view))
        storm.changed_at = self._clock()
        return storm.key

    async def flush(
        self, *, settle: bool = False, caught_up: Callable[[], float | None] | None = None
    ) -> bool:
        """Send the summaries and tables that are due, and end storms whose alerts all resolved; True
        when every storm's row is current. With `settle` (the alert queue ran empty) a row lagging its
        counts is saved, at most once per `settle_seconds`, without a Slack call. A growing storm's count
        is edited only then too: while a burst is still being applied, the table follows as soon as it
        is, and an edit before it would be one posting call more for nothing. `caught_up()`: when the
        newest notification there is arrived, if the worker has applied it (None: a newer one arrived
        since, or it cannot be known); with `settle`, `gather_seconds` or more ago, the storm's changes
        paused before the worker applied them, and its table goes now."""
        now = self._clock()

        def quiet() -> bool:  # asked anew for each storm: publishing one awaits reads
            arrived = None if caught_up is None or not settle else caught_up()
            return arrived is not None and self._clock() - arrived >= self._policy.gather_seconds

        for storm in list(self._active.values()):
            if storm.counts.alerts and not storm.counts.firing:
                await self._end(storm, now, resolved=True)
            elif not storm.posted and (now >= self._first_due(storm) or quiet()):
                table = self._table_now(storm, now, settle) or quiet()
                await self._publish(storm, now, "first", table=table)
            elif storm.posted and storm.table is None and (self._table_now(storm, now, settle) or quiet()):
                await self._publish(storm, now, "table")
            elif (
                storm.posted
                and storm.table is None
                and storm.dirty
                and settle
                and now >= self._grow_due(storm)
            ):
                storm.grown += 1
                # Named by its moment, as refreshes are: `grown` is in memory only, so after a restart
                # `grow:1` would name an edit the dead process already sent, and the outbox would drop it.
                await self._publish(storm, now, f"grow:{int(now * 1000)}", table=False)
            elif storm.posted and storm.dirty and now - storm.refreshed_at >= self._policy.refresh_seconds:
                await self._publish(storm, now, f"refresh:{int(now * 1000)}")
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
            await self._end(storm, now, resolved=False)
        return [s.key for s in ended]

    def next_deadline(self) -> float | None:
        """When `flush` or `expire` next has something to do (wall-clock seconds), if ever."""
        policy = self._policy
        storms = self._active.values()
        ends = [s.last_new_at + policy.quiet_seconds for s in storms]
        ends += [self._first_due(s) for s in storms if not s.posted]
        ends += [self._table_due(s) for s in storms if s.posted and s.table is None]
        ends += [self._grow_due(s) for s in storms if s.posted and s.table is None and s.dirty]
        ends += [s.refreshed_at + policy.refresh_seconds for s in storms if s.posted and s.dirty]
        ends += [s.saved_at + policy.settle_seconds for s in storms if s.unsaved]
        return min(ends, default=None)

    # -- inside ----------------------------------------------------------------------------------------
    def _first_due(self, storm: Storm) -> float:
        gathered = storm.changed_at + self._policy.gather_seconds
        return min(gathered, storm.started_at + self._policy.first_within_seconds)

    def _table_due(self, storm: Storm) -> float:
        gathered = storm.changed_at + self._policy.gather_seconds
        return min(gathered, storm.started_at + self._policy.table_within_seconds)

    def _grow_due(self, storm: Storm) -> float:
        """The next edit of a growing storm's count: `grow_seconds` after the last, `grow_factor` times
        longer each time."""
        return storm.refreshed_at + self._policy.grow_seconds * self._policy.grow_factor**storm.grown

    def _table_now(self, storm: Storm, now: float, settle: bool) -> bool:
        """Whether the table goes now: the changes paused with nothing left to apply (`settle`: a pause
        while the worker was busy rendering the summary is no pause), or it is the latest it may go.
        (Or, in `flush`, the worker caught up with senders quiet for `gather_seconds`: a backlog applied
        after they paused, a fleet's storm, waits no longer.)"""
        latest = storm.started_at + self._policy.table_within_seconds
        return now >= latest or (settle and now >= self._table_due(storm))

    def _start(self, channel: str, now: float) -> Storm:
        arrivals = self._arrivals.get(channel, deque())
        # Its start is a time the summary shows (and its acknowledgement counts from): told, not paced.
        storm = Storm(storm_key(channel, int(now)), channel, started_at=self._told(), last_new_at=now)
        log.warning(
            "alert storm in %s: %d new groups within %gs", channel, len(arrivals), now - arrivals[0].at
        )
        self._active[channel] = storm
        # The groups that brought the channel over the threshold (and this one, the last) are counted.
        for arrival in arrivals:
            storm.count(arrival.group_key, arrival.entries)
        return storm

    async def _fold_arrivals(self, storm: Storm) -> None:
        """Fold the storm's first groups into it when their own posts have not gone out yet."""
        for arrival in list(self._arrivals.get(storm.channel, ()))[:-1]:
            if not arrival.member:  # its incident's message carries it
                await self._fold(storm, arrival.group_key)

    async def _fold(self, storm: Storm, group_key: str) -> None:
        """Take a group's queued post back and make the storm its only trace (unless it went out, or it is
        an incident's first message: the groups that joined it show nowhere else).

        The group is marked as the storm's before its post is withdrawn, and unmarked when the post went
        out: killed in between, `restore` finishes the fold (the mark is saved, the post still queued)."""
        state = await self._store.get_group(storm.channel, group_key)
        if state is None:
            # Its notification was not applied to the end (its row comes after its post): the post, if
            # queued, is withdrawn, and the notification, applied again, finds the storm.
            await self._outbox.withdraw_post(storm.channel, group_key, folded_into=storm.key)
            return
        if state.facts.members:
            return
        share = StormShare(storm.key, storm.entries[group_key])
        marked = replace(state, facts=replace(state.facts, storm_thread=storm.key, storm_share=share))
        await self._store.save_group(marked)
        fate = await self._outbox.withdraw_post(storm.channel, group_key, folded_into=storm.key)
        if fate is Withdrawal.OUT:
            # It has its own message: its changes go there, and its alerts still count in the storm (as
            # `_finish_fold` leaves a group whose post went out).
            await self._store.save_group(replace(marked, facts=replace(marked.facts, storm_thread=None)))

    async def _end(self, storm: Storm, now: float, *, resolved: bool) -> None:
        """The storm is over: resolved (every alert), or quiet (no new group for `quiet_seconds`)."""
        storm.ended_at = now if resolved else storm.last_new_at
        del self._active[storm.channel]
        self._arrivals.pop(storm.channel, None)
        await self._send_held(storm)
        await self._publish(storm, now, "resolved" if resolved else "ended")
        if resolved and self._resolved is not None:
            await self._resolved(storm.channel, storm.key, storm.started_at, now)

    async def _send_held(self, storm: Storm) -> None:
        """Each group posted before the storm whose own message was held back while it lasted: brought up
        to date now, once (the edit is keyed by the storm; a re-run after a kill queues nothing new)."""
        for group in await self._store.groups(channel=storm.channel):
            facts, share = group.facts, group.facts.storm_share
            if facts.held_message is None or share is None or share.storm != storm.key:
                continue
            held = facts.held_message
            message = Message(text=str(held.get("text", "")), blocks=tuple(held.get("blocks") or ()))
            await self._outbox.update(storm.channel, group.group_key, message, f"after:{storm.key}")
            await self._store.save_group(replace(group, facts=replace(facts, held_message=None)))

    async def _report_to_ended(self, channel: str, key: str, view: AlertGroupView) -> None:
        """A group of a storm that is over: its summary still counts the change."""
        state = await self._store.get_group(channel, key)
        if state is None or state.storm is None:
            log.error(
                "storm %s of group %r is not in the store; the change is not shown", key, view.group_key
            )
            return
        now = self._clock()
        storm = Storm.from_record(key, channel, state.storm)
        was_firing = storm.counts.firing > 0
        storm.count(view.group_key, entries_of(view))
        resolved_now = was_firing and storm.counts.firing == 0
        if resolved_now:
            storm.ended_at = now
        # Its table is replaced once more when the last alert resolves, not on every change.
        await self._publish(storm, now, f"late:{int(now * 1000)}", table=resolved_now)
        if resolved_now and self._resolved is not None:
            await self._resolved(channel, key, storm.started_at, now)

    async def _recount_from_groups(self, storm: Storm) -> None:
        for group in await self._store.groups(channel=storm.channel):
            share = group.facts.storm_share
            if share is None or share.storm != storm.key:
                continue
            storm.count(group.group_key, share.entries)
            if group.facts.storm_thread == storm.key:
                await self._finish_fold(storm, group)

    async def _finish_fold(self, storm: Storm, group: AlertGroupState) -> None:
        """A group marked as the storm's whose post the process may have been killed before withdrawing:
        withdrawn now (again is harmless), or, when it went out after all (its `ts` recorded, or on its
        way), back to its own message."""
        fate = Withdrawal.OUT
        if group.ts is None:
            fate = await self._outbox.withdraw_post(storm.channel, group.group_key, folded_into=storm.key)
        if fate is Withdrawal.OUT:
            await self._store.save_group(replace(group, facts=replace(group.facts, storm_thread=None)))

    async def _publish(self, storm: Storm, now: float, revision: str, *, table: bool = True) -> None:
        """The summary (posted, or edited when what it shows changed) and, with `table`, the table
        (uploaded when its rows changed, the one it replaces deleted); then the storm's row is saved."""
        reads = await self._reads.read(storm.clusters())
        entries, at = storm.all_entries(), from_epoch(self._told())

        def compose() -> tuple[tuple[StormRow, ...], Message, tuple[object, ...], Table | None]:
            rows = storm_rows(entries, reads)
            view = storm.view(rows)
            changed = table and bool(rows) and rows != storm.tabled
            shown_table: Table | None = None
            # Once a file (the storm outgrew Slack's table), the table stays one.
            fits = len(rows) <= TABLE_BLOCK_TARGETS and (storm.table is None or is_table_reply(storm.table))
            if changed and fits:
                shown_table = storm_table_reply(view, at)
            elif changed:
                shown_table = storm_table(view, at, storm.channel)
            ack = ActionRef.for_group(None, None, storm.key).encode()
            return rows, storm_message(view, at, ack=ack), view.signature(), shown_table

        # Hundreds of rows rendered twice: off the event loop, so webhooks are answered meanwhile. The
        # storm's counts do not change under it: notifications are applied one at a time, and this waits.
        rows, content, shown, new_table = await asyncio.to_thread(compose)
        if not storm.posted:
            await self._outbox.post(storm.channel, storm.key, content)
            storm.posted = True
        elif shown != storm.shown:
            await self._outbox.update(storm.channel, storm.key, content, revision)
        storm.shown = shown
        if isinstance(new_table, Message):
            await self._reply_table(storm, new_table, now)
            storm.tabled = rows
        elif new_table is not None:
            await self._upload_table(storm, new_table, now)
            storm.tabled = rows
        storm.dirty, storm.refreshed_at = False, now
        await self._save(storm, now)

    async def _reply_table(self, storm: Storm, table: Message, now: float) -> None:
        """The table as Slack's own table block: the storm's table reply, posted once, edited after."""
        revision = f"{TABLE_REPLY_REVISION}{int(now * 1000)}"
        await self._outbox.reply_in_place(
            storm.channel, storm.key, table, reply=TABLE_REPLY, revision=revision
        )
        storm.table = revision

    async def _upload_table(self, storm: Storm, file: TableFile, now: float) -> None:
        revision = f"table:{int(now * 1000)}"
        replaced = None if is_table_reply(storm.table) else storm.table
        await self._outbox.upload_file(
            storm.channel,
            storm.key,
            file.content,
            filename=file.filename,
            title=file.title,
            revision=revision,
            replaces=replaced,
        )
        # Outgrown Slack's table (a storm past 99 targets): the file follows the table's reply in the thread.
        if replaced is not None and replaced != revision:
            await self._outbox.delete_upload(storm.channel, storm.key, upload=replaced, replaced_by=revision)
        storm.table = revision

    async def _save(self, storm: Storm, now: float) -> None:
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
