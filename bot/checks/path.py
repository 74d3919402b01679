"""`path TARGET`: is the client's proxy reaching the target directly, or through the DERP relay?

No metric says which (the guide), so this gathers the guide's signals and weighs them:

1. latency floor: the probe request N times through the client and N times directly against the target
   (interleaved, so both see the same conditions); a relayed path adds a constant floor, so the gap between
   the two minimums is the evidence (`floor` >= `PathThresholds.floor` reads as relayed);
2. dial latency: two reads of `/metrics/syncer` around the samples; the dials of that window against the
   dials before it (a step up with no change on the target is consistent with a fallback to the relay);
3. NetworkPolicies of both ends in the control plane cluster(s): client UDP egress and target UDP ingress
   must both be allowed, or the pair stays on the relay.

Verdict: a blocked policy, a floor or a dial step says *likely relayed*; open policies or a negligible floor
(with nothing against) say *likely direct*; otherwise *unknown*. Only *likely direct* passes the check.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum

from bot.checks.context import CheckContext, TargetRef
from bot.checks.netpol_read import (
    ControlPlanePods,
    Direction,
    EndVerdict,
    judge_end,
    read_policies,
    unknown_end,
)
from bot.checks.probe import PROBE_TIMEOUT
from bot.clients.kube import KubeReader
from bot.domain.delta import delta
from bot.domain.parser import parse_syncer
from bot.domain.paths import ApiPath, probe_path
from bot.domain.quantile import P50, P99, delta_quantile, quantile_of
from bot.domain.snapshot import DIAL_DURATION, ProxySnapshot
from bot.errors import ClusterError, InputError, MetricsParseError
from config.settings import ControlPlaneSettings

DEFAULT_SAMPLES = 10
MAX_SAMPLES = 50
Progress = Callable[[str], None]


class PathVerdict(StrEnum):
    LIKELY_DIRECT = "likely direct"
    LIKELY_RELAYED = "likely relayed"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class PathThresholds:
    """How large a difference counts as evidence of the relay (seconds, and a ratio for dial steps)."""

    floor: float = 0.020
    dial_step: float = 0.020
    dial_ratio: float = 1.5


@dataclass(frozen=True, slots=True)
class LatencySeries:
    """The answered samples of one side (seconds) and why the others failed."""

    side: str
    seconds: tuple[float, ...]
    failures: tuple[str, ...] = ()

    def quantile(self, q: float) -> float | None:
        """Nearest-rank quantile of the samples; None without any."""
        if not self.seconds:
            return None
        ordered = sorted(self.seconds)
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    @property
    def minimum(self) -> float | None:
        return min(self.seconds) if self.seconds else None


@dataclass(frozen=True, slots=True)
class DialReading:
    """Dial latency in the window of the check and before it; `unavailable` says why there is none."""

    recent_p50: float | None = None
    recent_p99: float | None = None
    earlier_p50: float | None = None
    earlier_p99: float | None = None
    lifetime_p99: float | None = None
    recent_dials: float = 0.0
    window_seconds: float = 0.0
    step: bool | None = None
    unavailable: str | None = None


@dataclass(frozen=True, slots=True)
class NetpolReading:
    """Both ends' NetworkPolicy verdicts and whether the two ends share a control plane cluster."""

    egress: EndVerdict
    ingress: EndVerdict
    same_cluster: bool

    @property
    def permits(self) -> bool | None:
        ends = (self.egress.permits, self.ingress.permits)
        if False in ends:
            return False
        return True if all(ends) else None


@dataclass(frozen=True)
class PathResult:
    """Everything `path` found, the verdict and what to do."""

    target: str
    cluster: str
    request: str
    client: LatencySeries
    direct: LatencySeries | None
    dial: DialReading
    netpol: NetpolReading
    verdict: PathVerdict
    evidence: tuple[str, ...]
    fix: tuple[str, ...]

    @property
    def floor(self) -> float | None:
        """Client minimum minus direct minimum: the constant the client path adds."""
        if self.direct is None or self.client.minimum is None or self.direct.minimum is None:
            return None
        return self.client.minimum - self.direct.minimum

    @property
    def passed(self) -> bool:
        return self.verdict is PathVerdict.LIKELY_DIRECT


def check_samples(samples: int) -> int:
    """`--samples` as given to the CLI or `/proxy path`; InputError outside 1..MAX_SAMPLES."""
    if not 1 <= samples <= MAX_SAMPLES:
        raise InputError(f"--samples: {samples} is not between 1 and {MAX_SAMPLES}")
    return samples


async def check_path(
    ctx: CheckContext,
    ref: TargetRef,
    *,
    samples: int = DEFAULT_SAMPLES,
    dial_window: float = 3.0,
    thresholds: PathThresholds = PathThresholds(),
    progress: Progress | None = None,
) -> PathResult:
    """Run the three signals for one configured target and weigh them (reads only)."""
    say = progress or (lambda _: None)
    request = probe_path(
        ref.target.probe.group_version, ref.target.probe.namespace, ref.target.probe.resource
    )
    client = await ctx.client(ref.cluster)
    started = time.monotonic()
    before = await _read_snapshot(client, ctx.timeout)
    say(f"sampling {ref.name} {samples} times through {ref.cluster.name} and directly…")
    client_series, direct_series = await _sample(ctx, ref, client, request, samples)
    await asyncio.sleep(max(0.0, dial_window - (time.monotonic() - started)))
    after = await _read_snapshot(client, ctx.timeout)
    dial = dial_reading(before, after, time.monotonic() - started, ref.name, thresholds)
    say(f"reading NetworkPolicies of {ref.cluster.name} and {ref.name}…")
    netpol = await read_netpol(ctx, ref)
    return weigh(ref, _spelled(request), client_series, direct_series, dial, netpol, thresholds)


def _spelled(path: ApiPath) -> str:
    return path.path + ("?" + "&".join(f"{k}={v}" for k, v in path.query) if path.query else "")


# -- signal 1: the latency floor -----------------------------------------------------------------------


async def _sample(
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


async def _read_snapshot(reader: KubeReader, timeout: float) -> ProxySnapshot | str:
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
    egress = await _end(ctx, ref.cluster.name, client_cp, Direction.EGRESS, client_pods, target_pods, same)
    ingress = await _end(ctx, ref.name, target_cp, Direction.INGRESS, target_pods, client_pods, same)
    return NetpolReading(egress, ingress, same)


async def _end(
    ctx: CheckContext,
    name: str,
    access: ControlPlaneSettings | None,
    direction: Direction,
    own: ControlPlanePods,
    other: ControlPlanePods,
    same_cluster: bool,
) -> EndVerdict:
    if access is None:
        return unknown_end(direction, own, f"no control_plane configured for {name}")
    try:
        reader = await ctx.control_plane(name, access)
        policies = await read_policies(reader, own.namespace, timeout=ctx.timeout)
    except ClusterError as err:
        return unknown_end(direction, own, str(err))
    return judge_end(policies, direction, own, other, same_cluster=same_cluster)


# -- the verdict ---------------------------------------------------------------------------------------


def weigh(
    ref: TargetRef,
    request: str,
    client: LatencySeries,
    direct: LatencySeries | None,
    dial: DialReading,
    netpol: NetpolReading,
    thresholds: PathThresholds = PathThresholds(),
) -> PathResult:
    """The verdict from the three signals, with the evidence in words and the fix."""
    partial = PathResult(
        ref.name, ref.cluster.name, request, client, direct, dial, netpol, PathVerdict.UNKNOWN, (), ()
    )
    floor = partial.floor
    floor_relayed = floor is not None and floor >= thresholds.floor
    floor_direct = floor is not None and floor < thresholds.floor
    if netpol.permits is False or floor_relayed or dial.step:
        verdict = PathVerdict.LIKELY_RELAYED
    elif not client.seconds:
        # Nothing came back through the proxy: policies that allow a direct path say nothing of the
        # path traffic actually takes while it does not flow.
        verdict = PathVerdict.UNKNOWN
    elif netpol.permits or floor_direct:
        verdict = PathVerdict.LIKELY_DIRECT
    else:
        verdict = PathVerdict.UNKNOWN
    evidence = _evidence(partial, floor, thresholds)
    fix = _fix(ref, netpol, verdict, direct is None)
    return PathResult(
        ref.name, ref.cluster.name, request, client, direct, dial, netpol, verdict, evidence, fix
    )


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:.1f} ms"


def _evidence(result: PathResult, floor: float | None, thresholds: PathThresholds) -> tuple[str, ...]:
    out = []
    if floor is None:
        out.append(
            "latency floor: not measured" + ("" if result.direct else " (no `direct` access configured)")
        )
    else:
        relayed = floor >= thresholds.floor
        word = "consistent with the relay" if relayed else "no relay floor"
        word += " (the direct requests were the slower ones)" if floor < 0 else ""
        out.append(
            f"latency floor {_ms(floor)} (client min - direct min; from {_ms(thresholds.floor)} it reads "
            f"as the relay): {word}"
        )
    out.append(_dial_words(result.dial))
    for end in (result.netpol.egress, result.netpol.ingress):
        out.append(f"{end.direction.value.lower()} of {end.pods.spelled}: {end.state.value}: {end.detail}")
    return tuple(out)


def _dial_words(dial: DialReading) -> str:
    if dial.unavailable is not None:
        return f"dial latency: unavailable ({dial.unavailable})"
    if dial.step is None:
        return f"dial latency: no dials to compare (p99 lifetime {_ms(dial.lifetime_p99)})"
    change = "stepped up: consistent with a fallback to the relay" if dial.step else "no step"
    return (
        f"dial p50/p99 over the last {dial.window_seconds:.0f} s "
        f"{_ms(dial.recent_p50)}/{_ms(dial.recent_p99)} vs before "
        f"{_ms(dial.earlier_p50)}/{_ms(dial.earlier_p99)} (lifetime p99 {_ms(dial.lifetime_p99)}): {change}"
    )


def netpol_command(netpol: NetpolReading) -> str:
    """The `proxybot netpol` invocation that prints both ends' vcluster.yaml rules."""
    command = f"proxybot netpol --client {netpol.egress.pods.spelled} --target {netpol.ingress.pods.spelled}"
    return command if netpol.same_cluster else command + " --cross-cluster <target endpoint CIDR>"


def _fix(ref: TargetRef, netpol: NetpolReading, verdict: PathVerdict, no_direct: bool) -> tuple[str, ...]:
    out = []
    missing = [end for end in (netpol.egress, netpol.ingress) if end.permits is False]
    if missing:
        ends = " and ".join(f"{e.direction.value.lower()} on {e.pods.spelled}" for e in missing)
        out.append(f"add the UDP peer rule ({ends}; both ends are needed): run `{netpol_command(netpol)}`")
    elif verdict is PathVerdict.LIKELY_RELAYED:
        out.append(
            "the policies allow the direct path: check NAT topology (symmetric NAT defeats hole punching), "
            "security groups and outbound UDP to the peer endpoints and STUN; enable "
            "LOFT_LOG_TSNET_CONTROL_PLANE on the platform to see relay traffic"
        )
    unknown = [end for end in (netpol.egress, netpol.ingress) if end.permits is None]
    for end in unknown:
        out.append(f"could not check {end.direction.value.lower()} of {end.pods.spelled}: {end.detail}")
    if no_direct and verdict is not PathVerdict.LIKELY_RELAYED:
        out.append(f"configure `direct` for {ref.name} to measure the latency floor")
    return tuple(out)
