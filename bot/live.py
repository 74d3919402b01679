"""Live proxy state per client cluster: one read serves every caller for a few seconds.

A storm of 500 alerts from one cluster costs one `/metrics/syncer` read, not 500: concurrent callers
share the read in flight (single-flight) and later callers within `ttl` get the cached result
(`bot.shared_reads`; a read outlives a caller that stops waiting, and fills the cache). Earlier
reads are kept so that a window delta (reason counts over the last minutes) can be computed without
Prometheus.

A source whose last read failed (hung, refusing, unreachable) is read again by the next caller, who waits for
that read only `retry_wait` seconds (1 s), not the whole timeout: past it the caller gets the last failure,
said to be the last one, and the read goes on to fill the cache. The alert worker handles one notification at
a time, so without this every alert of a hung cluster would hold every other cluster's alerts behind it for
the whole enrichment budget.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from bot.domain.delta import ProxyDelta, delta
from bot.domain.parser import parse_syncer
from bot.domain.snapshot import ProxySnapshot
from bot.errors import ClusterError, MetricsParseError
from bot.ports import Clock
from bot.shared_reads import SharedReads

# How long a read serves every caller of its source (seconds).
TTL = 5.0
# How long a caller waits for a new read of a source whose last read failed.
RETRY_WAIT = 1.0
# Snapshots kept per window: one each tenth of it (see `LiveState._remember`).
HISTORY_STEPS = 10


class MetricsSource(Protocol):
    """What LiveState needs of a cluster client (`bot.clients.kube.KubeReader` is one)."""

    async def syncer_metrics(self, *, timeout: float) -> str: ...


@dataclass(frozen=True, slots=True)
class ClusterRead:
    """One read of a cluster's proxy metrics, or why there is none."""

    cluster: str  # the source: a cluster name, or `cluster/pod` for one addressable replica
    read_at: float  # wall-clock seconds
    snapshot: ProxySnapshot | None
    window: ProxyDelta | None
    unavailable: str | None  # "why", when snapshot is None
    failure: str | None = None  # the `ClusterError` kind behind `unavailable` (`not_found`: too old)

    @property
    def ok(self) -> bool:
        return self.snapshot is not None

    @property
    def replica(self) -> str | None:
        """The pod that was read, when the source pins one (names are DNS labels: `/` is unambiguous)."""
        return self.cluster.partition("/")[2] or None


class LiveState:
    """Cached, single-flight reads of `/metrics/syncer` per configured cluster."""

    def __init__(
        self,
        readers: Mapping[str, MetricsSource],
        *,
        observe: Callable[[float], None] = lambda seconds: None,
        ttl: float = TTL,
        timeout: float = 5.0,
        window: float = 300.0,
        monotonic: Clock = time.monotonic,
        wall: Clock = time.time,
        retry_wait: float = RETRY_WAIT,
    ) -> None:
        self._readers = dict(readers)
        # Told the seconds of every real read (not cache hits): the bot's enrichment-latency metric.
        self._observe = observe
        self._timeout = timeout
        self._window = window
        self._monotonic = monotonic
        self._wall = wall
        self._retry_wait = retry_wait
        self._reads: SharedReads[str, ClusterRead] = SharedReads(ttl, monotonic)
        self._history: dict[str, deque[tuple[float, ProxySnapshot]]] = {}
        self._failed: dict[str, ClusterRead] = {}  # the last read of a source, while it fails

    async def read(self, cluster: str) -> ClusterRead:
        """The cluster's state, at most `ttl` seconds old; failures are returned, never raised."""
        shared = self._reads.get(cluster, lambda: self._timed_read(cluster), name=f"live-{cluster}")
        failed = self._failed.get(cluster)
        if failed is None:
            return await shared
        reading = asyncio.ensure_future(shared)
        done, _ = await asyncio.wait({reading}, timeout=self._retry_wait)
        if reading in done:
            return reading.result()
        reading.cancel()  # this caller's wait only: the read itself is shared and goes on
        ago = max(0.0, self._wall() - failed.read_at)
        why = f"{failed.unavailable} (the last read, {ago:.0f}s ago; reading again)"
        return dataclasses.replace(failed, unavailable=why)

    def ready(self, cluster: str) -> ClusterRead | None:
        """What `read` would return without waiting (fresh in the cache while the source is not failing),
        else None."""
        return None if cluster in self._failed else self._reads.peek(cluster)

    async def cancel_pending(self) -> None:
        """Stop the reads still in flight (shutdown)."""
        await self._reads.cancel_pending()

    async def _timed_read(self, cluster: str) -> ClusterRead:
        started = self._monotonic()
        result = await self._read_now(cluster)
        self._observe(self._monotonic() - started)
        if result.ok:
            self._failed.pop(cluster, None)
        else:
            self._failed[cluster] = result
        return result

    async def _read_now(self, cluster: str) -> ClusterRead:
        now = self._wall()
        reader = self._readers.get(cluster)
        if reader is None:
            return ClusterRead(cluster, now, None, None, f"cluster {cluster} is not configured")
        try:
            text = await reader.syncer_metrics(timeout=self._timeout)
            snapshot = await asyncio.to_thread(parse_syncer, text)
        except ClusterError as err:
            return ClusterRead(cluster, now, None, None, str(err), err.kind)
        except MetricsParseError as err:
            return ClusterRead(cluster, now, None, None, str(err))
        return ClusterRead(cluster, now, snapshot, self._remember(cluster, snapshot), None)

    async def keep_warm(self, interval: float) -> None:
        """Read every cluster every `interval` seconds, so the first alert already has a window.

        Without earlier reads an alert's reason counts could only be "since the proxy started"; with
        them they cover the last minutes. Runs until cancelled (a worker of the app).
        """
        while True:
            await asyncio.gather(*(self.read(cluster) for cluster in self._readers))
            await asyncio.sleep(interval)

    def _remember(self, cluster: str, snapshot: ProxySnapshot) -> ProxyDelta | None:
        """Keep the snapshot if the last one kept is a tenth of the window old; return the delta from the
        oldest one still inside the window.

        Only the oldest is ever compared with, so snapshots a few seconds apart add nothing but memory: a
        parsed realistic page is over 1 MiB, and a cluster read every 5 s for five minutes kept 60 of them.
        Kept a tenth of the window apart, at most 11 are, and the window shown is at most that much short.
        """
        now = self._monotonic()
        history = self._history.setdefault(cluster, deque())
        while history and now - history[0][0] > self._window:
            history.popleft()
        window = delta(history[0][1], snapshot, now - history[0][0]) if history else None
        if not history or now - history[-1][0] >= self._window / HISTORY_STEPS:
            history.append((now, snapshot))
        return window
