"""A vCluster Platform stand-in over the simulated fleet (`proxybot sim --platform`), strict as the real one.

Served on the simulator's own port, one access key (a bearer token) for everything:
- `/kubernetes/management/...`: the management API, which serves only `management.loft.sh/v1`; here its
  VirtualClusterInstances (`sim/platform_instances.py`), listed per project namespace or across all, got by
  name, and watched, in Kubernetes' own list/get/watch shapes, with discovery so `kubectl get
  virtualclusterinstances -A` works. `kubectl get --raw` drops the server URL's path, so the key's requests
  to other paths are the management API's too (the simulator routes a cluster's tokens the same way).
  `POST .../selves` answers who the key is and the project namespace prefix (a `Self`).
- `/kubernetes/project/<project>/virtualcluster/<name>/...`: the tenant cluster behind that instance, as the
  simulator serves it; an instance whose control plane is not ready answers 503.
- `/kubernetes/cluster/<name>/...`: the connected (control plane) cluster.
Without the key, or with another one: 401 in the Status shape; an unknown path or name: 404; a project,
name or cluster that is not a DNS label is refused (400) before it is looked up.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sim.defaults import CONTROL_PLANE
from sim.kube import objects
from sim.kube.api import LocalResource, Query, Reply, ResourcePath, not_found, parse_resource_path
from sim.kube.clusters import ClusterView
from sim.kube.objects import Json
from sim.platform_instances import (
    API_VERSION,
    CREATED_AT,
    KIND,
    PLURAL,
    PROJECT_NAMESPACE_PREFIX,
    Instance,
    document,
    fingerprint,
    fleet_instances,
    project_namespace,
)
from sim.platform_watch import WatchPlan, plan
from sim.world import World

PREFIX = "/kubernetes"
SELVES = "selves"
MANAGEMENT = f"{PREFIX}/management"
GROUP = API_VERSION.split("/")[0]
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
# The platform user whose keys the stand-in hands out, as its 403s name it.
KEY_USER = "proxybot"
# The simulator's view of one tenant cluster (by name), or None when it serves none by that name.
ViewOf = Callable[[str], ClusterView | None]


@dataclass(frozen=True)
class Routed:
    """Where a platform request goes: a simulated cluster's view and the path it asks of it."""

    view: ClusterView
    path: str


class Inventory:
    """The instances with resource versions: one number for the fleet, bumped whenever one changes."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.resource_version = 0
        self._seen: dict[tuple[str, str], tuple[str, int]] = {}
        self._current: list[Instance] = []

    def refresh(self) -> list[Instance]:
        """Read the fleet as it is now; a new, changed or departed instance moves the resource version."""
        current = fleet_instances(self.world.platform)
        keys = {(i.namespace, i.name) for i in current}
        departed = [key for key in self._seen if key not in keys]
        for key in departed:
            del self._seen[key]
        if departed:
            self.resource_version += 1
        for instance in current:
            key, print_ = (instance.namespace, instance.name), fingerprint(instance)
            if self._seen.get(key, ("", 0))[0] != print_:
                self.resource_version += 1
                self._seen[key] = (print_, self.resource_version)
        self._current = current
        return current

    def documents(self) -> list[Json]:
        created = self.world.wall_time(CREATED_AT)
        return [document(i, created, self._seen[(i.namespace, i.name)][1]) for i in self.refresh()]

    def find(self, project: str, name: str) -> Instance | None:
        namespace = project_namespace(project)
        return next((i for i in self.refresh() if (i.namespace, i.name) == (namespace, name)), None)


def _cells(item: Json) -> list[Any]:
    spec, status = item["spec"], item["status"]
    return [item["metadata"]["name"], spec["clusterRef"]["cluster"], status["phase"], ""]


class ManagementView(ClusterView):
    """The management API: `management.loft.sh/v1` only (no core group), read-only."""

    def __init__(self, world: World, inventory: Inventory) -> None:
        super().__init__(world)
        self.inventory = inventory

    def local(self) -> list[LocalResource]:
        return [
            LocalResource(
                API_VERSION,
                PLURAL,
                KIND,
                True,
                self.inventory.documents,
                columns=(("Name", "string"), ("Cluster", "string"), ("Phase", "string"), ("Age", "string")),
                cells=self._cells,
            )
        ]

    def _cells(self, item: Json) -> list[Any]:
        cells = _cells(item)
        cells[-1] = objects.age(item["metadata"]["creationTimestamp"], self.now_unix())
        return cells

    def handle(self, q: Query) -> Reply:
        # A management API serves no legacy core group: clients take the 404 on /api as "none".
        path = q.path.rstrip("/") or "/"
        if path == "/api" or path.startswith("/api/"):
            return not_found(path)
        return super().handle(q)

    def _discovery(self, gv: str) -> Reply:
        reply = super()._discovery(gv)
        if gv == API_VERSION and isinstance(reply.body, dict):
            row = objects.resource_list(gv, [(SELVES, "Self", False, ["create"])])["resources"]
            reply.body["resources"] += row
        return reply

    def _read(self, rp: ResourcePath, q: Query) -> Reply:
        if rp.namespace is not None and not _DNS_LABEL.fullmatch(rp.namespace):
            return _invalid("namespace", rp.namespace)
        reply = super()._read(rp, q)
        body = reply.body
        if reply.code == 200 and isinstance(body, dict) and body.get("kind") in (f"{KIND}List", "Table"):
            body["metadata"]["resourceVersion"] = str(self.inventory.resource_version)
        return reply


class SelfView(ClusterView):
    """`POST .../selves`: who the key is, and the platform's project namespace prefix (`Self`)."""

    def __init__(self, world: World, scope: str | None) -> None:
        super().__init__(world)
        self.scope = scope

    def handle(self, q: Query) -> Reply:
        if q.method != "POST":
            return Reply(405, objects.status(405, f"{SELVES} can only be created"))
        status: Json = {
            "subject": KEY_USER,
            "accessKey": f"{KEY_USER}-key",
            "accessKeyType": "User",
            "groups": ["system:authenticated", "loft:authenticated", f"loft:user:{KEY_USER}"],
            "projectNamespacePrefix": PROJECT_NAMESPACE_PREFIX,
        }
        if self.scope is not None:
            status["accessKeyScope"] = {"projects": [{"project": self.scope}]}
        body = {"apiVersion": API_VERSION, "kind": "Self", "metadata": {}, "spec": {}, "status": status}
        return Reply(201, body)


class PlatformStandIn:
    """The platform's gateway: the access key, the management API and the proxy paths."""

    def __init__(self, world: World, view_of: ViewOf) -> None:
        self.world = world
        self.access_key = secrets.token_urlsafe(32)
        # Every key the platform accepts, and the project it is scoped to (None: the whole platform).
        self._keys: dict[str, str | None] = {self.access_key: None}
        self.inventory = Inventory(world)
        self.management = ManagementView(world, self.inventory)
        self._view_of = view_of

    @property
    def management_path(self) -> str:
        return MANAGEMENT

    @staticmethod
    def virtual_cluster_path(project: str, name: str) -> str:
        return f"{PREFIX}/project/{project}/virtualcluster/{name}"

    @staticmethod
    def cluster_path(name: str) -> str:
        return f"{PREFIX}/cluster/{name}"

    def rotate_key(self) -> str:
        """A new access key; the old one is refused from now on (a rotated or deleted key)."""
        del self._keys[self.access_key]
        self.access_key = secrets.token_urlsafe(32)
        self._keys[self.access_key] = None
        return self.access_key

    def scoped_key(self, project: str) -> str:
        """Another key, scoped to one project as the platform scopes keys: that project's instances and
        virtual clusters; 403 for every project's list, other projects and the connected clusters."""
        key = secrets.token_urlsafe(32)
        self._keys[key] = project
        return key

    def answers(self, path: str, token: str) -> bool:
        """Whether a request is the platform's: one of its paths, or its key (`get --raw` drops the path)."""
        return path == PREFIX or path.startswith(PREFIX + "/") or token in self._keys

    def route(self, path: str, token: str) -> Routed | Reply:
        """The view and path a request reaches, or the platform's refusal (call under the world's lock)."""
        if not token or token not in self._keys:
            return Reply(401, objects.status(401, "Unauthorized"))
        scope = self._keys[token]
        if not (path == PREFIX or path.startswith(PREFIX + "/")):
            return self._management(path, scope)
        parts = path.split("/")[2:]
        if parts[:1] == ["management"]:
            return self._management(_rest(parts[1:]), scope)
        if len(parts) >= 4 and parts[0] == "project" and parts[2] == "virtualcluster":
            return self._virtual_cluster(parts[1], parts[3], _rest(parts[4:]), scope)
        if len(parts) >= 2 and parts[0] == "cluster":
            return self._cluster(parts[1], _rest(parts[2:]), scope)
        return not_found(path)

    def _management(self, path: str, scope: str | None) -> Routed | Reply:
        """The management API; a scoped key reads its own project's namespace only (discovery: any key)."""
        rp = parse_resource_path(path)
        if rp is not None and (rp.group_version, rp.plural, rp.namespace, rp.name) == (
            API_VERSION,
            SELVES,
            None,
            None,
        ):
            return Routed(SelfView(self.world, scope), path)
        if scope is None or rp is None or rp.namespace == project_namespace(scope):
            return Routed(self.management, path)
        group = _group(rp.group_version)
        where = "at the cluster scope" if rp.namespace is None else f'in the namespace "{rp.namespace}"'
        what = f"{rp.plural}.{group}" + (f' "{rp.name}"' if rp.name else "")
        return _forbidden(what, "get" if rp.name else "list", rp.plural, group, where)

    def watch(self, path: str, params: Mapping[str, str]) -> WatchPlan | Reply:
        """The watch a management API request asks for (`?watch=1` on the instances' list path)."""
        rp = parse_resource_path(path)
        if rp is None or (rp.group_version, rp.plural) != (API_VERSION, PLURAL):
            return not_found(path)
        if rp.name is not None or rp.subresource is not None:
            return Reply(405, objects.status(405, "watch a list path, with fieldSelector=metadata.name=NAME"))
        if rp.namespace is not None and not _DNS_LABEL.fullmatch(rp.namespace):
            return _invalid("namespace", rp.namespace)
        found = plan(rp.namespace, params)
        return Reply(400, objects.status(400, found)) if isinstance(found, str) else found

    def read(self) -> tuple[list[Json], int]:
        """Every instance's document and the fleet's resource version (call under the world's lock)."""
        return self.inventory.documents(), self.inventory.resource_version

    def _virtual_cluster(self, project: str, name: str, rest: str, scope: str | None) -> Routed | Reply:
        for what, value in (("project", project), ("virtual cluster", name)):
            if not _DNS_LABEL.fullmatch(value):
                return _invalid(what, value)
        if scope is not None and scope != project:
            where = f'in the namespace "{project_namespace(project)}"'
            return _forbidden(f'{PLURAL}.{GROUP} "{name}"', "use", PLURAL, GROUP, where)
        instance = self.inventory.find(project, name)
        if instance is None:
            message = f'{PLURAL}.{GROUP} "{name}" not found in project "{project}"'
            return Reply(404, objects.status(404, message, {"name": name, "group": GROUP, "kind": PLURAL}))
        view = None if instance.served_by is None else self._view_of(instance.served_by)
        if view is None:
            message = f'virtual cluster "{name}" in project "{project}" is not ready: {instance.phase}'
            return Reply(503, objects.status(503, message), {"Retry-After": "10"})
        return Routed(view, rest)

    def _cluster(self, name: str, rest: str, scope: str | None) -> Routed | Reply:
        if not _DNS_LABEL.fullmatch(name):
            return _invalid("cluster", name)
        if scope is not None:
            return _forbidden(f'clusters.{GROUP} "{name}"', "use", "clusters", GROUP, "at the cluster scope")
        view = self._view_of(name) if name == CONTROL_PLANE else None
        if view is None:
            message = f'clusters.{GROUP} "{name}" not found'
            return Reply(
                404, objects.status(404, message, {"name": name, "group": GROUP, "kind": "clusters"})
            )
        return Routed(view, rest)

    def cluster_of(self, path: str) -> str | None:
        """The simulated cluster a proxy path reaches (its faults apply), or None."""
        parts = path.split("/")[2:]
        if path.startswith(PREFIX + "/project/") and len(parts) >= 4 and parts[2] == "virtualcluster":
            return parts[3]
        if path.startswith(PREFIX + "/cluster/") and len(parts) >= 2:
            return parts[1]
        return None


def _group(group_version: str) -> str:
    return group_version.split("/")[0] if "/" in group_version else ""


def _forbidden(what: str, verb: str, resource: str, group: str, where: str) -> Reply:
    """Kubernetes' 403: who may not do what, where."""
    message = (
        f'{what} is forbidden: User "{KEY_USER}" cannot {verb} resource "{resource}" in API group "{group}" '
        f"{where}"
    )
    return Reply(403, objects.status(403, message, {"group": group, "kind": resource}))


def _rest(parts: list[str]) -> str:
    return "/" + "/".join(parts)


def _invalid(what: str, value: str) -> Reply:
    shown = value if len(value) <= 80 else value[:80] + "..."
    message = f"invalid {what} name {shown!r}: must be a DNS label (lowercase letters, digits and '-')"
    return Reply(400, objects.status(400, message))
