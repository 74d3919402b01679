"""The enrichment budget: what a read brought by the time the budget ended, or why it brought nothing.

Reads that are late are not waited for: the alert is posted with them marked unavailable (the render
side words why, `bot.render.enrichment`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Unavailable:
    """Why a read brought nothing within `budget` seconds: still running, failed (`error`), or cancelled."""

    budget: float
    late: bool = False
    error: BaseException | None = None


def within_budget(task: asyncio.Task[T], budget: float) -> T | Unavailable:
    """The read's result once the budget of `budget` seconds is over, or why there is none."""
    if not task.done():
        return Unavailable(budget, late=True)
    if task.cancelled():
        return Unavailable(budget)
    error = task.exception()
    if error is not None:
        return Unavailable(budget, error=error)
    return task.result()
