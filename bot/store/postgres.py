"""The PostgreSQL store: several replicas share one database (psycopg 3, async, with a connection pool).

It runs the statements of the SQLite modules (`notifications`, `groups`, `outbox`, `digests`, `leases`,
`write_probe`), with their `?` parameters turned into psycopg's `%s`, and decodes rows with the same
functions, so the two backends cannot drift apart; `tests/bot/store/` runs one suite against both. Each
method is one transaction on a pooled connection (committed when it returns). Every wait is bounded: a
connection from the pool within `POOL_WAIT`, the connect within `CONNECT_TIMEOUT`, a statement within
`STATEMENT_TIMEOUT_MS` (both in `bot.store.pg_url`; a locked row or a stalled server becomes a StoreError,
so the intake answers 503 and Alertmanager retries).

Errors never repeat the URL: it may carry the password (`bot.store.pg_url`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from functools import cache
from types import TracebackType
from typing import Any, Self, TypeVar

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool, PoolTimeout

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
    OutboxState,
    StoredNotification,
)
from bot.store.notifications import PendingNotification
from bot.store.pg_schema import migrate
from bot.store.pg_url import STATEMENT_TIMEOUT_MS, connection_options, describe, where

T = TypeVar("T")

POOL_WAIT = 5.0
# One store call (a connection from the pool, then its statements) at most this long.
CALL_TIMEOUT = POOL_WAIT + STATEMENT_TIMEOUT_MS / 1000 + 2.0
# Webhook bursts run concurrently: a few connections serve them; more would only queue in PostgreSQL.
POOL_MIN, POOL_MAX = 1, 8


@cache
def pg(statement: str) -> str:
    """A statement of the SQLite modules for psycopg: `?` parameters become `%s` (no statement of ours
    has a `?` anywhere else; a literal `%` is escaped)."""
    return statement.replace("%", "%%").replace("?", "%s")


Work = Callable[[AsyncConnection], Awaitable[T]]


class PostgresStore:
    """The store (`bot.store.base.Store`) in a PostgreSQL database shared by every replica."""

    backend = "postgresql"

    def __init__(self, pool: AsyncConnectionPool, clock: Clock, owner: str, where: str) -> None:
        self._pool = pool
        self._clock = clock
        self._owner = owner
        self._where = where

    @property
    def owner(self) -> str:
        return self._owner

    async def _run(self, work: Work[T]) -> T:
        """`work(connection)` in one transaction; driver and pool failures come back as StoreError."""
        try:
            # The server bounds each statement; this bounds the whole call, a stalled network included.
            async with asyncio.timeout(CALL_TIMEOUT):
                try:
                    async with self._pool.connection(timeout=POOL_WAIT) as conn:
                        return await work(conn)
                except psycopg.OperationalError:
                    # A connection the server dropped (a restart, a failover) is only found when used;
                    # the pool discards it. Every call here is one transaction that either committed or
                    # did not, and each is safe to run again (accepts and enqueues are keyed): once more.
                    async with self._pool.connection(timeout=POOL_WAIT) as conn:
                        return await work(conn)
        except TimeoutError as error:
            raise StoreError(f"postgresql at {self._where}: no answer within {CALL_TIMEOUT:g} s") from error
        except PoolTimeout as error:
            raise StoreError(f"postgresql at {self._where}: no connection within {POOL_WAIT:g} s") from error
        except psycopg.Error as error:
            raise StoreError(f"postgresql at {self._where}: {describe(error)}") from error

    async def _one(self, statement: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        async def work(conn: AsyncConnection) -> tuple[Any, ...] | None:
            cursor = await conn.execute(pg(statement), params)
            row: tuple[Any, ...] | None = await cursor.fetchone()
            return row

        return await self._run(work)

    async def _all(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        async def work(conn: AsyncConnection) -> list[tuple[Any, ...]]:
            cursor = await conn.execute(pg(statement), params)
            rows: list[tuple[Any, ...]] = await cursor.fetchall()
            return rows

        return await self._run(work)

    async def _change(self, statement: str, params: tuple[Any, ...]) -> int:
        """Run one INSERT/UPDATE/DELETE; the number of rows it touched."""

        async def work(conn: AsyncConnection) -> int:
            cursor = await conn.execute(pg(statement), params)
            return cursor.rowcount

        return await self._run(work)

    # -- notifications -------------------------------------------------------------------------------
    async def accept(self, raw: bytes, webhook: AlertmanagerWebhook, received_at: float) -> Accepted:
        values = notification_sql.insert_row(PendingNotification(raw, webhook, received_at))
        row = await self._one(notification_sql.INSERT, values)
        assert row is not None  # INSERT ... ON CONFLICT DO UPDATE ... RETURNING always returns the row
        return Accepted(id=row[0], duplicate=row[1] > 0)

    async def pending(
        self, limit: int | None = None, *, besides: AbstractSet[int] = frozenset()
    ) -> list[StoredNotification]:
        now = self._clock()
        fetch = None if limit is None else limit + len(besides)  # LIMIT NULL: no limit

        async def work(conn: AsyncConnection) -> list[StoredNotification]:
            cursor = await conn.execute(pg(notification_sql.PENDING), (fetch,))
            rows = notification_sql.kept_rows(await cursor.fetchall(), besides, limit)
            stored, unreadable = notification_sql.parse_rows(rows)
            for notification_id, problem in unreadable:
                await conn.execute(pg(notification_sql.SET_ASIDE), (now, problem, notification_id))
            return stored

        return await self._run(work)

    async def pending_count(self) -> int:
        row = await self._one(notification_sql.PENDING_COUNT)
        return 0 if row is None else int(row[0])

    async def notification(self, notification_id: int) -> StoredNotification | None:
        row = await self._one(notification_sql.BY_ID, (notification_id,))
        stored, _ = notification_sql.parse_rows([] if row is None else [tuple(row)])
        return stored[0] if stored else None

    async def mark_processed(self, notification_id: int) -> bool:
        return await self._change(notification_sql.MARK_PROCESSED, (self._clock(), notification_id)) == 1

    # -- alert groups --------------------------------------------------------------------------------
    async def get_group(self, channel: str, group_key: str) -> AlertGroupState | None:
        row = await self._one(group_sql.GET, (channel, group_key))
        return None if row is None else group_sql.group_from_row(row)

    async def save_group(self, state: AlertGroupState) -> AlertGroupState:
        now = self._clock()
        saved = group_sql.stamped(state, now)
        await self._change(group_sql.UPSERT, group_sql.group_row(saved, now))
        return saved

    async def save_group_closing(self, state: AlertGroupState, notification_id: int) -> AlertGroupState:
        now = self._clock()
        saved = group_sql.stamped(state, now)

        async def work(conn: AsyncConnection) -> None:
            await conn.execute(pg(group_sql.UPSERT), group_sql.group_row(saved, now))
            await conn.execute(pg(notification_sql.MARK_PROCESSED), (now, notification_id))

        await self._run(work)
        return saved

    async def record_post(self, channel: str, group_key: str, ts: str, channel_id: str) -> None:
        await self._change(group_sql.RECORD_POST, (channel, group_key, ts, self._clock(), channel_id))

    async def groups(
        self, channel: str | None = None, status: AlertStatus | None = None
    ) -> list[AlertGroupState]:
        rows = await self._all(group_sql.LISTING, group_sql.listing_params(channel, status))
        return [group_sql.group_from_row(row) for row in rows]

    async def firing_posts(self) -> list[AlertGroupState]:
        return [group_sql.group_from_row(row) for row in await self._all(group_sql.FIRING_POSTS)]

    async def firing_messages(self) -> list[AlertGroupState]:
        return [group_sql.group_from_row(row) for row in await self._all(group_sql.FIRING_MESSAGES)]

    # -- acknowledgements ----------------------------------------------------------------------------
    async def acknowledge(self, ack: Acknowledgement) -> Acknowledgement:
        async def work(conn: AsyncConnection) -> Acknowledgement:
            await conn.execute(pg(ack_sql.TAKE), ack_sql.take_params(ack))
            cursor = await conn.execute(pg(ack_sql.GET), (ack.channel, ack.group_key))
            row = await cursor.fetchone()
            assert row is not None  # written, or kept, by the statement before in this transaction
            return ack_sql.from_row(row)

        return await self._run(work)

    async def acknowledgement(self, channel: str, group_key: str) -> Acknowledgement | None:
        row = await self._one(ack_sql.CURRENT, (channel, group_key))
        return None if row is None else ack_sql.from_row(row)

    async def unacknowledge(self, channel: str, group_key: str, episode: float) -> bool:
        return await self._change(ack_sql.DROP, (channel, group_key, episode)) == 1

    # -- escalations ---------------------------------------------------------------------------------
    async def schedule_escalation(self, escalation: Escalation) -> Escalation:
        async def work(conn: AsyncConnection) -> Escalation:
            await conn.execute(pg(escalation_sql.SCHEDULE), escalation_sql.schedule_params(escalation))
            cursor = await conn.execute(pg(escalation_sql.GET), escalation_sql.where(escalation))
            row = await cursor.fetchone()
            assert row is not None  # written, or kept, by the statement before in this transaction
            return escalation_sql.from_row(row)

        return await self._run(work)

    async def due_escalations(self, now: float, limit: int = 50) -> list[Escalation]:
        rows = await self._all(escalation_sql.DUE, (now, limit))
        return [escalation_sql.from_row(row) for row in rows]

    async def close_escalation(self, escalation: Escalation, outcome: EscalationOutcome) -> bool:
        params = escalation_sql.close_params(escalation, outcome, self._clock())
        return await self._change(escalation_sql.CLOSE, params) == 1

    async def escalation(self, channel: str, group_key: str, episode: float) -> Escalation | None:
        row = await self._one(escalation_sql.GET, (channel, group_key, episode))
        return None if row is None else escalation_sql.from_row(row)

    # -- on-call events ------------------------------------------------------------------------------
    async def record_event(self, event: OncallEvent) -> bool:
        return await self._change(oncall_sql.INSERT, oncall_sql.params(event)) == 1

    async def episode_events(self, channel: str, group_key: str, episode: float) -> list[OncallEvent]:
        rows = await self._all(oncall_sql.OF_EPISODE, (channel, group_key, episode))
        return [oncall_sql.from_row(row) for row in rows]

    async def events_since(self, kind: EventKind, since: float) -> list[OncallEvent]:
        rows = await self._all(oncall_sql.OF_KIND, (kind.value, since))
        return [oncall_sql.from_row(row) for row in rows]

    # -- the silences proxybot made ------------------------------------------------------------------
    async def record_silence_made(self, silence_id: str, created_by: str) -> None:
        await self._change(silences_sql.INSERT, (silence_id, created_by, self._clock()))

    async def silences_made(self, ids: Sequence[str]) -> dict[str, str]:
        if not ids:
            return {}
        rows = await self._all(silences_sql.of_ids(len(ids)), tuple(ids))
        return {str(silence_id): str(created_by) for silence_id, created_by in rows}

    async def last_payload(self, channel: str, key: str, prefix: str) -> Mapping[str, Any] | None:
        row = await self._one(outbox_sql.LAST_PAYLOAD, outbox_sql.last_payload_params(channel, key, prefix))
        return None if row is None else outbox_sql.decode_payload(str(row[0]))

    async def channel_id_of(self, channel: str) -> str | None:
        row = await self._one(group_sql.CHANNEL_ID, (channel,))
        return None if row is None else str(row[0])

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
        now = self._clock()
        due_at = now if not_before is None else not_before
        encoded = outbox_sql.encode_payload(payload)

        async def work(conn: AsyncConnection) -> Enqueued:
            values = (key, channel, kind.value, encoded, due_at, now, now)
            row = await (await conn.execute(pg(outbox_sql.INSERT), values)).fetchone()
            if row is not None:
                return Enqueued(id=row[0], duplicate=False)
            # FOR UPDATE: a replace must not race the worker completing the row.
            locking = pg(outbox_sql.SELECT_KEY + " FOR UPDATE")
            existing = await (await conn.execute(locking, (key,))).fetchone()
            assert existing is not None  # the conflicting row exists: rows are never deleted while pending
            row_id, state = existing
            if not (replace_pending and state == OutboxState.PENDING.value):
                return Enqueued(id=row_id, duplicate=True)
            await conn.execute(pg(outbox_sql.REPLACE), (channel, kind.value, encoded, now, row_id))
            return Enqueued(id=row_id, duplicate=True, replaced=True)

        return await self._run(work)

    async def due(self, now: float, limit: int = 50) -> list[OutboxItem]:
        return [outbox_sql.item_from_row(row) for row in await self._all(outbox_sql.DUE, (now, limit))]

    async def outbox_item(self, key: str) -> OutboxItem | None:
        row = await self._one(outbox_sql.BY_KEY, (key,))
        return None if row is None else outbox_sql.item_from_row(row)

    async def next_attempt_at(self) -> float | None:
        row = await self._one(outbox_sql.NEXT_AT)
        return None if row is None or row[0] is None else float(row[0])

    async def oldest_pending_at(self) -> float | None:
        row = await self._one(outbox_sql.OLDEST)
        return None if row is None or row[0] is None else float(row[0])

    async def complete(self, item_id: int, result: Mapping[str, Any] | None = None) -> bool:
        encoded = None if result is None else json.dumps(result, sort_keys=True)
        return await self._change(outbox_sql.COMPLETE, (encoded, self._clock(), item_id)) == 1

    async def mark_sending(self, item_id: int, at: float | None, *, fence: str | None = None) -> bool:
        held = None if fence is None else (fence, self._owner)
        statement, values = outbox_sql.mark_sending_statement(item_id, at, self._clock(), held)
        return await self._change(statement, values) == 1

    async def retry_later(self, item_id: int, at: float, error: str) -> bool:
        values = (at, error[: outbox_sql.MAX_ERROR_CHARS], self._clock(), item_id)
        return await self._change(outbox_sql.RETRY, values) == 1

    async def give_up(self, item_id: int, error: str) -> bool:
        values = (error[: outbox_sql.MAX_ERROR_CHARS], self._clock(), item_id)
        return await self._change(outbox_sql.GIVE_UP, values) == 1

    async def depth(self) -> int:
        row = await self._one(outbox_sql.DEPTH)
        return 0 if row is None else int(row[0])

    # -- digests -------------------------------------------------------------------------------------
    async def claim_digest(self, period: str, ttl: float = 60.0) -> tuple[DigestClaim, float | None]:
        now = self._clock()

        async def work(conn: AsyncConnection) -> tuple[DigestClaim, float | None]:
            values = (period, now, self._owner, now + ttl, now)
            if await (await conn.execute(pg(digest_sql.CLAIM), values)).fetchone() is not None:
                return DigestClaim.CLAIMED, now + ttl
            row = await (await conn.execute(pg(digest_sql.CLAIM_STATE), (period,))).fetchone()
            assert row is not None  # the claim conflicted with this row
            return digest_sql.claim_refusal(row[0], row[1])

        return await self._run(work)

    async def renew_digest(self, period: str, ttl: float = 60.0) -> bool:
        return await self._change(digest_sql.RENEW, (self._clock() + ttl, period, self._owner)) == 1

    async def finish_digest(self, period: str, summary: Mapping[str, Any]) -> None:
        now = self._clock()

        async def work(conn: AsyncConnection) -> None:
            encoded = json.dumps(summary, sort_keys=True)
            await conn.execute(pg(digest_sql.FINISH), (period, now, now, encoded))
            await conn.execute(pg(digest_sql.KEEP_LATEST), (digest_sql.KEEP_RUNS,))

        await self._run(work)

    async def last_digest(self, other_than: str | None = None) -> DigestRun | None:
        row = await self._one(digest_sql.LAST_POSTED, (other_than, other_than))
        return None if row is None else digest_sql.run_from_row(row)

    async def add_fleet_sample(self, sample: FleetSample, keep_after: float) -> None:
        async def work(conn: AsyncConnection) -> None:
            encoded = json.dumps(sample.sample, sort_keys=True)
            await conn.execute(pg(digest_sql.ADD_SAMPLE), (sample.at, encoded))
            await conn.execute(pg(digest_sql.DROP_OLD_SAMPLES), (keep_after,))
            await conn.execute(pg(digest_sql.KEEP_SAMPLES), (digest_sql.MAX_SAMPLES,))

        await self._run(work)

    async def fleet_samples(self, since: float) -> list[FleetSample]:
        rows = await self._all(digest_sql.SAMPLES, (since,))
        return [FleetSample(at, json.loads(sample)) for at, sample in rows]

    # -- leases --------------------------------------------------------------------------------------
    async def hold_lease(self, name: str, ttl: float) -> float | None:
        now = self._clock()
        row = await self._one(lease_sql.HOLD, (name, self._owner, now + ttl, now))
        return None if row is None else float(row[0])

    async def release_lease(self, name: str) -> None:
        await self._change(lease_sql.RELEASE, (name, self._owner))

    # -- housekeeping --------------------------------------------------------------------------------
    async def check_writable(self) -> None:
        await self._change(probe_sql.WRITE, (self._owner, self._clock()))

    async def prune(self, before: float) -> int:
        async def work(conn: AsyncConnection) -> int:
            notifications = await conn.execute(pg(notification_sql.PRUNE), (before,))
            outbox = await conn.execute(pg(outbox_sql.PRUNE), (before,))
            return notifications.rowcount + outbox.rowcount

        return await self._run(work)

    async def close(self) -> None:
        await self._pool.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


async def open_postgres_store(
    url: str, *, clock: Clock = time.time, owner: str, open_timeout: float = 10.0
) -> PostgresStore:
    """Connect to the database at `url` (a libpq `postgresql://` URL) and migrate it to the latest schema."""
    place = where(url)
    connect_kwargs = connection_options(url)
    pool = AsyncConnectionPool(
        conninfo=url,
        min_size=POOL_MIN,
        max_size=POOL_MAX,
        open=False,
        name="proxybot-store",
        timeout=POOL_WAIT,
        kwargs=connect_kwargs,
    )
    try:
        await _first_connect(url, connect_kwargs, place)
        await _open_pool(pool, place, open_timeout)
        async with pool.connection(timeout=POOL_WAIT) as conn:
            await migrate(conn)
    except psycopg.Error as error:
        await pool.close()
        raise StoreError(f"postgresql at {place}: {describe(error, url)}") from error
    except BaseException:
        await pool.close()
        raise
    return PostgresStore(pool, clock, owner, place)


async def _first_connect(url: str, kwargs: Mapping[str, Any], place: str) -> None:
    # The pool retries in the background and would only say "timed out": one direct connect first
    # gives the server's own reason (wrong password, no such database, refused).
    try:
        conn = await psycopg.AsyncConnection.connect(url, **kwargs)
    except psycopg.Error as error:
        raise StoreError(f"cannot connect to postgresql at {place}: {describe(error, url)}") from error
    await conn.close()


async def _open_pool(pool: AsyncConnectionPool, place: str, timeout: float) -> None:
    try:
        await pool.open(wait=True, timeout=timeout)
    except PoolTimeout as error:
        raise StoreError(f"cannot connect to postgresql at {place} within {timeout:g} s") from error
