"""The SQLite store: the one place that knows SQL; async methods, all sqlite work on one store thread.

Durability: the database runs in WAL mode with `synchronous=NORMAL` by default. A transaction is in the
WAL file (the operating system's page cache) when COMMIT returns, so it survives the proxybot process
being killed (SIGKILL, OOM kill, crash); only a power loss or kernel crash can lose the last transactions
before the next checkpoint. `synchronous="FULL"` also fsyncs the WAL on every commit, surviving power
loss at the price of an fsync per commit. Concurrent accepts are group-committed (`arrivals.py`), so
a storm costs one commit per batch either way; NORMAL stays the default because an fsync per batch
still costs a loaded host tens of milliseconds of webhook p99. Choose FULL where losing the last
accepted notifications to a power cut of the bot's host matters more than storm latency.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import urlsplit

from bot.domain.alerts import AlertmanagerWebhook, AlertStatus
from bot.domain.escalation import Escalation, EscalationOutcome
from bot.domain.resolution import EventKind, OncallEvent
from bot.ports import Clock
from bot.store import acks as ack_sql
from bot.store import digests as digest_sql
from bot.store import escalations as escalation_sql
from bot.store import groups as group_sql
from bot.store import leases as lease_sql
from bot.store import notifications as notification_sql
from bot.store import oncall as oncall_sql
from bot.store import outbox as outbox_sql
from bot.store import silences_made as silences_sql
from bot.store import write_probe as probe_sql
from bot.store.arrivals import ArrivalQueue
from bot.store.digests import DigestRun, FleetSample
from bot.store.errors import StoreError
from bot.store.models import (
    Accepted,
    Acknowledgement,
    AlertGroupState,
    DigestClaim,
    Enqueued,
    OutboxItem,
    OutboxKind,
    StoredNotification,
)
from bot.store.schema import migrate
from bot.store.thread import ConnectionThread

Synchronous = Literal["NORMAL", "FULL"]
# How long a statement waits for another process's write lock before failing (then the intake says 503).
BUSY_TIMEOUT_SECONDS = 5.0
MEMORY = ":memory:"


class SqliteStore:
    """The store (`bot.store.base.Store`) in one SQLite database: one replica, or processes on one host."""

    backend = "sqlite"

    def __init__(self, thread: ConnectionThread, clock: Clock, owner: str) -> None:
        self._thread = thread
        self._clock = clock
        self._owner = owner
        self._arrivals = ArrivalQueue(thread)

    @property
    def owner(self) -> str:
        return self._owner

    # -- notifications -------------------------------------------------------------------------------
    async def accept(self, raw: bytes, webhook: AlertmanagerWebhook, received_at: float) -> Accepted:
        """Store a notification durably (committed when this returns); an equal one is kept once."""
        return await self._arrivals.accept(raw, webhook, received_at)

    async def pending(
        self, limit: int | None = None, *, besides: AbstractSet[int] = frozenset()
    ) -> list[StoredNotification]:
        """Accepted notifications not yet processed, oldest first, at most `limit`, none in `besides`."""
        now = self._clock()
        return await self._thread.run(lambda conn: notification_sql.pending(conn, limit, now, besides))

    async def pending_count(self) -> int:
        return await self._thread.run(notification_sql.pending_count)

    async def notification(self, notification_id: int) -> StoredNotification | None:
        return await self._thread.run(lambda conn: notification_sql.by_id(conn, notification_id))

    async def mark_processed(self, notification_id: int) -> bool:
        """Close a notification; False when it was unknown or already processed."""
        now = self._clock()
        return await self._thread.run(
            lambda conn: notification_sql.mark_processed(conn, notification_id, now)
        )

    # -- alert groups --------------------------------------------------------------------------------
    async def get_group(self, channel: str, group_key: str) -> AlertGroupState | None:
        return await self._thread.run(lambda conn: group_sql.get(conn, channel, group_key))

    async def save_group(self, state: AlertGroupState) -> AlertGroupState:
        """Insert or replace the group's state; returns it with `updated_at` stamped."""
        now = self._clock()
        return await self._thread.run(lambda conn: group_sql.save(conn, state, now))

    async def save_group_closing(self, state: AlertGroupState, notification_id: int) -> AlertGroupState:
        now = self._clock()
        return await self._thread.run(lambda conn: group_sql.save(conn, state, now, closing=notification_id))

    async def record_post(self, channel: str, group_key: str, ts: str, channel_id: str) -> None:
        """Store where the group's message is in Slack (the delivery side's part of the group's row)."""
        now = self._clock()
        await self._thread.run(
            lambda conn: group_sql.record_post(conn, (channel, group_key), ts, channel_id, now)
        )

    async def groups(
        self, channel: str | None = None, status: AlertStatus | None = None
    ) -> list[AlertGroupState]:
        """Groups, optionally of one channel and/or status, least recently updated first."""
        return await self._thread.run(lambda conn: group_sql.listing(conn, channel, status))

    async def firing_posts(self) -> list[AlertGroupState]:
        return await self._thread.run(group_sql.firing_posts)

    async def firing_messages(self) -> list[AlertGroupState]:
        return await self._thread.run(group_sql.firing_messages)

    # -- acknowledgements ----------------------------------------------------------------------------
    async def acknowledge(self, ack: Acknowledgement) -> Acknowledgement:
        return await self._thread.run(lambda conn: ack_sql.take(conn, ack))

    async def acknowledgement(self, channel: str, group_key: str) -> Acknowledgement | None:
        return await self._thread.run(lambda conn: ack_sql.current(conn, channel, group_key))

    async def unacknowledge(self, channel: str, group_key: str, episode: float) -> bool:
        return await self._thread.run(lambda conn: ack_sql.drop(conn, channel, group_key, episode))

    # -- escalations ---------------------------------------------------------------------------------
    async def schedule_escalation(self, escalation: Escalation) -> Escalation:
        return await self._thread.run(lambda conn: escalation_sql.schedule(conn, escalation))

    async def due_escalations(self, now: float, limit: int = 50) -> list[Escalation]:
        return await self._thread.run(lambda conn: escalation_sql.due(conn, now, limit))

    async def close_escalation(self, escalation: Escalation, outcome: EscalationOutcome) -> bool:
        now = self._clock()
        return await self._thread.run(lambda conn: escalation_sql.close(conn, escalation, outcome, now))

    async def escalation(self, channel: str, group_key: str, episode: float) -> Escalation | None:
        wanted = Escalation(channel, group_key, episode, 0.0)
        return await self._thread.run(lambda conn: escalation_sql.get(conn, wanted))

    # -- on-call events ------------------------------------------------------------------------------
    async def record_event(self, event: OncallEvent) -> bool:
        return await self._thread.run(lambda conn: oncall_sql.record(conn, event))

    async def episode_events(self, channel: str, group_key: str, episode: float) -> list[OncallEvent]:
        return await self._thread.run(lambda conn: oncall_sql.of_episode(conn, channel, group_key, episode))

    async def events_since(self, kind: EventKind, since: float) -> list[OncallEvent]:
        return await self._thread.run(lambda conn: oncall_sql.of_kind(conn, kind, since))

    # -- the silences proxybot made ------------------------------------------------------------------
    async def record_silence_made(self, silence_id: str, created_by: str) -> None:
        now = self._clock()
        await self._thread.run(lambda conn: silences_sql.record(conn, silence_id, created_by, now))

    async def silences_made(self, ids: Sequence[str]) -> dict[str, str]:
        return await self._thread.run(lambda conn: silences_sql.makers(conn, ids))

    async def last_payload(self, channel: str, key: str, prefix: str) -> Mapping[str, Any] | None:
        return await self._thread.run(lambda conn: outbox_sql.last_payload(conn, channel, key, prefix))

    async def channel_id_of(self, channel: str) -> str | None:
        return await self._thread.run(lambda conn: group_sql.channel_id_of(conn, channel))

    # -- outbox --------------------------------------------------------------------------------------
    async def enqueue(
        self,
        key: str,
        channel: str,
        kind: OutboxKind,
        payload: Mapping[str, Any],
        *,
        not_before: float | None = None,
        replace_pending: bool = False,
    ) -> Enqueued:
        """Queue a Slack operation once per `key`.

        A key seen before is a duplicate and changes nothing, except that `replace_pending=True` swaps
        the payload of a row still pending (debounced edits: the newest content wins, one call is made).
        """
        now = self._clock()
        op = (key, channel, kind, payload)
        due_at = now if not_before is None else not_before
        return await self._thread.run(lambda conn: outbox_sql.enqueue(conn, op, due_at, now, replace_pending))

    async def due(self, now: float, limit: int = 50) -> list[OutboxItem]:
        """Pending operations whose time has come, earliest first (then in enqueue order)."""
        return await self._thread.run(lambda conn: outbox_sql.due(conn, now, limit))

    async def outbox_item(self, key: str) -> OutboxItem | None:
        return await self._thread.run(lambda conn: outbox_sql.by_key(conn, key))

    async def next_attempt_at(self) -> float | None:
        """When the earliest pending operation becomes due (None when nothing is pending)."""
        return await self._thread.run(outbox_sql.next_attempt_at)

    async def complete(self, item_id: int, result: Mapping[str, Any] | None = None) -> bool:
        """Mark delivered, keeping Slack's answer; False when the row was not pending."""
        now = self._clock()
        return await self._thread.run(lambda conn: outbox_sql.complete(conn, item_id, result, now))

    async def mark_sending(self, item_id: int, at: float | None, *, fence: str | None = None) -> bool:
        now, held = self._clock(), None if fence is None else (fence, self._owner)
        return await self._thread.run(lambda conn: outbox_sql.mark_sending(conn, item_id, at, now, held))

    async def retry_later(self, item_id: int, at: float, error: str) -> bool:
        """Count a failed try and schedule the next one at `at`; False when the row was not pending."""
        now = self._clock()
        return await self._thread.run(lambda conn: outbox_sql.retry_later(conn, item_id, at, error, now))

    async def give_up(self, item_id: int, error: str) -> bool:
        """Stop retrying an operation Slack will never accept (kept as `failed` with the reason)."""
        now = self._clock()
        return await self._thread.run(lambda conn: outbox_sql.give_up(conn, item_id, error, now))

    async def depth(self) -> int:
        """Pending operations, due or not."""
        return await self._thread.run(outbox_sql.depth)

    async def oldest_pending_at(self) -> float | None:
        return await self._thread.run(outbox_sql.oldest_pending_at)

    # -- digests -------------------------------------------------------------------------------------
    async def claim_digest(self, period: str, ttl: float = 60.0) -> tuple[DigestClaim, float | None]:
        """Claim the digest of `period` (see `bot.store.base.Store.claim_digest`)."""
        now, owner = self._clock(), self._owner
        return await self._thread.run(lambda conn: digest_sql.claim(conn, period, owner, now, ttl))

    async def renew_digest(self, period: str, ttl: float = 60.0) -> bool:
        until, owner = self._clock() + ttl, self._owner
        return await self._thread.run(lambda conn: digest_sql.renew(conn, period, owner, until))

    async def finish_digest(self, period: str, summary: Mapping[str, Any]) -> None:
        """Record `period` as posted, with the summary the next digest compares against."""
        now = self._clock()
        await self._thread.run(lambda conn: digest_sql.finish(conn, period, summary, now))

    async def last_digest(self, other_than: str | None = None) -> DigestRun | None:
        """The most recently posted digest, other than `other_than`."""
        return await self._thread.run(lambda conn: digest_sql.last_posted(conn, other_than))

    async def add_fleet_sample(self, sample: FleetSample, keep_after: float) -> None:
        """Store a fleet sample for digest charts; older samples than `keep_after` are dropped."""
        await self._thread.run(lambda conn: digest_sql.add_sample(conn, sample, keep_after))

    async def fleet_samples(self, since: float) -> list[FleetSample]:
        return await self._thread.run(lambda conn: digest_sql.samples(conn, since))

    # -- leases --------------------------------------------------------------------------------------
    async def hold_lease(self, name: str, ttl: float) -> float | None:
        now, owner = self._clock(), self._owner
        return await self._thread.run(lambda conn: lease_sql.hold(conn, name, owner, now, ttl))

    async def release_lease(self, name: str) -> None:
        owner = self._owner
        await self._thread.run(lambda conn: lease_sql.release(conn, name, owner))

    # -- housekeeping --------------------------------------------------------------------------------
    async def check_writable(self) -> None:
        """Commit one small write (the readiness probe); StoreError when the store cannot write now."""
        now, owner = self._clock(), self._owner
        await self._thread.run(lambda conn: probe_sql.write(conn, owner, now))

    async def prune(self, before: float) -> int:
        """Delete processed notifications and finished outbox rows last touched before `before`.

        Their identities and keys go with them, so the retention is also the deduplication window.
        """

        def both(conn: sqlite3.Connection) -> int:
            return notification_sql.prune(conn, before) + outbox_sql.prune(conn, before)

        return await self._thread.run(both)

    async def close(self) -> None:
        await self._thread.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


async def open_sqlite_store(
    url: str, *, clock: Clock = time.time, owner: str, synchronous: Synchronous = "NORMAL"
) -> SqliteStore:
    """Open (creating and migrating as needed) the store at `sqlite:///<path>`, a plain path or `:memory:`."""
    path = sqlite_path(url)
    thread = ConnectionThread(lambda: connect(path, synchronous))
    try:
        await thread.start()
    except BaseException:
        await thread.close()
        raise
    return SqliteStore(thread, clock, owner)


def sqlite_path(url: str) -> str:
    """The database file named by a store URL; refuses other schemes without repeating the URL."""
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
    elif "://" in url:
        # The URL may carry a password (postgresql://user:pw@host): name only its scheme.
        scheme = urlsplit(url).scheme
        raise StoreError(f"store.url scheme {scheme!r} is not SQLite")
    else:
        path = url
    if not path:
        raise StoreError("store.url names no database file")
    return path


def connect(path: str, synchronous: Synchronous) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, migrated to the latest schema."""
    if path != MEMORY and not Path(path).parent.is_dir():
        raise StoreError(
            f"cannot open the store at {path}: the directory {Path(path).parent} does not exist "
            "(proxybot creates the file, not its directory)"
        )
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_SECONDS)
    except sqlite3.Error as error:
        raise StoreError(f"cannot open the store at {path}: {error}") from error
    try:
        _configure(conn, path, synchronous)
        migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _configure(conn: sqlite3.Connection, path: str, synchronous: Synchronous) -> None:
    mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
    if mode != "wal" and path != MEMORY:
        raise StoreError(f"the store at {path} cannot use WAL journaling (got {mode!r})")
    conn.execute(f"PRAGMA synchronous = {'FULL' if synchronous == 'FULL' else 'NORMAL'}")
    conn.execute("PRAGMA foreign_keys = ON")
