"""The fleet digest on every core: each client's page is parsed and its targets judged in a worker process.

    judge_fleet(clusters, sources, executor)   every cluster's page fetched (through `fleet.Bound`, as
                                               `read_fleet`), then parsed and judged in `executor`
                                               as soon as it arrives; returns each cluster's judged targets
    digest_pool(workers)                       a process pool (forkserver) of `workers`, by default
                                               `default_workers()`: the pod's CPU quota, capped
    warm_up(pool)                              start its workers now, not at the first digest
    judge_fleet_in_pool(clusters, sources)     `judge_fleet` in a pool started and stopped for one digest

Parsing a `/metrics/syncer` page and diagnosing its targets is pure CPU: in the bot's own process every
page waits on one interpreter lock, so a big fleet took longer than its digest budget. Only the page text
goes to a worker and only the small judged targets come back (a parsed snapshot is not picklable, and is not
needed afterwards). These reads bypass `LiveState` (its cache and window serve alert enrichment), so the
digest judges each target on the page alone, as on a cold `LiveState`.

Each worker costs tens of MB, so the pool follows the CPUs the pod may use (its cgroup quota), not the
node's cores that `os.sched_getaffinity` sees, and never exceeds `MAX_DEFAULT_WORKERS` unless configured
(`digest.workers`). Workers exit when the process that made the pool does, however it ends (a clean
shutdown joins them first; a SIGKILL or `os._exit` leaves them to notice): a worker left running would
keep the forkserver, and its own memory, alive after the bot.

`serve` also draws its alert charts in these workers (`PromEnricher.executor`): matplotlib holds the
interpreter lock for 100-200 ms a chart, and in the bot's own process that delayed the alert's post, going
out through the delivery worker at that moment. The forkserver imports the chart code and matplotlib
(which the bot's own process never imports), so no chart pays for matplotlib's import. Workers run at a
lower priority than the bot (`WORKER_NICENESS`): on a busy CPU, a chart being drawn otherwise still
delayed the post by taking the core it needed.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import select
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bot.digest.fleet import DEFAULT_CLUSTER_TIMEOUT, DEFAULT_CONCURRENCY, Bound
from bot.digest.judge import judge_cluster
from bot.domain.digest import TargetDigest
from bot.domain.parser import parse_syncer
from bot.errors import ClusterError, MetricsParseError
from bot.live import ClusterRead, MetricsSource
from bot.ports import Clock
from config.clusters import ClusterSettings


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


# Without a configured `digest.workers`, at most this many: the digest is one burst a day, and each worker
# is memory the pod's limit must hold on any node.
MAX_DEFAULT_WORKERS = 4
CGROUP_V2_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
CGROUP_V1_CPU = Path("/sys/fs/cgroup/cpu")


def quota_cores(cpu_max: Path = CGROUP_V2_CPU_MAX, cfs: Path = CGROUP_V1_CPU) -> float | None:
    """The CPUs this process's cgroup may use (its CFS quota over its period); None when unlimited.

    cgroup v2: `cpu.max` holds "max 100000" (unlimited) or "200000 100000" (2 CPUs); cgroup v1:
    `cpu.cfs_quota_us` (-1 unlimited) over `cpu.cfs_period_us`. A file that is missing or unreadable
    means no quota is known.
    """
    try:
        quota, period = cpu_max.read_text().split()[:2]
    except (OSError, ValueError):
        try:
            quota = (cfs / "cpu.cfs_quota_us").read_text().strip()
            period = (cfs / "cpu.cfs_period_us").read_text().strip()
        except OSError:
            return None
    try:
        cores = int(quota) / int(period)
    except ValueError:  # "max", or text that is not a number
        return None
    return cores if cores > 0 else None


def default_workers(cpu_max: Path = CGROUP_V2_CPU_MAX, cfs: Path = CGROUP_V1_CPU) -> int:
    """One worker per CPU the process may use (its affinity, and its cgroup quota rounded up), capped."""
    cores = len(os.sched_getaffinity(0))
    quota = quota_cores(cpu_max, cfs)
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, min(cores, MAX_DEFAULT_WORKERS))


# What `bot.render.chart` imports when it draws: loaded by the forkserver, so every worker has it.
CHART_MODULES = ("matplotlib.figure", "matplotlib.backends.backend_agg", "matplotlib.dates")
# Everything the forkserver imports before its first fork: what a worker runs (judging a page, drawing a
# chart), and nothing a worker does not (kubernetes' client: tests/bot/digest/test_pool.py).
FORKSERVER_PRELOAD = ("bot.digest.pool", "bot.alerts.prom_enrich", *CHART_MODULES)


class DigestPool(ProcessPoolExecutor):
    """The bot's worker processes (forkserver), `workers` of them; each exits when its maker does."""

    def __init__(self, workers: int) -> None:
        # Workers come from a forkserver, not from a fork of the bot: the bot runs threads (the store's,
        # the event loop's executors), and a fork copies any lock one of them holds. The forkserver
        # imports the judging and chart code once, so each worker starts with it loaded.
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(FORKSERVER_PRELOAD))
        super().__init__(workers, mp_context=context, initializer=start_worker, initargs=(os.getpid(),))
        self.workers = workers


def digest_pool(workers: int | None = None) -> DigestPool:
    """Worker processes for `judge_fleet`: `workers` of them, else `default_workers()`.

    `serve` starts the pool at startup (`warm_up`) and keeps it, so a digest never pays for the imports.
    """
    return DigestPool(workers or default_workers())


# A worker's niceness: its work (a digest, due in seconds; a chart, uploaded after the details reply that
# waits 5 s) yields the CPU to the bot's own process, whose posts, webhooks and command acks are due now.
# With a CPU to spare it changes nothing (the digest benchmark: 4.47 s before, 4.48 s after).
WORKER_NICENESS = 10


def start_worker(maker: int) -> None:
    """A worker's initializer: lower its priority (`WORKER_NICENESS`), ignore Ctrl-C, and `exit_with(maker)`.

    A terminal sends Ctrl-C to every process of its foreground job, the workers too: each printed a
    KeyboardInterrupt traceback. The bot ends its workers itself (the pool's shutdown, or `exit_with`)."""
    os.nice(WORKER_NICENESS)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with(maker)


def exit_with(maker: int) -> None:
    """A worker's initializer: exit as soon as the process `maker` ends, however it ends.

    A worker is the forkserver's child, not the bot's, so the kernel's parent-death signal would follow
    the forkserver; and the forkserver ends only when no process holds its "alive" pipe, which every
    worker does. So each worker watches the bot itself (a pidfd, readable once the process has ended;
    Linux 5.3 or later).
    """
    try:
        watched = os.pidfd_open(maker)
    except ProcessLookupError:  # already gone
        os._exit(0)
    threading.Thread(target=_exit_when_readable, args=(watched,), name="exit-with-bot", daemon=True).start()


def _exit_when_readable(fd: int) -> None:
    select.select([fd], [], [])
    # Not sys.exit: this is not the main thread, and nothing is left to clean up for a process gone.
    os._exit(0)


# How long each warm-up task holds its worker. The pool starts a worker for a task only when none is idle,
# and an instant task could free its worker before the next was submitted: of 4 workers 1 to 3 started, of
# 8 only 3 to 5. Each start is a few ms once the forkserver runs; this covers dozens on a busy machine.
WARM_UP_HOLD_SECONDS = 0.25


def _ready() -> int:
    time.sleep(WARM_UP_HOLD_SECONDS)
    return os.getpid()


async def warm_up(pool: DigestPool) -> None:
    """Start the pool's workers (and the forkserver) now, every one of them.

    Submitted from a thread: a submission that starts a worker waits for the forkserver, which imports the
    judging and chart code first (seconds at start), and on the event loop that wait held everything,
    `/healthz` and `/readyz` too."""
    futures = await asyncio.to_thread(lambda: [pool.submit(_ready) for _ in range(pool.workers)])
    await asyncio.gather(*(asyncio.wrap_future(future) for future in futures))


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
