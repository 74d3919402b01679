"""One thread that owns the SQLite connection; the event loop hands it work and awaits the result.

Why one dedicated thread rather than `asyncio.to_thread` with a connection per thread: SQLite admits one
writer at a time anyway, so several connections would only contend for the lock ("database is locked")
and make ordering between our own writes depend on thread scheduling. One connection on one thread keeps
every statement of the store in submission order, needs no locking of ours, and the connection is
opened and closed on the thread that uses it (`sqlite3` insists on that). Reads are small indexed
lookups, so serialising them behind writes costs nothing that matters.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from bot.store.errors import StoreError

T = TypeVar("T")
Work = Callable[[sqlite3.Connection], T]


class ConnectionThread:
    """Runs work items against one SQLite connection on one dedicated thread, in submission order."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], name: str = "proxybot-store") -> None:
        self._connect = connect
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    async def start(self) -> None:
        await self._submit(self._open)

    async def run(self, work: Work[T]) -> T:
        """Run `work(connection)` on the store thread; sqlite errors come back as StoreError."""
        if self._closed:
            raise StoreError("the store is closed")
        return await self._submit(lambda: work(self._connection()))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._submit(self._close_connection)
        finally:
            # Joining the thread waits for whatever it still runs: not on the event loop.
            await asyncio.to_thread(self._executor.shutdown, wait=True)

    async def _submit(self, call: Callable[[], T]) -> T:
        # If the caller is cancelled, work already running still finishes (a started write commits) and
        # work still queued is dropped; either way the caller never answered, so the sender retries and
        # at worst finds a duplicate.
        future = asyncio.get_running_loop().run_in_executor(self._executor, _converting_errors, call)
        return await future

    def _open(self) -> None:
        self._conn = self._connect()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError("the store is not open")
        return self._conn

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _converting_errors(call: Callable[[], T]) -> T:
    try:
        return call()
    except sqlite3.Error as error:
        # The message names the failure (disk I/O error, database is locked); it never holds row data.
        raise StoreError(f"sqlite: {error}") from error
