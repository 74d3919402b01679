"""The store thread's hand-off: work runs in submission order on one thread, each caller gets its own result
or error, a cancelled caller's queued work never runs while started work finishes, and a closed thread
refuses work."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.store.errors import StoreError
from bot.store.thread import ConnectionThread


@pytest.fixture
async def thread(tmp_path: Path) -> AsyncIterator[ConnectionThread]:
    found = ConnectionThread(lambda: sqlite3.connect(tmp_path / "t.db", check_same_thread=False))
    await found.start()
    yield found
    await found.close()


async def test_many_callers_at_once_each_get_their_own_result_in_submission_order(
    thread: ConnectionThread,
) -> None:
    ran: list[int] = []
    names: set[str] = set()

    def work(n: int) -> int:
        ran.append(n)
        names.add(threading.current_thread().name)
        return n * n

    results = await asyncio.gather(*(thread.run(lambda conn, n=n: work(n)) for n in range(500)))
    assert results == [n * n for n in range(500)]
    assert ran == list(range(500))
    assert len(names) == 1, "one thread runs it all"
    assert threading.current_thread().name not in names


async def test_an_sqlite_error_is_a_store_error_and_another_error_is_itself(thread: ConnectionThread) -> None:
    with pytest.raises(StoreError, match=r"^sqlite: no such table: absent$"):
        await thread.run(lambda conn: conn.execute("SELECT * FROM absent"))
    with pytest.raises(KeyError):
        await thread.run(lambda conn: {}["missing"])
    assert await thread.run(lambda conn: conn.execute("SELECT 1").fetchone()) == (1,)  # still serving


async def test_a_cancelled_callers_queued_work_never_runs_and_started_work_finishes(
    thread: ConnectionThread,
) -> None:
    release, started = threading.Event(), threading.Event()
    ran: list[str] = []

    def busy(conn: sqlite3.Connection) -> str:
        started.set()
        release.wait(5)
        ran.append("busy")
        return "busy"

    running = asyncio.create_task(thread.run(busy))
    await asyncio.to_thread(started.wait, 5)
    queued = asyncio.create_task(thread.run(lambda conn: ran.append("queued")))
    await asyncio.sleep(0)  # one turn, not a wait for time: the task queues its work behind `busy`
    running.cancel()
    queued.cancel()
    for task in (running, queued):  # both callers stop waiting while the store thread is still busy
        with pytest.raises(asyncio.CancelledError):
            await task
    release.set()
    assert await thread.run(lambda conn: list(ran)) == ["busy"]


async def test_a_closed_thread_refuses_work_and_a_thread_never_started_refuses_it_too(tmp_path: Path) -> None:
    thread = ConnectionThread(lambda: sqlite3.connect(tmp_path / "t.db", check_same_thread=False))
    with pytest.raises(StoreError, match="not open"):
        await thread.run(lambda conn: None)
    await thread.start()
    await thread.close()
    await thread.close()
    with pytest.raises(StoreError, match="closed"):
        await thread.run(lambda conn: None)


async def test_work_that_raises_what_a_future_refuses_strands_no_other_caller(
    thread: ConnectionThread,
) -> None:
    release, started = threading.Event(), threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        started.set()
        release.wait(5)

    held = asyncio.create_task(thread.run(hold))
    await asyncio.to_thread(started.wait, 5)
    # Queued behind `hold`, so their results are handed back in one wake of the loop.
    empty = asyncio.create_task(thread.run(lambda conn: next(iter(()))))  # StopIteration
    after = asyncio.create_task(thread.run(lambda conn: "answered"))
    await asyncio.sleep(0)  # one turn, not a wait for time: both tasks queue their work behind `hold`
    release.set()
    await held
    # Bounded: a result that was never handed over would leave these waiting for ever.
    assert await asyncio.wait_for(after, 10) == "answered"
    with pytest.raises(RuntimeError, match="StopIteration"):
        await asyncio.wait_for(empty, 10)


async def test_close_runs_what_was_queued_first_then_ends_the_thread_and_the_connection(
    tmp_path: Path,
) -> None:
    conns: list[sqlite3.Connection] = []

    def connect() -> sqlite3.Connection:
        conns.append(sqlite3.connect(tmp_path / "t.db", check_same_thread=False))
        return conns[-1]

    thread = ConnectionThread(connect)
    await thread.start()
    with pytest.raises(StoreError, match="started already"):
        await thread.start()
    queued = asyncio.create_task(thread.run(lambda conn: conn.execute("SELECT 2").fetchone()))
    await asyncio.sleep(0)  # one turn, not a wait for time: the task queues its work before the close
    await thread.close()
    assert await queued == (2,)
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        conns[0].execute("SELECT 1")
