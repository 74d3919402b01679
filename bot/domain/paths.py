"""The only Kubernetes API paths proxybot ever requests, built from validated parts.

A user can name a group/version, resource and namespace (the probe), so every part is checked against
the Kubernetes name rules before it is placed in a path: none can hold `/`, `%`, `?`, `#` or `..`, so no
argument can reach another API path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.errors import InputError
from config.names import dns1035_label, dns1123_label, group_version

SYNCER_METRICS = "/metrics/syncer"


@dataclass(frozen=True, slots=True)
class ApiPath:
    """A validated, read-only request path with its query."""

    path: str
    query: tuple[tuple[str, str], ...] = ()


def _checked(field: str, value: str, rule: Callable[[str], str]) -> str:
    try:
        return rule(value)
    except ValueError as err:
        raise InputError(f"{field}: {err}") from None


def probe_path(gv: str, namespace: str, resource: str, *, limit: int = 1) -> ApiPath:
    """The guide's synthetic probe: `GET /apis/<gv>/namespaces/<ns>/<resource>?limit=1`."""
    gv = _checked("group_version", gv, group_version)
    namespace = _checked("namespace", namespace, dns1123_label)
    resource = _checked("resource", resource, dns1035_label)
    return ApiPath(f"/apis/{gv}/namespaces/{namespace}/{resource}", (("limit", str(limit)),))


def discovery_path(gv: str) -> ApiPath:
    """Discovery of one proxied group/version (answered from the fallback document when degraded)."""
    return ApiPath(f"/apis/{_checked('group_version', gv, group_version)}")


def syncer_metrics_path() -> ApiPath:
    return ApiPath(SYNCER_METRICS)


def pod_log_path(
    namespace: str,
    pod: str,
    container: str | None,
    *,
    tail_lines: int,
    since_seconds: int | None = None,
    limit_bytes: int | None = None,
) -> ApiPath:
    """One container's log, each line prefixed by its time: the last `tail_lines`, of the last
    `since_seconds` when given, at most `limit_bytes`."""
    namespace = _checked("namespace", namespace, dns1123_label)
    pod = _checked("pod", pod, dns1123_label)
    query = [("timestamps", "true"), ("tailLines", str(tail_lines))]
    if container is not None:
        query.insert(0, ("container", _checked("container", container, dns1123_label)))
    if since_seconds is not None:
        query.append(("sinceSeconds", str(since_seconds)))
    if limit_bytes is not None:
        query.append(("limitBytes", str(limit_bytes)))
    return ApiPath(f"/api/v1/namespaces/{namespace}/pods/{pod}/log", tuple(query))


# -- the control plane cluster: a tenant's pods and its StatefulSet ------------------------------------------

CONTROL_PLANE_PODS = "app=vcluster"  # the vendor's selector for a tenant's control-plane pods


def control_plane_pods_path(namespace: str) -> ApiPath:
    """The control-plane pods of the tenant hosted in `namespace` (`-l app=vcluster`, as the vendor lists)."""
    namespace = _checked("namespace", namespace, dns1123_label)
    return ApiPath(f"/api/v1/namespaces/{namespace}/pods", (("labelSelector", CONTROL_PLANE_PODS),))


def statefulset_path(namespace: str, name: str) -> ApiPath:
    """One StatefulSet (a tenant's control plane: `release` in its namespace)."""
    namespace = _checked("namespace", namespace, dns1123_label)
    name = _checked("release", name, dns1123_label)
    return ApiPath(f"/apis/apps/v1/namespaces/{namespace}/statefulsets/{name}")


# -- the client tenant cluster: the proxy's APIServices and their Services --------------------------------

_APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"


def apiservice_path(gv: str) -> ApiPath:
    """The APIService vCluster registers for a proxied group/version: `<version>.<group>`."""
    group, _, version = _checked("group_version", gv, group_version).partition("/")
    return ApiPath(f"{_APISERVICES}/{version}.{group}")


def labelled_apiservices_path(selector: str) -> ApiPath:
    """The APIServices carrying a label (a constant of the caller's, never a user's word)."""
    return ApiPath(_APISERVICES, (("labelSelector", selector),))


def service_path(namespace: str, name: str) -> ApiPath:
    """One Service, as an APIService's `spec.service` names it (both parts read from the cluster)."""
    namespace = _checked("spec.service.namespace", namespace, dns1123_label)
    name = _checked("spec.service.name", name, dns1123_label)
    return ApiPath(f"/api/v1/namespaces/{namespace}/services/{name}")
