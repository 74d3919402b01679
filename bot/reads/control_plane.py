"""Reads from the control plane cluster: a tenant's control-plane pods (Ready or not) and its StatefulSet.

Both are read through the tenant's configured `control_plane` (a client's, or a target's): the pods with
the vendor's selector `-l app=vcluster` in the tenant's namespace, the StatefulSet `<release>` there for
the vCluster image it runs. Least privilege: `list` on pods and `get` on statefulsets, in the tenant
namespaces only (config/deploy/base/rbac-control-plane.yaml). A read that fails says why, never raises.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bot.domain.paths import CONTROL_PLANE_PODS, control_plane_pods_path, statefulset_path
from bot.domain.verdict import PodState, TargetPods
from bot.domain.versions import Role, TenantVersion, from_statefulset
from bot.errors import ClusterError, InputError
from bot.reads.context import CheckContext
from config.clusters import ControlPlaneSettings

NOT_CONFIGURED = "no control_plane is configured for it"


async def read_pods(
    ctx: CheckContext, tenant: str, access: ControlPlaneSettings | None, namespace: str
) -> TargetPods:
    """The tenant's control-plane pods with their readiness, or why they could not be listed."""
    if access is None:
        return TargetPods.missing(NOT_CONFIGURED)
    where = f"{namespace} (-l {CONTROL_PLANE_PODS})"
    try:
        reader = await ctx.control_plane(tenant, access)
        response = await reader.get_ok(control_plane_pods_path(namespace), timeout=ctx.timeout)
        items = _items(response.body)
    except (ClusterError, InputError) as err:
        return TargetPods(unavailable=str(err), where=where)
    return TargetPods(tuple(pod_state(item) for item in items), where=where)


def pod_state(pod: Mapping[str, Any]) -> PodState:
    """One pod's readiness as the endpoints controller sees it: Ready, and not terminating."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    name = str(meta.get("name", "?"))
    if meta.get("deletionTimestamp"):
        return PodState(name, False, "Terminating")
    ready = next(
        (c for c in status.get("conditions") or [] if isinstance(c, Mapping) and c.get("type") == "Ready"),
        None,
    )
    if ready is not None and ready.get("status") == "True":
        return PodState(name, True, "Ready")
    phase = status.get("phase") or "unknown phase"
    why = "" if ready is None else f", {ready.get('reason') or 'no reason given'}"
    return PodState(name, False, f"not Ready ({phase}{why})")


async def read_version(
    ctx: CheckContext,
    tenant: str,
    role: Role,
    access: ControlPlaneSettings | None,
    namespace: str,
    release: str,
) -> TenantVersion:
    """The vCluster version the tenant's control-plane StatefulSet runs, or why it is not known."""
    doc = await read_statefulset(ctx, tenant, access, namespace, release)
    if isinstance(doc, str):
        return TenantVersion(tenant, role, unavailable=doc)
    return from_statefulset(tenant, role, doc)


async def read_statefulset(
    ctx: CheckContext, tenant: str, access: ControlPlaneSettings | None, namespace: str, release: str
) -> Mapping[str, Any] | str:
    """The tenant's control-plane StatefulSet `<release>` as a JSON object, or why it could not be read."""
    if access is None:
        return NOT_CONFIGURED
    try:
        reader = await ctx.control_plane(tenant, access)
        response = await reader.get_ok(statefulset_path(namespace, release), timeout=ctx.timeout)
        doc = json.loads(response.body)
    except (ClusterError, InputError) as err:
        return str(err)
    except ValueError:
        return f"StatefulSet {namespace}/{release} is not JSON"
    if not isinstance(doc, Mapping):
        return f"StatefulSet {namespace}/{release} is not an object"
    return doc


def _items(body: bytes) -> list[Mapping[str, Any]]:
    try:
        doc = json.loads(body)
    except ValueError:
        raise ClusterError("control plane", "http", "the pod list is not JSON") from None
    items = doc.get("items") if isinstance(doc, Mapping) else None
    return [item for item in items or [] if isinstance(item, Mapping)]
