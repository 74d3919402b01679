"""The live reads behind a storm's summary and table: each cluster of the storm read once, within a budget.

The cluster reads are `bot.live.LiveState`'s, shared and cached: in a storm the pipeline has just read the
same clusters for the alerts, so these answer from the cache. A read that is late is not waited for (its
targets show "not read"); it goes on for the next caller, since a shared read outlives one that stops
waiting. Every target's state is worked out once per snapshot read, in one pass over it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Protocol

from bot.domain.snapshot import ProxySnapshot
from bot.domain.storm_targets import TargetLive, TargetsRead, live_by_target
from bot.live import ClusterRead


class LiveReader(Protocol):
    """Live proxy state per cluster (`bot.live.LiveState` is one); failures are returned, never raised."""

    async def read(self, cluster: str) -> ClusterRead: ...


class StormReads:
    """Reads the storm's clusters for its table; remembers each snapshot's targets."""

    def __init__(self, live: LiveReader | None, budget: float) -> None:
        self._live = live
        self._budget = budget
        self._seen: dict[str, tuple[ProxySnapshot, Mapping[str, TargetLive]]] = {}

    async def read(self, clusters: Iterable[str]) -> dict[str, TargetsRead]:
        """Every cluster's targets with their state now, or why the cluster was not read."""
        names = sorted(set(clusters))
        if self._live is None:
            return {name: TargetsRead(None, "no live state source") for name in names}
        live = self._live
        tasks = {name: asyncio.create_task(live.read(name), name=f"storm-read-{name}") for name in names}
        if tasks:
            await asyncio.wait(tasks.values(), timeout=self._budget)
        late = [task for task in tasks.values() if not task.done()]
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        return {name: await self._targets(name, task) for name, task in tasks.items()}

    async def _targets(self, cluster: str, task: asyncio.Task[ClusterRead]) -> TargetsRead:
        if task.cancelled():
            return TargetsRead(None, f"not read within {self._budget:g} s")
        error = task.exception()
        if error is not None:
            return TargetsRead(None, f"read failed: {type(error).__name__}")
        read = task.result()
        if read.snapshot is None:
            return TargetsRead(None, read.unavailable or "no live state")
        seen = self._seen.get(cluster)
        if seen is None or seen[0] is not read.snapshot:
            # A page of hundreds of targets: read off the event loop (the snapshot is never changed).
            found = await asyncio.to_thread(live_by_target, read.snapshot, read.window)
            seen = (read.snapshot, found)
            self._seen[cluster] = seen
        return TargetsRead(seen[1])
