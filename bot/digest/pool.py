"""The fleet digest on every core: each client's page is parsed and its targets judged in a worker process.

    judge_fleet(clusters, sources, executor)   every cluster's page fetched (through `fleet.Bound`, as
                                               `read_fleet`), then parsed and judged in `executor`
                                               as soon as it arrives; returns each cluster's judged targets
    digest_pool()                              a process pool sized to the machine's cores (forkserver)
    warm_up(pool)                              start its workers now, not at the first digest
    judge_fleet_in_pool(clusters, sources)     `judge_fleet` in a pool started and stopped for one digest

Parsing a `/metrics/syncer` page and diagnosing its targets is pure CPU: in the bot's own process every
page waits on one interpreter lock, so a big fleet took longer than its digest budget. Only the page text
goes to a worker and only the small judged targets come back (a parsed snapshot is not picklable, and is not
needed afterwards). These reads bypass `LiveState` (its cache and window serve alert enrichment), so the
digest judges each target on the page alone, as on a cold `LiveState`.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass

from bot.digest.fleet import DEFAULT_CLUSTER_TIMEOUT, DEFAULT_CONCURRENCY, Bound, Clock
from bot.digest.judge import TargetDigest, judge_cluster
from bot.domain.parser import parse_syncer
from bot.errors import ClusterError, MetricsParseError
from bot.live import ClusterRead, MetricsSource
from config.settings import ClusterSettings


@dataclass(frozen=True, slots=True)
class JudgedCluster:
    """One client cluster's targets as judged, and what reading and judging it cost (seconds of wall time)."""

    cluster: str
    targets: tuple[TargetDigest, ...]
    seconds: float
    timed_out: bool = False


def judge_page(cluster: ClusterSettings, read_at: float, text: str) -> tuple[TargetDigest, ...]:
    """The cluster's targets judged from its page text (runs in a worker process)."""
    try:
        snapshot = parse_syncer(text)
    except MetricsParseError as err:
        return judge_cluster(cluster, ClusterRead(cluster.name, read_at, None, None, str(err)))
    return judge_cluster(cluster, ClusterRead(cluster.name, read_at, snapshot, None, None))


def digest_pool(workers: int | None = None) -> ProcessPoolExecutor:
    """Worker processes for `judge_fleet`, one per usable core unless told otherwise.

    Workers come from a forkserver, not from a fork of the bot: the bot runs threads (the store's, the
    event loop's executors), and a fork copies any lock one of them holds. The forkserver imports the
    judging code once, so each worker starts with it loaded; `serve` starts the pool at startup
    (`warm_up`) and keeps it, so a digest never pays for the imports.
    """
    count = workers or len(os.sched_getaffinity(0)) or 1
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["bot.digest.pool"])
    return ProcessPoolExecutor(count, mp_context=context)


def _ready() -> int:
    return os.getpid()


async def warm_up(pool: Executor, workers: int | None = None) -> None:
    """Start the pool's workers (and the forkserver) now."""
    loop = asyncio.get_running_loop()
    count = workers or len(os.sched_getaffinity(0)) or 1
    await asyncio.gather(*(loop.run_in_executor(pool, _ready) for _ in range(count)))


async def judge_fleet(
    clusters: Sequence[ClusterSettings],
    sources: Mapping[str, MetricsSource],
    executor: Executor,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float = DEFAULT_CLUSTER_TIMEOUT,
    wall: Clock = time.time,
    monotonic: Clock = time.monotonic,
) -> dict[str, JudgedCluster]:
    """Every cluster fetched at most `concurrency` at once, cut off after `timeout`; judged in `executor`."""
    bound = Bound(concurrency, timeout, wall=wall, monotonic=monotonic)
    loop = asyncio.get_running_loop()

    async def one(cluster: ClusterSettings) -> JudgedCluster:
        turn = await bound.call(lambda: _fetch(cluster, sources, timeout))
        if turn.answer is None:
            why = f"cluster {cluster.name}: no answer within {timeout:g} s (timed out)"
            return _unreachable(cluster, turn.at, why, turn.seconds, timed_out=True)
        if not isinstance(turn.answer, str):
            return _unreachable(cluster, turn.at, turn.answer.why, turn.seconds)
        # Judged outside the slot: the next cluster's fetch does not wait for this page's CPU.
        judged = await loop.run_in_executor(executor, judge_page, cluster, turn.at, turn.answer)
        return JudgedCluster(cluster.name, judged, monotonic() - turn.started)

    results = await asyncio.gather(*(one(c) for c in clusters))
    return {r.cluster: r for r in results}


@dataclass(frozen=True, slots=True)
class _Unread:
    """Why a cluster's page could not be fetched (other than by timing out)."""

    why: str


async def _fetch(
    cluster: ClusterSettings, sources: Mapping[str, MetricsSource], timeout: float
) -> str | _Unread:
    source = sources.get(cluster.name)
    if source is None:
        return _Unread(f"cluster {cluster.name} is not configured")
    try:
        return await source.syncer_metrics(timeout=timeout)
    except ClusterError as err:
        return _Unread(str(err))


def _unreachable(
    cluster: ClusterSettings, read_at: float, why: str, seconds: float, *, timed_out: bool = False
) -> JudgedCluster:
    read = ClusterRead(cluster.name, read_at, None, None, why)
    return JudgedCluster(cluster.name, judge_cluster(cluster, read), seconds, timed_out)


async def judge_fleet_in_pool(
    clusters: Sequence[ClusterSettings],
    sources: Mapping[str, MetricsSource],
    *,
    workers: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float = DEFAULT_CLUSTER_TIMEOUT,
) -> dict[str, JudgedCluster]:
    """`judge_fleet` in a pool of its own, started for this digest and stopped after it."""
    pool = digest_pool(workers)
    try:
        return await judge_fleet(clusters, sources, pool, concurrency=concurrency, timeout=timeout)
    finally:
        # Joining idle workers takes milliseconds, but it blocks: not on the event loop.
        await asyncio.to_thread(pool.shutdown)
