"""One thread that owns the SQLite connection; the event loop hands it work and awaits the result.

Why one dedicated thread rather than `asyncio.to_thread` with a connection per thread: SQLite admits one
writer at a time anyway, so several connections would only contend for the lock ("database is locked")
and make ordering between our own writes depend on thread scheduling. One connection on one thread keeps
every statement of the store in submission order, needs no locking of ours, and the connection is
opened and closed on the thread that uses it (`sqlite3` insists on that). Reads are small indexed
lookups, so serialising them behind writes costs nothing that matters.

The hand-off is lean because every store call pays it (three per alert in a storm: the intake's insert,
the group's read and its save): a job is an asyncio future and a call put on a `queue.SimpleQueue`; the
thread runs the jobs in order and hands each result back as soon as it has it, waking the event loop
once for all the results that pile up meanwhile (`_Mailbox`). `run_in_executor` cost about 90 us of CPU
per call here (concurrent.futures' locks and conditions, a wake of the loop per call).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from bot.store.errors import StoreError

T = TypeVar("T")
Work = Callable[[sqlite3.Connection], T]


class ConnectionThread:
    """Runs work items against one SQLite connection on one dedicated thread, in submission order."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], name: str = "proxybot-store") -> None:
        self._connect = connect
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._mailboxes: dict[asyncio.AbstractEventLoop, _Mailbox] = {}
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    async def start(self) -> None:
        if self._thread is not None or self._closed:
            raise StoreError("the store thread was started already")  # once: one thread keeps the order
        # A daemon: a process that exits without closing the store is not held up by a thread waiting
        # for work. A commit is all or nothing, so one cut short by the exit is a write nobody was told of.
        self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
        self._thread.start()
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
            if self._thread is not None:
                await self._submit(self._close_connection)
        finally:
            self._jobs.put(None)  # the thread ends once what was queued before has run
            if self._thread is not None:
                # Joining the thread waits for whatever it still runs: not on the event loop.
                await asyncio.to_thread(self._thread.join)

    async def _submit(self, call: Callable[[], T]) -> T:
        # If the caller is cancelled, work already running still finishes (a started write commits) and
        # work still queued is dropped; either way the caller never answered, so the sender retries and
        # at worst finds a duplicate.
        if self._thread is None or not self._thread.is_alive():
            raise StoreError("the store is not open")
        loop = asyncio.get_running_loop()
        mailbox = self._mailboxes.get(loop)
        if mailbox is None:
            mailbox = self._mailboxes[loop] = _Mailbox(loop)
        job = _Job(call, loop.create_future(), mailbox)
        self._jobs.put(job)
        # A cancelled caller's `Task.cancel()` cancels this future at once: the thread skips the job then.
        result: T = await job.future
        return result

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            if job.future.cancelled():  # its caller stopped waiting before it started: not run
                continue
            try:
                outcome: tuple[bool, Any] = (True, _converting_errors(job.call))
            except StopIteration as error:  # a future refuses it (TypeError): handed over as what it is
                outcome = (False, RuntimeError(f"store work raised StopIteration: {error!r}"))
            except BaseException as error:  # handed to the caller, raised there
                outcome = (False, error)
            job.mailbox.post(job, outcome)

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


@dataclass(eq=False, slots=True)
class _Job:
    call: Callable[[], Any]
    future: asyncio.Future[Any]
    mailbox: _Mailbox


@dataclass(eq=False)
class _Mailbox:
    """Results for one event loop: posted by the store thread, settled on the loop, one wake for all
    those posted before the loop got to them."""

    loop: asyncio.AbstractEventLoop
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ready: list[tuple[_Job, tuple[bool, Any]]] = field(default_factory=list)
    _woken: bool = False

    def post(self, job: _Job, outcome: tuple[bool, Any]) -> None:
        """On the store thread."""
        with self._lock:
            self._ready.append((job, outcome))
            if self._woken:
                return
            self._woken = True
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody awaits these any more
            self.loop.call_soon_threadsafe(self._settle)

    def _settle(self) -> None:
        """On the event loop."""
        with self._lock:
            ready, self._ready, self._woken = self._ready, [], False
        for job, (ok, value) in ready:
            if job.future.done():  # cancelled meanwhile
                continue
            try:
                if ok:
                    job.future.set_result(value)
                else:
                    job.future.set_exception(value)
            except Exception as error:  # one result that cannot be handed over strands none of the others
                job.future.set_exception(StoreError(f"the store's answer could not be handed over: {error}"))


def _converting_errors(call: Callable[[], T]) -> T:
    try:
        return call()
    except sqlite3.Error as error:
        # The message names the failure (disk I/O error, database is locked); it never holds row data.
        raise StoreError(f"sqlite: {error}") from error
