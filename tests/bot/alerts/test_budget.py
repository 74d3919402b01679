"""The enrichment budget: a read's result when it is over, or whether it was late, cancelled or failed;
and how long a notification waited for its reads, per part."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.alerts.budget import Waits, within_budget
from bot.alerts.pipeline import AlertPipeline
from bot.domain.enrichment import Unavailable
from bot.store import open_store
from tests.fakes.alert_pipeline import Clock, FakeLive, Harness, alert, settings, webhook


async def _answer() -> str:
    return "page"


async def _fail() -> str:
    raise OSError("refused")


async def test_a_read_done_in_time_is_its_result() -> None:
    task = asyncio.create_task(_answer())
    await asyncio.wait([task])
    assert within_budget(task, 2.0) == "page"


async def test_a_read_still_running_is_late_and_not_waited_for() -> None:
    task = asyncio.create_task(asyncio.sleep(10, "page"))  # a fake read, still running when looked at
    assert within_budget(task, 2.0) == Unavailable(2.0, late=True)
    assert not task.done()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_failed_or_cancelled_read_says_so() -> None:
    failed = asyncio.create_task(_fail())
    cancelled = asyncio.create_task(asyncio.sleep(10, "page"))  # a fake read, cancelled before it ends
    cancelled.cancel()
    await asyncio.wait([failed, cancelled])
    missed = within_budget(failed, 2.0)
    assert isinstance(missed, Unavailable)
    assert (missed.late, type(missed.error)) == (False, OSError)
    assert within_budget(cancelled, 2.0) == Unavailable(2.0)


class Ticks:
    """A monotonic clock moved by the test."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_each_part_waits_until_its_last_read_ends_and_a_late_part_the_whole_budget() -> None:
    ticks = Ticks()
    waits = Waits(ticks)
    in_hand = asyncio.create_task(_answer())
    await asyncio.wait([in_hand])  # a shared read already done when the notification starts
    gates = [asyncio.Event() for _ in range(3)]
    live, pods_a, pods_b = (asyncio.create_task(g.wait()) for g in gates)
    never = asyncio.create_task(asyncio.Event().wait())
    waits.track("live", [live])
    waits.track("pods", [pods_a, pods_b])
    waits.track("logs", [never])
    waits.track("prometheus", [in_hand])
    for at, gate, task in ((100.05, gates[0], live), (100.1, gates[2], pods_b), (100.3, gates[1], pods_a)):
        ticks.now = at
        gate.set()
        await asyncio.wait([task])
    ticks.now = 101.0  # the budget is over
    seen: dict[str, float] = {}
    waits.report(seen.__setitem__, budget=1.0)
    assert seen == pytest.approx({"live": 0.05, "pods": 0.3, "logs": 1.0, "prometheus": 0.0, "all": 1.0})
    never.cancel()
    await asyncio.gather(never, return_exceptions=True)


async def test_the_pipeline_tells_each_notifications_wait_per_part_it_read(tmp_path: Path) -> None:
    clock = Clock()
    store = await open_store(f"sqlite:///{tmp_path / 'proxybot.db'}", clock=clock)
    harness = Harness(store, clock, FakeLive(), settings())
    seen: list[tuple[str, float]] = []
    harness.pipeline = AlertPipeline(
        settings(),
        store,
        harness.outbox,
        harness.live,
        clock=clock,
        observe_wait=lambda p, s: seen.append((p, s)),
    )
    try:
        await harness.run(webhook([alert("a1"), alert("b1", cluster="beta", target="beta/db")]))
        await harness.run(webhook([alert("a2")], group='{}:{alertname="Other"}'))
    finally:
        await harness.pipeline.aclose()
        await store.close()
    # Two notifications, each with live reads only (no Prometheus, logs or pods configured here).
    assert [part for part, _ in seen] == ["live", "all", "live", "all"]
    assert all(0.0 <= seconds < 5.0 for _, seconds in seen)
