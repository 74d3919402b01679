"""Reading the fleet for the digest: every client cluster and probe CronJob, bounded, each with a timeout.

    Bound(concurrency, timeout)       at most `concurrency` calls at once, each cut off after `timeout`:
                                      every fleet fan-out of the digest goes through one (here, in `pool`)
    read_fleet(clusters, read)        every cluster concurrently; a cluster that does not answer within
                                      `timeout` costs only that and is unreachable
    probe_runs(clusters, cronjobs)    the probe CronJob's last success per client, where configured
    triage_reads(clusters, source)    per client: versions, the targets' control-plane pods, the APIServices

`bot.digest.judge` turns the reads into the digest.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from bot.checks.verify_cronjob import cronjob_path, json_object, judge_cronjob
from bot.domain.digest import ProbeRun
from bot.domain.triage import ClusterTriage
from bot.domain.verify_result import Outcome
from bot.errors import ClusterError
from bot.live import ClusterRead
from bot.ports import Clock
from bot.reads.context import CheckContext
from bot.reads.triage import read_triage
from config.clusters import ClusterSettings

ReadCluster = Callable[[str], Awaitable[ClusterRead]]
# Reads at once, each from a different client cluster: the bound is on the bot (sockets, pages in memory).
# 40 rather than 20 since pages are parsed in worker processes: with 20, a cluster late in the fleet only
# started reading a second in, and a hung one there held the digest past its budget.
DEFAULT_CONCURRENCY = 40
DEFAULT_CLUSTER_TIMEOUT = 4.0  # below the 5 s budget a whole digest of a big fleet is held to
R = TypeVar("R")


# -- the bound -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Turn(Generic[R]):
    """One bounded call: its answer (None: cut off at the timeout) and when its slot began."""

    answer: R | None
    at: float  # wall clock
    started: float  # monotonic clock
    seconds: float  # in the slot, waiting for it not included


class Bound:
    """At most `concurrency` calls at once, each cut off after `timeout` seconds."""

    def __init__(
        self,
        concurrency: int = DEFAULT_CONCURRENCY,
        timeout: float = DEFAULT_CLUSTER_TIMEOUT,
        *,
        wall: Clock = time.time,
        monotonic: Clock = time.monotonic,
    ) -> None:
        self.timeout = timeout
        self._slots = asyncio.Semaphore(max(1, concurrency))
        self._wall, self._monotonic = wall, monotonic

    async def call(self, work: Callable[[], Awaitable[R]]) -> Turn[R]:
        """`work()` once a slot is free, cut off after the timeout."""
        async with self._slots:
            at, started = self._wall(), self._monotonic()
            try:
                async with asyncio.timeout(self.timeout):
                    answer: R | None = await work()
            except TimeoutError:
                answer = None
            return Turn(answer, at, started, self._monotonic() - started)


# -- the clusters ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterOutcome:
    """One cluster's read and what it cost (seconds of wall time, waiting for a slot not included)."""

    read: ClusterRead
    seconds: float
    timed_out: bool = False


async def read_fleet(
    clusters: Sequence[str],
    read: ReadCluster,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float = DEFAULT_CLUSTER_TIMEOUT,
    wall: Clock = time.time,
    monotonic: Clock = time.monotonic,
) -> dict[str, ClusterOutcome]:
    """Every cluster read at most `concurrency` at a time; each read is cut off after `timeout` seconds."""
    bound = Bound(concurrency, timeout, wall=wall, monotonic=monotonic)

    async def one(name: str) -> ClusterOutcome:
        turn = await bound.call(lambda: read(name))
        if turn.answer is None:
            why = f"cluster {name}: no answer within {timeout:g} s (timed out)"
            return ClusterOutcome(ClusterRead(name, wall(), None, None, why), turn.seconds, True)
        return ClusterOutcome(turn.answer, turn.seconds)

    outcomes = await asyncio.gather(*(one(name) for name in clusters))
    return {o.read.cluster: o for o in outcomes}


# -- the probe CronJobs ----------------------------------------------------------------------------------


class CronJobSource(Protocol):
    """Reads a client's probe CronJob (`ContextCronJobs` over a `CheckContext` is one)."""

    async def probe_run(self, cluster: ClusterSettings, now: float) -> ProbeRun: ...


@dataclass
class ContextCronJobs:
    """The probe CronJob read from the control plane cluster and judged as `verify` judges it."""

    ctx: CheckContext

    async def probe_run(self, cluster: ClusterSettings, now: float) -> ProbeRun:
        access = cluster.control_plane
        assert access is not None  # probe_runs only asks for clusters with a control plane
        namespace = cluster.control_plane_namespace
        try:
            reader = await self.ctx.control_plane(cluster.name, access)
            response = await reader.get(cronjob_path(namespace), timeout=self.ctx.timeout)
        except ClusterError as err:
            return ProbeRun(cluster.name, False, None, f"could not read the CronJob: {err}")
        if response.status != 200:
            return ProbeRun(cluster.name, False, None, f"reading the CronJob answered HTTP {response.status}")
        cronjob = json_object(response.body)
        line = judge_cronjob(cluster.name, namespace, cronjob, now)
        age = _success_age(cronjob, now)
        return ProbeRun(cluster.name, line.outcome is Outcome.PASS, age, line.summary)


def _success_age(cronjob: Mapping[str, Any], now: float) -> float | None:
    raw = (cronjob.get("status") or {}).get("lastSuccessfulTime")
    if not isinstance(raw, str):
        return None
    try:
        return max(0.0, now - datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


async def probe_runs(
    clusters: Sequence[ClusterSettings],
    source: CronJobSource | None,
    now: float,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float = DEFAULT_CLUSTER_TIMEOUT,
) -> tuple[ProbeRun, ...]:
    """The probe CronJob of every client with a `control_plane`, bounded like `read_fleet`."""
    if source is None:
        return ()
    bound = Bound(concurrency, timeout)

    async def one(cluster: ClusterSettings) -> ProbeRun:
        turn = await bound.call(lambda: source.probe_run(cluster, now))
        if turn.answer is None:
            return ProbeRun(cluster.name, False, None, f"no answer within {timeout:g} s")
        return turn.answer

    chosen = [c for c in clusters if c.control_plane is not None]
    return tuple(await asyncio.gather(*(one(c) for c in chosen)))


# -- the triage reads: versions, target pods, APIServices -------------------------------------------------


class TriageSource(Protocol):
    """Reads what the verdict, the APIService health and the versions need (`ContextTriage` is one)."""

    async def read(self, cluster: ClusterSettings) -> ClusterTriage: ...


@dataclass
class ContextTriage:
    """The triage reads of `bot.reads.triage` over a `CheckContext`."""

    ctx: CheckContext

    async def read(self, cluster: ClusterSettings) -> ClusterTriage:
        return await read_triage(self.ctx, cluster)


async def triage_reads(
    clusters: Sequence[ClusterSettings],
    source: TriageSource | None,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float = DEFAULT_CLUSTER_TIMEOUT,
) -> dict[str, ClusterTriage | None]:
    """Every client's triage reads, bounded like `read_fleet`; None for a cluster cut off at the timeout."""
    if source is None:
        return {}
    bound = Bound(concurrency, timeout)

    async def one(cluster: ClusterSettings) -> tuple[str, ClusterTriage | None]:
        turn = await bound.call(lambda: source.read(cluster))
        return cluster.name, turn.answer

    return dict(await asyncio.gather(*(one(c) for c in clusters)))
