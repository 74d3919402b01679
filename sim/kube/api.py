"""Path parsing and the generic list/get machinery every simulated cluster shares."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sim.kube import objects
from sim.kube.objects import Json, ResourceRow
from sim.kube.selectors import SelectorError, paginate, parse_selector


@dataclass
class Reply:
    """An HTTP answer: JSON or text body, headers, and simulated seconds the answer took."""

    code: int
    body: Json | str
    headers: dict[str, str] = field(default_factory=dict)
    took: float = 0.0


@dataclass(frozen=True)
class Query:
    """What a request asks, parsed from path, query string and headers."""

    method: str
    path: str
    params: Mapping[str, str]
    accept: str = "application/json"
    upgrade: bool = False
    body: bytes = b""


@dataclass(frozen=True)
class ResourcePath:
    """`/api/v1/...` or `/apis/<group>/<version>/...` split into its parts."""

    group_version: str
    plural: str
    namespace: str | None
    name: str | None
    subresource: str | None


def parse_resource_path(path: str) -> ResourcePath | None:
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        gv, rest = "v1", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        gv, rest = f"{parts[1]}/{parts[2]}", parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    return ResourcePath(
        gv, rest[0], namespace, rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None
    )


def not_found(what: str) -> Reply:
    return Reply(404, objects.status(404, f"the server could not find the requested resource ({what})"))


Cells = Callable[[Json], list[Any]]


@dataclass(frozen=True)
class LocalResource:
    """A resource served from the cluster's own state (not through the proxy)."""

    group_version: str
    plural: str
    kind: str
    namespaced: bool
    items: Callable[[], list[Json]]
    columns: tuple[tuple[str, str], ...] = (("Name", "string"), ("Age", "string"))
    cells: Cells | None = None

    @property
    def row(self) -> ResourceRow:
        return (self.plural, self.kind, self.namespaced, ["get", "list"])


def serve_items(
    items: list[Json], rp: ResourcePath, q: Query, kind: str, now_unix: float, resource: LocalResource | None
) -> Reply:
    """Filter, select, paginate and shape (object, list or Table) what a cluster found."""
    if rp.namespace is not None:
        items = [i for i in items if i["metadata"].get("namespace") == rp.namespace]
    if rp.name is not None:
        found = [i for i in items if i["metadata"]["name"] == rp.name]
        if not found:
            return Reply(404, objects.status(404, f'{rp.plural} "{rp.name}" not found', {"name": rp.name}))
        items = found
    else:
        try:
            match = parse_selector(q.params.get("labelSelector"))
            items = [i for i in items if match(i["metadata"].get("labels", {}))]
            limit = int(q.params["limit"]) if q.params.get("limit") else None
            items, cont = paginate(items, limit, q.params.get("continue"), "1")
        except (SelectorError, ValueError) as exc:
            return Reply(400, objects.status(400, str(exc)))
    if objects.wants_table(q.accept):
        return Reply(200, _table(items, now_unix, resource, "" if rp.name else cont))
    if rp.name is not None:
        return Reply(200, items[0])
    return Reply(200, objects.object_list(rp.group_version, kind, items, cont, "1"))


def _table(items: list[Json], now_unix: float, resource: LocalResource | None, cont: str) -> Json:
    def default_cells(item: Json) -> list[Any]:
        return [item["metadata"]["name"], objects.age(item["metadata"]["creationTimestamp"], now_unix)]

    columns = resource.columns if resource else (("Name", "string"), ("Age", "string"))
    cells = resource.cells if resource and resource.cells else default_cells
    return objects.table(items, columns, [cells(i) for i in items], cont)
