"""`path TARGET`: is the client's proxy reaching the target directly, or through the DERP relay?

No metric says which (the guide), so this gathers the guide's signals and weighs them:

1. latency floor: the probe request N times through the client and N times directly against the target
   (interleaved, so both see the same conditions); a relayed path adds a constant floor, so the gap between
   the two minimums is the evidence (`floor` >= `PathThresholds.floor` reads as relayed);
2. dial latency: two reads of `/metrics/syncer` around the samples; the dials of that window against the
   dials before it (a step up with no change on the target is consistent with a fallback to the relay);
3. NetworkPolicies of both ends in the control plane cluster(s): client UDP egress and target UDP ingress
   must both be allowed, or the pair stays on the relay; on one control plane cluster, each end's egress
   to the platform pods on TCP 10443 as well;
4. the client control plane's StatefulSet: `TS_DEBUG_DIAL_DIRECT=false` in its env turns direct dialing
   off, so every byte goes through the relay whatever the policies allow.

Verdict: neither the proxy nor the direct request answering says *cannot judge* (the target is down, and
its dials time out whichever the path); direct dialing turned off, a blocked policy, a floor or a dial step
says *likely relayed*; open policies or a negligible floor (with nothing against) say *likely direct*;
otherwise *unknown*. Only
*likely direct* with no blocked platform egress passes the check.
The signals are read in `bot.checks.path_signals`; this module runs them and weighs them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from bot.checks.path_signals import (
    DEFAULT_THRESHOLDS,
    PathThresholds,
    dial_reading,
    read_dial_direct,
    read_netpol,
    read_snapshot,
    sample_both_sides,
)
from bot.domain.path_result import (
    NOT_READ,
    DialDirectReading,
    DialReading,
    LatencySeries,
    NetpolReading,
    PathResult,
    PathVerdict,
)
from bot.domain.paths import ApiPath, probe_path
from bot.domain.proxy_answers import DIAL_TIMEOUT
from bot.errors import InputError
from bot.reads.context import CheckContext, TargetRef

DEFAULT_SAMPLES = 10
MAX_SAMPLES = 50
Progress = Callable[[str], None]


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
    thresholds: PathThresholds = DEFAULT_THRESHOLDS,
    progress: Progress | None = None,
) -> PathResult:
    """Run the three signals for one configured target and weigh them (reads only)."""
    say = progress or (lambda _: None)
    request = probe_path(
        ref.target.probe.group_version, ref.target.probe.namespace, ref.target.probe.resource
    )
    client = await ctx.client(ref.cluster)
    started = time.monotonic()
    before = await read_snapshot(client, ctx.timeout)
    say(f"sampling {ref.name} {samples} times through {ref.cluster.name} and directly…")
    client_series, direct_series = await sample_both_sides(ctx, ref, client, request, samples)
    await asyncio.sleep(max(0.0, dial_window - (time.monotonic() - started)))
    after = await read_snapshot(client, ctx.timeout)
    dial = dial_reading(before, after, time.monotonic() - started, ref.name, thresholds)
    say(f"reading NetworkPolicies of {ref.cluster.name} and {ref.name}…")
    netpol = await read_netpol(ctx, ref)
    dial_direct = await read_dial_direct(ctx, ref)
    return weigh(ref, _spelled(request), client_series, direct_series, dial, netpol, thresholds, dial_direct)


def _spelled(path: ApiPath) -> str:
    return path.path + ("?" + "&".join(f"{k}={v}" for k, v in path.query) if path.query else "")


# -- the verdict ---------------------------------------------------------------------------------------


def weigh(
    ref: TargetRef,
    request: str,
    client: LatencySeries,
    direct: LatencySeries | None,
    dial: DialReading,
    netpol: NetpolReading,
    thresholds: PathThresholds = DEFAULT_THRESHOLDS,
    dial_direct: DialDirectReading = NOT_READ,
) -> PathResult:
    """The verdict from the signals, with the evidence in words and the fix."""
    partial = PathResult(
        ref.name, ref.cluster.name, request, client, direct, dial, netpol, PathVerdict.UNKNOWN, (), ()
    )
    floor = partial.floor
    floor_relayed = floor is not None and floor >= thresholds.floor
    floor_direct = floor is not None and floor < thresholds.floor
    if not client.seconds and direct is not None and not direct.seconds:
        verdict = PathVerdict.CANNOT_JUDGE
    elif dial_direct.off or netpol.permits is False or floor_relayed or dial.step:
        verdict = PathVerdict.LIKELY_RELAYED
    elif not client.seconds:
        # Nothing came back through the proxy: policies that allow a direct path say nothing of the
        # path traffic actually takes while it does not flow.
        verdict = PathVerdict.UNKNOWN
    elif netpol.permits or floor_direct:
        verdict = PathVerdict.LIKELY_DIRECT
    else:
        verdict = PathVerdict.UNKNOWN
    judged = verdict is not PathVerdict.CANNOT_JUDGE
    evidence = (*_dial_direct_words(dial_direct), *_evidence(partial, floor, thresholds, judged=judged))
    fix = _fix(ref, netpol, verdict, direct is None, dial_direct)
    return PathResult(
        ref.name, ref.cluster.name, request, client, direct, dial, netpol, verdict, evidence, fix, dial_direct
    )


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:.1f} ms"


def _evidence(
    result: PathResult, floor: float | None, thresholds: PathThresholds, *, judged: bool = True
) -> tuple[str, ...]:
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
    out.append(_dial_words(result.dial, judged=judged))
    for end in (result.netpol.egress, result.netpol.ingress):
        out.append(f"{end.direction.value.lower()} of {end.pods.spelled}: {end.state.value}: {end.detail}")
    out += [f"platform egress: {problem}" for problem in result.netpol.platform_egress]
    return tuple(out)


def _dial_direct_words(reading: DialDirectReading) -> tuple[str, ...]:
    if reading.off:
        return (f"{reading.detail}: direct dialing is off, every byte goes through the relay",)
    return (f"direct dialing: {reading.detail}",)


def _lifetime(p99: float | None) -> str:
    """The dial p99 since the proxy started, read: near the dial timeout it is dials failing."""
    if p99 is None:
        return ""
    said = f"; since the proxy started, p99 {p99:.2f} s"
    if p99 >= DIAL_TIMEOUT * 0.8:
        return said + f", near the {DIAL_TIMEOUT:g} s dial timeout: dials have been failing on the peer path"
    return said


def _dial_words(dial: DialReading, *, judged: bool = True) -> str:
    if dial.unavailable is not None:
        return f"dial latency: unavailable ({dial.unavailable})"
    if dial.step is None:
        return f"dial latency: no dials during the check{_lifetime(dial.lifetime_p99)}"
    if not dial.step:
        change = "no step"
    elif dial.recent_p99 is not None and dial.recent_p99 >= DIAL_TIMEOUT / 2:
        # The relay adds a hop to each dial; dials that run into the timeout fail on the peer path.
        change = f"stepped up near the {DIAL_TIMEOUT:g} s dial timeout: dials failing, not a relay fallback"
    elif judged:
        change = "stepped up: consistent with a fallback to the relay"
    else:  # a target that answers nothing: its dials run into the 5 s timeout whatever the path
        change = "stepped up: dials to a target that does not answer time out, whichever the path"
    return (
        f"dial p50/p99 over the last {dial.window_seconds:.0f} s "
        f"{_ms(dial.recent_p50)}/{_ms(dial.recent_p99)} vs before "
        f"{_ms(dial.earlier_p50)}/{_ms(dial.earlier_p99)} (lifetime p99 {_ms(dial.lifetime_p99)}): {change}"
    )


def netpol_invocation(netpol: NetpolReading) -> str:
    """The `proxybot netpol` invocation that prints both ends' vcluster.yaml rules."""
    line = f"proxybot netpol --client {netpol.egress.pods.spelled} --target {netpol.ingress.pods.spelled}"
    return line if netpol.same_cluster else line + " --cross-cluster <target endpoint CIDR>"


def _fix(
    ref: TargetRef,
    netpol: NetpolReading,
    verdict: PathVerdict,
    no_direct: bool,
    dial_direct: DialDirectReading,
) -> tuple[str, ...]:
    out = []
    if verdict is PathVerdict.CANNOT_JUDGE:
        out.append(
            "cannot judge the path: neither the proxy nor the direct request gets a successful answer, so "
            f"the target is down: check its control plane (`/proxy status {ref.name}`), then run the path "
            "check again"
        )
    if dial_direct.off:
        out.append(
            f"remove TS_DEBUG_DIAL_DIRECT from controlPlane.statefulSet.env in {ref.cluster.name}'s "
            "vcluster.yaml (false turns direct dialing off: the relay carries everything), then apply it; "
            "the platform's TSNet troubleshooting page sets it to false where restricted egress blocks the "
            "platform: check that is not why it was set"
        )
    out += [
        f"allow egress on TCP 10443 to the platform pods ({problem.split(';')[0]})"
        for problem in netpol.platform_egress
    ]
    missing = [end for end in (netpol.egress, netpol.ingress) if end.permits is False]
    if missing:
        ends = " and ".join(f"{e.direction.value.lower()} on {e.pods.spelled}" for e in missing)
        out.append(f"add the UDP peer rule ({ends}; both ends are needed): run `{netpol_invocation(netpol)}`")
    elif verdict is PathVerdict.LIKELY_RELAYED and not dial_direct.off:
        out.append(
            "the policies allow the direct path: check NAT topology (symmetric NAT defeats hole punching), "
            "security groups and outbound UDP to the peer endpoints and STUN; enable "
            "LOFT_LOG_TSNET_CONTROL_PLANE on the platform to see relay traffic"
        )
    unknown = [end for end in (netpol.egress, netpol.ingress) if end.permits is None]
    for end in unknown:
        out.append(f"could not check {end.direction.value.lower()} of {end.pods.spelled}: {end.detail}")
    if no_direct and verdict in (PathVerdict.LIKELY_DIRECT, PathVerdict.UNKNOWN):
        out.append(f"configure `direct` for {ref.name} to measure the latency floor")
    return tuple(out)
