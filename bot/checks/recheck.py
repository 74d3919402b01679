"""A target probed again after its alert resolved: the probe *Probe now* runs, then the path check with a
few samples (`bot.alerts.verification` asks it, `resolution.verify_after` after the resolve)."""

from __future__ import annotations

from bot.checks.path import check_path
from bot.checks.probe import ProbeRequest
from bot.checks.probe_run import run_probe
from bot.domain.probe_result import ProbeResult, pointer_in
from bot.domain.verification import Recheck, failure_words
from bot.errors import ProxybotError
from bot.reads.context import CheckContext, TargetRef
from config.clusters import ClusterSettings, TargetSettings

RECHECK_SAMPLES = 3  # the path check's samples each way: a verification, not an investigation


async def recheck(
    ctx: CheckContext,
    cluster: ClusterSettings,
    target: TargetSettings,
    *,
    samples: int = RECHECK_SAMPLES,
    dial_window: float = 3.0,
) -> Recheck:
    """Probe `target` through `cluster` once; when it answers, check the path too."""
    ref = TargetRef(cluster, target)
    probe = target.probe
    result = await run_probe(ctx, ProbeRequest(ref, probe.group_version, probe.resource, probe.namespace))
    checked = _rechecked(result)
    if not checked.passed:
        return checked
    try:
        path = await check_path(ctx, ref, samples=samples, dial_window=dial_window)
    except (ProxybotError, TimeoutError, OSError):  # the probe answered: the path is only not judged
        return checked
    return Recheck(
        checked.cluster, checked.target, True, checked.status, checked.seconds, path=path.verdict.value
    )


def _rechecked(result: ProbeResult) -> Recheck:
    failed = next((a for a in result.attempts if not result.passed and a.outcome is result.outcome), None)
    shown = failed or (result.attempts[-1] if result.attempts else None)
    return Recheck(
        cluster=result.request.cluster,
        target=result.request.target,
        passed=result.passed,
        status=None if shown is None else shown.status,
        seconds=None if result.latency is None else result.latency.p50,
        failure=failure_words(result.outcome, pointer_in(list(result.evidence))),
    )
