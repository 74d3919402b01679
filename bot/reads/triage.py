"""Everything beyond the proxy metrics that `status`, `verify`, the digest and alerts read for triage.

    read_triage(ctx, cluster)        per client cluster, concurrently: the client's and each target's
                                     vCluster version (StatefulSet images), each target's control-plane pods,
                                     the client's APIServices and their Services (with the orphans)
    read_target_pods(ctx, target)    one target's control-plane pods
    SharedTargetPods(ctx)            the same by target name, one read per target for a few seconds
                                     (alert enrichment: a storm reads each target's pods once)
    metrics_of(read, target, ...)    the metrics' side of the verdict from a live read
    verdict_of(read, target, pods)   the quick-triage verdict (`bot.domain.verdict.judge`)

Log evidence is a parameter of the verdict (`logs`), read elsewhere; None means not read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from bot.domain.diagnosis_readings import Readings
from bot.domain.triage import ClusterTriage, TargetTriage
from bot.domain.verdict import (
    LogSignals,
    MetricsSignal,
    TargetPods,
    TargetVerdict,
    judge,
    metrics_signal,
    unreadable_metrics,
)
from bot.domain.versions import Role, TenantVersion, VClusterVersion, newest, too_old
from bot.live import ClusterRead
from bot.reads.apiservices import read_apiservices
from bot.reads.context import CheckContext
from bot.reads.control_plane import read_pods, read_version
from bot.shared_reads import SharedReads
from config.clusters import ClusterSettings, TargetSettings


def fleet_newest(triages: Sequence[ClusterTriage]) -> VClusterVersion | None:
    return newest(v for t in triages for v in t.versions())


async def read_triage(
    ctx: CheckContext,
    cluster: ClusterSettings,
    targets: Sequence[TargetSettings] | None = None,
    *,
    with_pods: bool = True,
) -> ClusterTriage:
    """The client's version, `targets`' (default: all of the cluster's) pods and versions, its APIServices;
    `with_pods=False` leaves the pods unread (`verify` judges no verdict)."""
    chosen = tuple(cluster.targets if targets is None else targets)
    client, apiservices, per_target = await asyncio.gather(
        client_version(ctx, cluster),
        read_apiservices(ctx, cluster, chosen),
        asyncio.gather(*(_target(ctx, target, with_pods) for target in chosen)),
    )
    return ClusterTriage(cluster.name, client, {t.target: t for t in per_target}, apiservices)


async def client_version(ctx: CheckContext, cluster: ClusterSettings) -> TenantVersion:
    access = cluster.control_plane
    release = (access.release if access else None) or cluster.name
    namespace = cluster.control_plane_namespace
    return await read_version(ctx, cluster.name, Role.CLIENT, access, namespace, release)


async def read_target_pods(ctx: CheckContext, target: TargetSettings) -> TargetPods:
    """The target's control-plane pods, from its `control_plane` (the cluster hosting it)."""
    return await read_pods(ctx, target.name, target.control_plane, target.control_plane_namespace)


NOT_CONFIGURED = "not a configured target"


class SharedTargetPods:
    """Target pods by target name: concurrent and recent callers share one read (single-flight + TTL)."""

    def __init__(self, ctx: CheckContext, ttl: float = 5.0) -> None:
        self._ctx = ctx
        self._reads: SharedReads[str, TargetPods] = SharedReads(ttl)

    async def read(self, target: str) -> TargetPods:
        found = self._ctx.settings.find_target(target)
        if found is None:
            return TargetPods.missing(NOT_CONFIGURED)
        settings = found[1]
        return await self._reads.get(
            target, lambda: read_target_pods(self._ctx, settings), name=f"pods-{target}"
        )

    def ready(self, target: str) -> TargetPods | None:
        """What `read` would return without waiting, else None."""
        cached = self._reads.peek(target)  # only configured targets are ever read
        if cached is not None or self._ctx.settings.find_target(target) is not None:
            return cached
        return TargetPods.missing(NOT_CONFIGURED)

    async def cancel_pending(self) -> None:
        await self._reads.cancel_pending()


async def _target(ctx: CheckContext, target: TargetSettings, with_pods: bool) -> TargetTriage:
    access = target.control_plane
    release = (access.release if access else None) or target.tenant_name
    namespace = target.control_plane_namespace
    pods, version = await asyncio.gather(
        read_target_pods(ctx, target) if with_pods else _unread_pods(),
        read_version(ctx, target.name, Role.TARGET, access, namespace, release),
    )
    return TargetTriage(target.name, pods, version)


async def _unread_pods() -> TargetPods:
    return TargetPods.missing("not read")


def metrics_of(read: ClusterRead, target: str, client: TenantVersion | None = None) -> MetricsSignal:
    """What the client's live read says of `target`; no read is "too old" when the client is before
    v0.37 (its version, or `/metrics/syncer` answering 404)."""
    if read.snapshot is None:
        old = read.failure == "not_found" or (client is not None and too_old(client))
        return unreadable_metrics(read.unavailable or "not read", too_old=old)
    return metrics_signal(Readings(read.snapshot, read.window, target))


def verdict_of(
    read: ClusterRead,
    target: str,
    pods: TargetPods,
    client: TenantVersion | None = None,
    logs: LogSignals | None = None,
) -> TargetVerdict:
    """The quick-triage verdict of one target from its client's live read and its pods (and logs)."""
    return judge(pods, metrics_of(read, target, client), logs)
