"""One read per key serves every caller for a few seconds: single-flight plus a short TTL cache.

Concurrent callers share the read in flight, and later callers within `ttl` get its result. A read runs
as a task of its own, shielded from its callers: one that stops waiting (its enrichment budget ran out)
leaves the read running, and what it brings fills the cache for the next caller. A read that raises is
not cached: the next caller reads again. Used by `bot.live.LiveState` (cluster pages),
`bot.alerts.prom_enrich.PromEnricher` (Prometheus windows), `bot.reads.triage.SharedTargetPods` (target
pods) and `bot.checks.logs.ControlPlaneLogReader` (control-plane logs). `peek` is what a caller would get
without waiting: the alert pipeline uses a read in hand at once (`bot.alerts.budget.in_hand`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from bot.ports import Clock

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class _Cached(Generic[V]):
    at: float  # monotonic
    value: V


class SharedReads(Generic[K, V]):
    """Single-flight, briefly cached reads by key; `cancel_pending()` stops reads nobody waits for."""

    def __init__(self, ttl: float, monotonic: Clock = time.monotonic) -> None:
        self._ttl = ttl
        self._monotonic = monotonic
        self._cache: dict[K, _Cached[V]] = {}
        self._inflight: dict[K, asyncio.Task[V]] = {}

    async def get(self, key: K, read: Callable[[], Awaitable[V]], *, name: str) -> V:
        """The key's value, at most `ttl` seconds old; `read` runs only when none is cached or in flight."""
        cached = self._fresh(key)
        if cached is not None:
            return cached.value
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.create_task(_run(read), name=name)
            self._inflight[key] = task
            task.add_done_callback(lambda done: self._settle(key, done))
        return await asyncio.shield(task)

    def peek(self, key: K) -> V | None:
        """The key's cached value while it is fresh (what `get` returns without waiting), else None: for
        values that are never None (every use here)."""
        cached = self._fresh(key)
        return None if cached is None else cached.value

    def _fresh(self, key: K) -> _Cached[V] | None:
        cached = self._cache.get(key)
        return cached if cached is not None and self._monotonic() - cached.at < self._ttl else None

    async def cancel_pending(self) -> None:
        """Stop the reads still in flight (shutdown)."""
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _settle(self, key: K, task: asyncio.Task[V]) -> None:
        if self._inflight.get(key) is task:
            del self._inflight[key]
        if task.cancelled() or task.exception() is not None:
            return
        now = self._monotonic()
        # Forget what has expired, so that the cache holds only the keys of the last few seconds.
        for old in [k for k, v in self._cache.items() if now - v.at >= self._ttl]:
            del self._cache[old]
        self._cache[key] = _Cached(now, task.result())


async def _run(read: Callable[[], Awaitable[V]]) -> V:
    return await read()
