"""`path`'s three signals, each read on its own: the latency floor (the probe request through the client
and directly, interleaved), dial latency around the samples, and both ends' NetworkPolicies.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from bot.checks.netpol_read import Json, judge_end, judge_platform_egress, read_policies, unknown_end
from bot.checks.probe import PROBE_TIMEOUT
from bot.domain.delta import delta
from bot.domain.parser import parse_syncer
from bot.domain.path_result import (
    ControlPlanePods,
    DialDirectReading,
    DialReading,
    Direction,
    EndVerdict,
    LatencySeries,
    NetpolReading,
)
from bot.domain.paths import ApiPath
from bot.domain.quantile import P50, P99, delta_quantile, quantile_of
from bot.domain.snapshot import DIAL_DURATION, ProxySnapshot
from bot.errors import ClusterError, MetricsParseError
from bot.reads.context import CheckContext, TargetRef
from bot.reads.control_plane import read_statefulset
from config.clusters import ControlPlaneSettings

if TYPE_CHECKING:  # kubernetes' client is imported by whoever opens a reader
    from bot.clients.kube import KubeReader


@dataclass(frozen=True, slots=True)
class PathThresholds:
    """How large a difference counts as evidence of the relay (seconds, and a ratio for dial steps)."""

    floor: float = 0.020
    dial_step: float = 0.020
    dial_ratio: float = 1.5


DEFAULT_THRESHOLDS = PathThresholds()
DIAL_DIRECT_ENV = "TS_DEBUG_DIAL_DIRECT"


# -- signal 1: the latency floor -----------------------------------------------------------------------


async def sample_both_sides(
    ctx: CheckContext, ref: TargetRef, client: KubeReader, request: ApiPath, samples: int
) -> tuple[LatencySeries, LatencySeries | None]:
    try:
        direct = await ctx.direct(ref)
    except ClusterError as err:
        return await _series(client, request, samples, "client"), LatencySeries("direct", (), (str(err),))
    through: list[float | str] = []
    straight: list[float | str] = []
    for _ in range(samples):
        if direct is not None:
            straight.append(await _one(direct, request))
        through.append(await _one(client, request))
    direct_series = _as_series("direct", straight) if direct is not None else None
    return _as_series("client", through), direct_series


async def _series(reader: KubeReader, request: ApiPath, samples: int, side: str) -> LatencySeries:
    return _as_series(side, [await _one(reader, request) for _ in range(samples)])


async def _one(reader: KubeReader, request: ApiPath) -> float | str:
    """Seconds of one answered (2xx) request, or why it failed."""
    try:
        response = await reader.get(request, timeout=PROBE_TIMEOUT)
    except ClusterError as err:
        return str(err)
    if 200 <= response.status < 300:
        return response.seconds
    return f"HTTP {response.status}"


def _as_series(side: str, results: list[float | str]) -> LatencySeries:
    seconds = tuple(r for r in results if isinstance(r, float))
    return LatencySeries(side, seconds, tuple(r for r in results if isinstance(r, str)))


# -- signal 2: dial latency ----------------------------------------------------------------------------


async def read_snapshot(reader: KubeReader, timeout: float) -> ProxySnapshot | str:
    try:
        text = await reader.syncer_metrics(timeout=timeout)
        return await asyncio.to_thread(parse_syncer, text)
    except (ClusterError, MetricsParseError) as err:
        return str(err)


def dial_reading(
    before: ProxySnapshot | str,
    after: ProxySnapshot | str,
    seconds: float,
    target: str,
    thresholds: PathThresholds = PathThresholds(),
) -> DialReading:
    """Dial quantiles of the window between two reads against those before it, and whether they stepped."""
    if isinstance(before, str) or isinstance(after, str):
        return DialReading(unavailable=before if isinstance(before, str) else str(after))
    window = delta(before, after, seconds)
    earlier = before.histogram(DIAL_DURATION, target=target)
    lifetime = after.histogram(DIAL_DURATION, target=target)
    recent = window.increase.histogram(DIAL_DURATION, target=target)
    reading = DialReading(
        recent_p50=delta_quantile(window, DIAL_DURATION, P50, target=target),
        recent_p99=delta_quantile(window, DIAL_DURATION, P99, target=target),
        earlier_p50=_finite(quantile_of(earlier, P50)) if earlier else None,
        earlier_p99=_finite(quantile_of(earlier, P99)) if earlier else None,
        lifetime_p99=_finite(quantile_of(lifetime, P99)) if lifetime else None,
        recent_dials=recent.count if recent else 0.0,
        window_seconds=seconds,
    )
    step = _stepped(reading.recent_p50, reading.earlier_p50, thresholds)
    step_p99 = _stepped(reading.recent_p99, reading.earlier_p99, thresholds)
    combined = None if step is None and step_p99 is None else bool(step or step_p99)
    return replace(reading, step=combined)


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def _stepped(recent: float | None, earlier: float | None, thresholds: PathThresholds) -> bool | None:
    """A step up: higher by the absolute threshold and by the ratio (both, so noise does not count)."""
    if recent is None or earlier is None:
        return None
    return recent - earlier >= thresholds.dial_step and recent >= earlier * thresholds.dial_ratio


# Go's strconv.ParseBool spellings of false, which is how the variable is read.
_FALSE = {"0", "f", "F", "false", "FALSE", "False"}


def dial_direct_of(statefulset: Mapping[str, Any], where: str) -> DialDirectReading:
    """`TS_DEBUG_DIAL_DIRECT` in the StatefulSet's containers: false turns direct dialing off."""
    template = (statefulset.get("spec") or {}).get("template") or {}
    for container in (template.get("spec") or {}).get("containers") or []:
        for env in container.get("env") or []:
            if env.get("name") != DIAL_DIRECT_ENV:
                continue
            at = f"{where} (container {container.get('name', '?')})"
            if "value" not in env:
                return DialDirectReading(None, f"{DIAL_DIRECT_ENV} in {at} comes from valueFrom: not read")
            value = str(env.get("value"))
            off = value in _FALSE
            return DialDirectReading(off, f"{DIAL_DIRECT_ENV}={value} in {at}")
    return DialDirectReading(False, f"{DIAL_DIRECT_ENV} not set in {where}: direct dialing on")


async def read_dial_direct(ctx: CheckContext, ref: TargetRef) -> DialDirectReading:
    """The client control plane's StatefulSet, read for the variable that turns direct dialing off."""
    access = ref.cluster.control_plane
    pods = _pods(access, ref.cluster.control_plane_namespace, ref.cluster.name)
    doc = await read_statefulset(ctx, ref.cluster.name, access, pods.namespace, pods.release)
    if isinstance(doc, str):
        return DialDirectReading(None, f"StatefulSet {pods.spelled} not read: {doc}")
    return dial_direct_of(doc, f"StatefulSet {pods.spelled}")


# -- signal 3: NetworkPolicies -------------------------------------------------------------------------


def _pods(access: ControlPlaneSettings | None, namespace: str, name: str) -> ControlPlanePods:
    return ControlPlanePods(namespace, access.release if access and access.release else name)


async def read_netpol(ctx: CheckContext, ref: TargetRef) -> NetpolReading:
    """Client egress and target ingress verdicts from each end's control plane cluster."""
    client_cp, target_cp = ref.cluster.control_plane, ref.target.control_plane
    client_pods = _pods(client_cp, ref.cluster.control_plane_namespace, ref.cluster.name)
    target_pods = _pods(target_cp, ref.target.control_plane_namespace, ref.target.tenant_name)
    same = (
        client_cp is not None
        and target_cp is not None
        and (client_cp.kubeconfig, client_cp.context) == (target_cp.kubeconfig, target_cp.context)
    )
    client_policies = await _policies(ctx, ref.cluster.name, client_cp, client_pods)
    target_policies = await _policies(ctx, ref.name, target_cp, target_pods)
    egress = _judged(client_policies, Direction.EGRESS, client_pods, target_pods, same)
    ingress = _judged(target_policies, Direction.INGRESS, target_pods, client_pods, same)
    platform: list[str] = []
    if same:
        for policies, pods in ((client_policies, client_pods), (target_policies, target_pods)):
            problem = None if isinstance(policies, str) else judge_platform_egress(policies, pods)
            platform += [problem] if problem else []
    return NetpolReading(egress, ingress, same, tuple(platform))


async def _policies(
    ctx: CheckContext, name: str, access: ControlPlaneSettings | None, own: ControlPlanePods
) -> list[Json] | str:
    """One end's NetworkPolicies, or why they could not be read."""
    if access is None:
        return f"no control_plane configured for {name}"
    try:
        reader = await ctx.control_plane(name, access)
        return await read_policies(reader, own.namespace, timeout=ctx.timeout)
    except ClusterError as err:
        return str(err)


def _judged(
    policies: list[Json] | str,
    direction: Direction,
    own: ControlPlanePods,
    other: ControlPlanePods,
    same_cluster: bool,
) -> EndVerdict:
    if isinstance(policies, str):
        return unknown_end(direction, own, policies)
    return judge_end(policies, direction, own, other, same_cluster=same_cluster)
