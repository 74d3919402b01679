"""The enrichment budget: a read's result when it is over, or whether it was late, cancelled or failed."""

from __future__ import annotations

import asyncio

from bot.alerts.budget import Unavailable, within_budget


async def _answer() -> str:
    return "page"


async def _fail() -> str:
    raise OSError("refused")


async def test_a_read_done_in_time_is_its_result() -> None:
    task = asyncio.create_task(_answer())
    await asyncio.wait([task])
    assert within_budget(task, 2.0) == "page"


async def test_a_read_still_running_is_late_and_not_waited_for() -> None:
    task = asyncio.create_task(asyncio.sleep(10, "page"))
    assert within_budget(task, 2.0) == Unavailable(2.0, late=True)
    assert not task.done()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_failed_or_cancelled_read_says_so() -> None:
    failed = asyncio.create_task(_fail())
    cancelled = asyncio.create_task(asyncio.sleep(10, "page"))
    cancelled.cancel()
    await asyncio.wait([failed, cancelled])
    missed = within_budget(failed, 2.0)
    assert isinstance(missed, Unavailable)
    assert (missed.late, type(missed.error)) == (False, OSError)
    assert within_budget(cancelled, 2.0) == Unavailable(2.0)
