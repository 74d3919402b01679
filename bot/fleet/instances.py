"""The platform's VirtualClusterInstances, read: pure, a list document in, instances and problems out.

Where each fact lives is in docs/platform-api.md: the project is the instance's namespace without the
platform's project namespace prefix (`p-` by default, the `Self`'s `status.projectNamespacePrefix`); the
control plane's connected cluster, namespace and release are `spec.clusterRef`; the effective vcluster.yaml
is `status.virtualCluster.helmRelease.values` (rendered from a template or not), else the inline
`spec.template.helmRelease.values`; the version is the chart's. A malformed instance is a problem naming it,
never a crash; a name that would not be a valid URL path segment is refused before any path is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from config import names

DEFAULT_PREFIX = "p-"


@dataclass(frozen=True, slots=True)
class Instance:
    """One VirtualClusterInstance, as the bot needs it."""

    project: str
    name: str
    cluster: str  # the connected cluster its control plane runs in
    namespace: str  # the control plane's namespace there
    release: str  # the virtual cluster's release name in that namespace
    values: str | None  # the effective vcluster.yaml; None: the platform reports none yet
    version: str | None
    phase: str | None
    annotations: Mapping[str, str]

    @property
    def ref(self) -> str:
        """`<project>/<name>`: how targets are named in the proxy's series."""
        return f"{self.project}/{self.name}"


@dataclass(frozen=True, slots=True)
class FleetProblem:
    """Something the fleet's reading found wrong about one instance or entry, in a sentence."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def read_instances(
    listed: object, prefix: str = DEFAULT_PREFIX
) -> tuple[tuple[Instance, ...], tuple[FleetProblem, ...]]:
    """The instances of a `VirtualClusterInstanceList` document and what was wrong with the others."""
    items = listed.get("items") if isinstance(listed, Mapping) else None
    if not isinstance(items, list):
        return (), (FleetProblem("the platform's answer", "not a VirtualClusterInstanceList (no items)"),)
    found: list[Instance] = []
    problems: list[FleetProblem] = []
    for index, item in enumerate(items):
        try:
            found.append(_instance(item, prefix))
        except _Malformed as bad:
            problems.append(FleetProblem(bad.where or f"items[{index}]", str(bad)))
    return tuple(found), tuple(problems)


class _Malformed(ValueError):
    def __init__(self, what: str, where: str = "") -> None:
        super().__init__(what)
        self.where = where


def _instance(item: object, prefix: str) -> Instance:
    meta = _mapping(item, "metadata")
    namespace, name = _text(meta, "namespace"), _text(meta, "name")
    where = f"instance {namespace or '?'}/{name or '?'}"
    if not namespace or not name:
        raise _Malformed("metadata.namespace and metadata.name are required", where)
    try:
        return _named(item, meta, namespace, name, prefix)
    except _Malformed as bad:
        raise _Malformed(str(bad), bad.where or where) from None


def _named(item: object, meta: Mapping[str, Any], namespace: str, name: str, prefix: str) -> Instance:
    """The rest of an instance whose namespace and name are known (a problem is then located by them)."""
    if not namespace.startswith(prefix):
        raise _Malformed(f"its namespace is not a project's (they start with {prefix!r})")
    spec, status = _mapping(item, "spec"), _mapping(item, "status")
    ref = _mapping(spec, "clusterRef")
    project = namespace.removeprefix(prefix)
    cluster, cp_namespace = _text(ref, "cluster"), _text(ref, "namespace")
    release = _text(ref, "virtualCluster") or name
    for field, value in (("project", project), ("name", name), ("clusterRef.cluster", cluster)):
        try:
            names.dns1123_label(value or "")
        except ValueError as exc:
            raise _Malformed(f"{field}: {exc}") from None
    for field, value in (("clusterRef.namespace", cp_namespace), ("clusterRef.virtualCluster", release)):
        try:
            names.dns1123_label(value or "")
        except ValueError as exc:
            raise _Malformed(f"{field}: {exc}") from None
    rendered = _mapping(_mapping(status, "virtualCluster"), "helmRelease")
    inline = _mapping(_mapping(spec, "template"), "helmRelease")
    values = _text(rendered, "values") or _text(inline, "values")
    version = _text(_mapping(rendered, "chart"), "version") or _text(_mapping(inline, "chart"), "version")
    annotations = {
        str(k): v
        for k, v in _mapping(meta, "annotations").items()
        if isinstance(v, str) and isinstance(k, str)
    }
    return Instance(
        project=project,
        name=name,
        cluster=cluster or "",
        namespace=cp_namespace or "",
        release=release,
        values=values,
        version=version,
        phase=_text(status, "phase"),
        annotations=annotations,
    )


def _mapping(parent: object, key: str) -> Mapping[str, Any]:
    value = parent.get(key) if isinstance(parent, Mapping) else None
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _Malformed(f"{key} is not a mapping")
    return value


def _text(parent: Mapping[str, Any], key: str) -> str | None:
    value = parent.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _Malformed(f"{key} is not text")
    return value
