"""The client control plane's logs, read: the lines the vendor's log reference explains, per pod, for the
logs check (`bot.checks.logs`) and the alerts' enrichment (`ControlPlaneLogReader`).

The client's control-plane pods are the pods labelled `app=vcluster` in its namespace of the control
plane cluster (`clusters[].control_plane`; namespace `vcluster-<name>` by default). Every replica is read,
since in HA each one runs its own proxy and logs for itself: the last 100 lines of each, or the lines of
the last `--since` (at most 5 000). Reads need `list` on pods and `get` on pods/log in that namespace
only (config/deploy/base/rbac-control-plane.yaml). Lines are matched and redacted in
`bot.domain.log_reference`; nothing unredacted leaves this module.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.domain import durations
from bot.domain.diagnosis_readings import fmt_duration
from bot.domain.log_reference import LogEvidence, PodLog, log_evidence
from bot.domain.paths import CONTROL_PLANE_PODS, control_plane_pods_path, pod_log_path
from bot.errors import ClusterError, InputError
from bot.ports import Clock
from bot.reads.context import CheckContext, TargetRef
from bot.shared_reads import SharedReads
from config.clusters import ClusterSettings

if TYPE_CHECKING:  # kubernetes' client is imported by whoever opens a reader
    from bot.clients.kube import KubeReader

CONTAINER = "syncer"  # vCluster's control-plane container
DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"
TAIL_LINES = 100
SINCE_MAX_LINES = 5000
LIMIT_BYTES = 4 * 1024 * 1024
SINCE_LOW, SINCE_HIGH = 10, 7 * 86400
MAX_PODS = 20  # an HA control plane has 3 or 5; more is not a control plane


def parse_since(text: str | None) -> int | None:
    """`--since 10m` in seconds (10s..7d), None when not given; InputError names the option."""
    if text is None:
        return None
    return durations.parse_duration(text, field="--since", low=SINCE_LOW, high=SINCE_HIGH)


def scope_of(since: int | None) -> str:
    return f"last {TAIL_LINES} lines" if since is None else f"last {fmt_duration(since)}"


@dataclass(frozen=True, slots=True)
class ControlPlaneLogs:
    """What was read of one client's control-plane pods: each pod's lines (or why not), or why none."""

    cluster: str
    namespace: str
    since: int | None
    pods: tuple[PodLog, ...] = ()
    unavailable: str | None = None


_HINTS = {
    "forbidden": "the bot's identity lacks {verb} in {namespace} (see the shipped "
    "config/deploy/base/rbac-control-plane.yaml)",
    "unauthorized": "the control plane kubeconfig's credentials were rejected",
}


def _said(err: ClusterError, verb: str, namespace: str) -> str:
    hint = _HINTS.get(err.kind)
    return str(err) if hint is None else f"{err}: {hint.format(verb=verb, namespace=namespace)}"


def _container(pod: Mapping[str, Any]) -> str | None:
    """The container to read: vCluster's `syncer`, else the pod's default, else its only one."""
    names = [str(c.get("name")) for c in pod.get("spec", {}).get("containers", []) if c.get("name")]
    annotated = pod.get("metadata", {}).get("annotations", {}).get(DEFAULT_CONTAINER_ANNOTATION)
    for wanted in (CONTAINER, annotated):
        if wanted in names:
            return str(wanted)
    return None if len(names) <= 1 else names[0]


def _pods(body: bytes) -> list[tuple[str, str | None]]:
    """(name, container) of every pod of a PodList, by name."""
    listed = json.loads(body)
    items = listed.get("items") if isinstance(listed, dict) else None
    if not isinstance(items, list):
        raise ValueError("the answer is not a PodList")
    found = [(str(p["metadata"]["name"]), _container(p)) for p in items if isinstance(p, dict)]
    return sorted(found)


async def _pod_log(
    reader: KubeReader, namespace: str, pod: str, container: str | None, since: int | None, timeout: float
) -> PodLog:
    tail = TAIL_LINES if since is None else SINCE_MAX_LINES
    try:
        path = pod_log_path(
            namespace, pod, container, tail_lines=tail, since_seconds=since, limit_bytes=LIMIT_BYTES
        )
        answer = await reader.get_ok(path, timeout=timeout)
    except ClusterError as err:
        return PodLog(pod, error=_said(err, "get on pods/log", namespace))
    except InputError as err:  # a pod or container name the API should never have given
        return PodLog(pod, error=f"not read: {err}")
    return PodLog(pod, tuple(answer.text.splitlines()))


async def read_control_plane(
    ctx: CheckContext, cluster: ClusterSettings, *, since: int | None = None
) -> ControlPlaneLogs:
    """Every control-plane pod's log of one client (never raises: failures are said per pod or whole)."""
    namespace = cluster.control_plane_namespace
    if cluster.control_plane is None:
        why = (
            f"clusters[{cluster.name}].control_plane is not configured: proxybot does not know where this "
            "client's control plane runs"
        )
        return ControlPlaneLogs(cluster.name, namespace, since, unavailable=why)
    try:
        reader = await ctx.control_plane(cluster.name, cluster.control_plane)
        listed = await reader.get_ok(control_plane_pods_path(namespace), timeout=ctx.timeout)
        pods = _pods(listed.body)
    except ClusterError as err:
        return ControlPlaneLogs(
            cluster.name, namespace, since, unavailable=_said(err, "list on pods", namespace)
        )
    except (ValueError, KeyError, TypeError) as err:
        why = f"the pod list of {namespace} could not be read: {err}"
        return ControlPlaneLogs(cluster.name, namespace, since, unavailable=why)
    if not pods:
        why = f"no pod labelled {CONTROL_PLANE_PODS} in {namespace} of the control plane cluster"
        return ControlPlaneLogs(cluster.name, namespace, since, unavailable=why)
    reads = [_pod_log(reader, namespace, p, c, since, ctx.timeout) for p, c in pods[:MAX_PODS]]
    return ControlPlaneLogs(cluster.name, namespace, since, tuple(await asyncio.gather(*reads)))


def evidence_for(logs: ControlPlaneLogs, ref: TargetRef, group_version: str | None = None) -> LogEvidence:
    """The reference's lines about one target (of one of its group/versions, when given: an alert's) in
    what was read of its client's control plane."""
    scope = scope_of(logs.since)
    if logs.unavailable is not None:
        return LogEvidence(ref.name, logs.namespace, scope, (), (), logs.unavailable)
    gvs = ref.target.group_versions if group_version is None else (group_version,)
    return log_evidence(ref.name, logs.namespace, scope, logs.pods, gvs)


class ControlPlaneLogReader:
    """The alerts' reads: each client's last lines, one read per cluster shared for `ttl` seconds
    (a storm of alerts on one client reads its control plane once), at most `concurrent` clusters at a
    time (a storm over many clients does not flood the control plane cluster)."""

    def __init__(
        self,
        ctx: CheckContext,
        *,
        ttl: float = 5.0,
        concurrent: int = 16,
        monotonic: Clock = time.monotonic,
    ) -> None:
        self._ctx = ctx
        self._reads: SharedReads[str, ControlPlaneLogs] = SharedReads(ttl, monotonic)
        self._slots = asyncio.Semaphore(concurrent)

    async def read(self, cluster: ClusterSettings) -> ControlPlaneLogs:
        return await self._reads.get(cluster.name, lambda: self._read(cluster), name=f"logs-{cluster.name}")

    def ready(self, cluster: ClusterSettings) -> ControlPlaneLogs | None:
        """What `read` would return without waiting, else None."""
        return self._reads.peek(cluster.name)

    async def _read(self, cluster: ClusterSettings) -> ControlPlaneLogs:
        async with self._slots:
            return await read_control_plane(self._ctx, cluster)

    async def cancel_pending(self) -> None:
        await self._reads.cancel_pending()
