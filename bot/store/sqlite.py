"""The SQLite backend of the store (`bot.store.sql_store`): every operation runs on one store thread.

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
from collections.abc import Callable
from pathlib import Path
from typing import Literal, ParamSpec, TypeVar
from urllib.parse import urlsplit

from bot.ports import Clock
from bot.store.arrivals import ArrivalQueue
from bot.store.errors import StoreError
from bot.store.models import Accepted
from bot.store.notifications import PendingNotification
from bot.store.schema import migrate
from bot.store.sql_store import SqlStore
from bot.store.steps import Steps
from bot.store.thread import ConnectionThread
from bot.store.transaction import run_steps

T = TypeVar("T")
P = ParamSpec("P")

Synchronous = Literal["NORMAL", "FULL"]
# How long a statement waits for another process's write lock before failing (then the intake says 503).
BUSY_TIMEOUT_SECONDS = 5.0
MEMORY = ":memory:"


class SqliteBackend:
    """One SQLite database: one replica, or processes on one host."""

    name = "sqlite"

    def __init__(self, thread: ConnectionThread) -> None:
        self._thread = thread
        self._arrivals = ArrivalQueue(thread)

    async def run(self, operation: Callable[P, Steps[T]], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._thread.run(lambda conn: run_steps(conn, operation(*args, **kwargs)))

    async def accept(self, arrival: PendingNotification) -> Accepted:
        return await self._arrivals.accept(arrival)

    async def close(self) -> None:
        await self._thread.close()


async def open_sqlite_store(
    url: str, *, clock: Clock = time.time, owner: str, synchronous: Synchronous = "NORMAL"
) -> SqlStore:
    """Open (creating and migrating as needed) the store at `sqlite:///<path>`, a plain path or `:memory:`."""
    path = sqlite_path(url)
    thread = ConnectionThread(lambda: connect(path, synchronous))
    try:
        await thread.start()
    except BaseException:
        await thread.close()
        raise
    return SqlStore(SqliteBackend(thread), clock, owner)


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
