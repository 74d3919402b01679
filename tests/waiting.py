"""Waiting in tests: poll a condition until it holds, bounded, and fail naming what was awaited.

The one way a test waits for something to have happened, instead of sleeping for a guessed while:

- `wait_until(check, timeout, what)` from plain code (a thread, a subprocess, a real server);
- `await eventually(check, what, timeout=...)` from a coroutine: `check` may be a plain function or a
  coroutine function, so a condition read through an async API is awaited on each poll.

Both return the first truthy value `check` gives (a found message, a list of rows), so a test can wait for
a thing and use it in one step (a check giving `X | None` returns an `X`). On timeout they raise
`WaitTimeout`, an `AssertionError`: the test fails, and the message says what it was waiting for.

A sleep remains right only where a test waits for nothing to happen (no second send within a period) or
a fake simulates time; say so in a comment beside it.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, overload

T = TypeVar("T")

# How often a condition is polled: short against the waits it replaces, long enough not to spin a CPU.
SYNC_INTERVAL = 0.1
ASYNC_INTERVAL = 0.01


class WaitTimeout(AssertionError):
    """A condition a test waited for did not hold within its timeout."""


def wait_until(
    check: Callable[[], T | None], timeout: float, what: str, interval: float = SYNC_INTERVAL
) -> T:
    """Poll `check` until it returns something truthy, and return that; fail naming `what` at `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)


@overload
async def eventually(
    check: Callable[[], Awaitable[T | None]], what: str, timeout: float = ..., interval: float = ...
) -> T: ...
@overload
async def eventually(
    check: Callable[[], T | None], what: str, timeout: float = ..., interval: float = ...
) -> T: ...
async def eventually(
    check: Callable[[], object],
    what: str,
    timeout: float = 20.0,
    interval: float = ASYNC_INTERVAL,
) -> object:
    """Poll `check` (plain or async) until it gives something truthy, and return that; fail naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if inspect.isawaitable(found):
            found = await found
        if found:
            return found
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout:g}s waiting for {what}")
        await asyncio.sleep(interval)
