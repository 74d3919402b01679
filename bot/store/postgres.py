"""The PostgreSQL backend of the store (`bot.store.sql_store`): replicas share one database (psycopg 3,
async, with a connection pool).

It runs the operations both backends share (`bot.store.steps`), with their `?` parameters turned into
psycopg's `%s`, so the two cannot drift apart; `tests/bot/store/` runs one suite against both. Each
operation is one transaction on a pooled connection (committed when it returns). Every wait is bounded:
a connection from the pool within `POOL_WAIT`, the connect within `CONNECT_TIMEOUT`, a statement within
`STATEMENT_TIMEOUT_MS` (both in `bot.store.pg_url`; a locked row or a stalled server becomes a StoreError,
so the intake answers 503 and Alertmanager retries).

Errors never repeat the URL: it may carry the password (`bot.store.pg_url`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, ParamSpec, TypeVar

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from bot.ports import Clock
from bot.store import notifications as notification_sql
from bot.store.errors import StoreError
from bot.store.models import Accepted
from bot.store.notifications import PendingNotification
from bot.store.pg_schema import migrate
from bot.store.pg_url import STATEMENT_TIMEOUT_MS, connection_options, describe, where
from bot.store.sql_store import SqlStore
from bot.store.steps import Done, Result, Statement, Steps, advance

T = TypeVar("T")
P = ParamSpec("P")

POOL_WAIT = 5.0
# One store call (a connection from the pool, then its statements) at most this long.
CALL_TIMEOUT = POOL_WAIT + STATEMENT_TIMEOUT_MS / 1000 + 2.0
# Webhook bursts run concurrently: a few connections serve them; more would only queue in PostgreSQL.
POOL_MIN, POOL_MAX = 1, 8


@cache
def pg(sql: str, for_update: bool = False) -> str:
    """A statement for psycopg: `?` parameters become `%s` (no statement of ours has a `?` anywhere
    else; a literal `%` is escaped); with `for_update`, the rows it reads are locked."""
    return sql.replace("%", "%%").replace("?", "%s") + (" FOR UPDATE" if for_update else "")


class PostgresBackend:
    """A PostgreSQL database shared by every replica."""

    name = "postgresql"

    def __init__(self, pool: AsyncConnectionPool, where: str) -> None:
        self._pool = pool
        self._where = where

    async def run(self, operation: Callable[P, Steps[T]], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """The operation in one transaction; driver and pool failures come back as StoreError."""
        try:
            # The server bounds each statement; this bounds the whole call, a stalled network included.
            async with asyncio.timeout(CALL_TIMEOUT):
                try:
                    async with self._pool.connection(timeout=POOL_WAIT) as conn:
                        return await _run_steps(conn, operation(*args, **kwargs))
                except psycopg.OperationalError:
                    # A connection the server dropped (a restart, a failover) is only found when used;
                    # the pool discards it. Every call here is one transaction that either committed or
                    # did not, and each is safe to run again (accepts and enqueues are keyed): once more.
                    async with self._pool.connection(timeout=POOL_WAIT) as conn:
                        return await _run_steps(conn, operation(*args, **kwargs))
        except TimeoutError as error:
            raise StoreError(f"postgresql at {self._where}: no answer within {CALL_TIMEOUT:g} s") from error
        except PoolTimeout as error:
            raise StoreError(f"postgresql at {self._where}: no connection within {POOL_WAIT:g} s") from error
        except psycopg.Error as error:
            raise StoreError(f"postgresql at {self._where}: {describe(error)}") from error

    async def accept(self, arrival: PendingNotification) -> Accepted:
        [accepted] = await self.run(notification_sql.accept, [arrival])
        return accepted

    async def close(self) -> None:
        await self._pool.close()


async def _run_steps(conn: AsyncConnection, steps: Steps[T]) -> T:
    result: Result | None = None
    while not isinstance(step := advance(steps, result), Done):
        result = await _execute(conn, step)
    return step.answer


async def _execute(conn: AsyncConnection, statement: Statement) -> Result:
    cursor = await conn.execute(pg(statement.sql, statement.for_update), statement.params)
    rows: list[tuple[Any, ...]] = await cursor.fetchall() if cursor.description is not None else []
    return Result(rows, cursor.rowcount)


async def open_postgres_store(
    url: str, *, clock: Clock = time.time, owner: str, open_timeout: float = 10.0
) -> SqlStore:
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
    return SqlStore(PostgresBackend(pool, place), clock, owner)


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
