"""The enrichment budget: what a read brought by the time the budget ended, or why it brought nothing.

Reads that are late are not waited for: the alert is posted with them marked unavailable (the render
side words why, `bot.render.enrichment`). `Waits` times one notification's wait for its reads, per part
(the bot's `proxybot_enrichment_wait_seconds`): what of an alert's latency is upstream, what is the bot's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, TypeVar

from bot.domain.enrichment import Unavailable

T = TypeVar("T")
# Told (part, seconds) once per part a notification read, and ("all", seconds) for the whole wait.
ObserveWait = Callable[[str, float], None]
ALL_PARTS = "all"


def in_hand(value: T | None, read: Callable[[], Coroutine[Any, Any, T]], name: str) -> asyncio.Future[T]:
    """One read of a notification's enrichment as a future: done at once with `value` when its source had
    the answer in hand (a fresh shared read: no task, no turn of the loop), else a task running `read()`.
    In a storm of alerts on one client nearly every read is in hand; a task for each cost about a tenth
    of the pipeline's time."""
    if value is None:
        return asyncio.create_task(read(), name=name)
    done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    done.set_result(value)
    return done


def within_budget(task: asyncio.Future[T], budget: float) -> T | Unavailable:
    """The read's result once the budget of `budget` seconds is over, or why there is none."""
    if not task.done():
        return Unavailable(budget, late=True)
    if task.cancelled():
        return Unavailable(budget)
    error = task.exception()
    if error is not None:
        return Unavailable(budget, error=error)
    return task.result()


class Waits:
    """How long one notification's enrichment waited for each part of its reads (live state, pods, logs,
    Prometheus): from the start of the wait until the part's last read ended, or the whole budget."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._started = monotonic()
        self._tasks: dict[str, list[asyncio.Future[Any]]] = {}
        self._ended: dict[asyncio.Future[Any], float] = {}

    def track(self, part: str, tasks: Iterable[asyncio.Future[Any]]) -> None:
        for task in tasks:
            self._tasks.setdefault(part, []).append(task)
            if task.done():
                self._ended[task] = 0.0  # a shared read already in hand: no wait at all
            else:
                task.add_done_callback(self._end)

    def _end(self, task: asyncio.Future[Any]) -> None:
        self._ended[task] = self._monotonic() - self._started

    def report(self, observe: ObserveWait, budget: float) -> None:
        """Tell `observe` each part's wait (a part with a read still running waited the whole budget) and
        the whole wait."""
        for part, tasks in sorted(self._tasks.items()):
            ends = [self._ended.get(task, budget) for task in tasks]
            observe(part, min(max(ends), budget))
        observe(ALL_PARTS, min(self._monotonic() - self._started, budget))
