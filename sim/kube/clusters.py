"""The simulated cluster APIs: client tenant (through the proxy), target tenant, control plane."""

from __future__ import annotations

import json

from sim.fleet import ClientCluster, StoredObject, TargetCluster
from sim.kube import objects, pod_logs, resources
from sim.kube.api import (
    LocalResource,
    Query,
    Reply,
    ResourcePath,
    not_found,
    parse_resource_path,
    serve_items,
)
from sim.kube.objects import Json, ResourceRow
from sim.names import Reason, Verb
from sim.proxy import ProxyRequest, ReplicaProxy
from sim.world import World

_VERBS = {"POST": Verb.POST, "PUT": Verb.PUT, "PATCH": Verb.PATCH, "DELETE": Verb.DELETE}


class ClusterView:
    """Discovery and reads shared by every cluster; subclasses add their resources."""

    def __init__(self, world: World) -> None:
        self.world = world

    def local(self) -> list[LocalResource]:
        return []

    def proxied_group_versions(self) -> list[str]:
        return []

    def discover_proxied(self, gv: str) -> list[ResourceRow]:
        return []

    def read_proxied(self, rp: ResourcePath, q: Query) -> Reply:
        return not_found(rp.plural)

    def serves_metrics(self) -> bool:
        return False

    def metrics(self) -> str:
        return ""

    def now_unix(self) -> float:
        return self.world.wall_time(self.world.now())

    def group_versions(self) -> list[str]:
        local = [r.group_version for r in self.local() if r.group_version != "v1"]
        return list(dict.fromkeys([*local, *self.proxied_group_versions()]))

    def handle(self, q: Query) -> Reply:
        path = q.path.rstrip("/") or "/"
        if path == "/version":
            return Reply(200, objects.SERVER_VERSION)
        if path == "/api":
            return Reply(200, objects.api_versions())
        if path == "/apis":
            return Reply(200, objects.api_group_list(self.group_versions()))
        if path == "/metrics/syncer" and self.serves_metrics():
            return Reply(200, self.metrics(), {"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})
        parts = [p for p in path.split("/") if p]
        if parts[:1] == ["apis"] and len(parts) == 2:
            versions = [gv.split("/")[1] for gv in self.group_versions() if gv.split("/")[0] == parts[1]]
            return Reply(200, objects.api_group(parts[1], versions)) if versions else not_found(path)
        if parts == ["api", "v1"] or (parts[:1] == ["apis"] and len(parts) == 3):
            return self._discovery("v1" if parts[0] == "api" else f"{parts[1]}/{parts[2]}")
        rp = parse_resource_path(path)
        return not_found(path) if rp is None else self._read(rp, q)

    def _discovery(self, gv: str) -> Reply:
        rows = [r.row for r in self.local() if r.group_version == gv]
        if gv in self.proxied_group_versions():
            rows += self.discover_proxied(gv)
        elif not rows:
            return not_found(gv)
        return Reply(200, objects.resource_list(gv, rows))

    def _read(self, rp: ResourcePath, q: Query) -> Reply:
        if rp.group_version in self.proxied_group_versions():
            return self.read_proxied(rp, q)
        resource = next(
            (r for r in self.local() if r.group_version == rp.group_version and r.plural == rp.plural), None
        )
        if resource is None or rp.subresource is not None:
            return not_found(q.path)
        if q.method != "GET":
            return Reply(405, objects.status(405, "the simulator serves read-only verbs here"))
        return serve_items(resource.items(), rp, q, resource.kind, self.now_unix(), resource)


def stored_json(world: World, obj: StoredObject) -> Json:
    meta = objects.metadata(
        obj.name, obj.namespace, world.wall_time(obj.created_at), obj.labels, obj.resource_version
    )
    return {"apiVersion": obj.resource.group_version, "kind": obj.resource.kind, "metadata": meta, "spec": {}}


class ClientView(ClusterView):
    """A client tenant cluster: proxied group/versions go through one replica's proxy."""

    def __init__(self, world: World, client: ClientCluster, pod: str | None = None) -> None:
        super().__init__(world)
        self.client = client
        self.pod = pod

    def proxy(self) -> ReplicaProxy:
        return self.world.proxy(self.client.name, self.pod)

    def local(self) -> list[LocalResource]:
        return [
            resources.namespaces(self.world, sorted(self.client.namespaces)),
            resources.apiservices(self.world, self.client),
            resources.services(self.world, self.client),
        ]

    def serves_metrics(self) -> bool:
        """From vCluster v0.37 on: an older client answers 404 there (the guide: too old, not down)."""
        return self.client.serves_metrics()

    def proxied_group_versions(self) -> list[str]:
        return self.client.proxied_group_versions()

    def _target_of(self, gv: str) -> str:
        return next(lk.target.target_label for lk in self.client.links if gv in lk.group_versions)

    def discover_proxied(self, gv: str) -> list[ResourceRow]:
        return self.proxy().discover(self._target_of(gv), gv).resources

    def read_proxied(self, rp: ResourcePath, q: Query) -> Reply:
        verb = _VERBS.get(q.method) or (Verb.LIST if rp.name is None else Verb.GET)
        upgrade = q.upgrade or rp.subresource in {"exec", "attach", "portforward"}
        req = ProxyRequest(self._target_of(rp.group_version), rp.group_version, verb, rp.plural)
        name = _created_name(q.body) if verb is Verb.POST else rp.name
        req = ProxyRequest(req.target, req.group_version, verb, rp.plural, rp.namespace, name, upgrade)
        resp = self.proxy().request(req)
        if resp.code != 200:
            return Reply(resp.code, objects.status(resp.code, resp.message), resp.headers, resp.duration)
        if verb not in (Verb.GET, Verb.LIST):
            return Reply(
                405, objects.status(405, "the simulator's targets are read-only"), took=resp.duration
            )
        kind = _kind(self.client, rp)
        items = [stored_json(self.world, o) for o in resp.objects]
        reply = serve_items(items, rp, q, kind, self.now_unix(), None)
        reply.took = resp.duration
        return reply

    def metrics(self) -> str:
        proxy = self.proxy()
        noise = self.world.noise[(self.client.name, proxy.replica.pod)]
        return "\n".join([*noise.render(self.world.now()), *proxy.render()]) + "\n"


def _created_name(body: bytes) -> str | None:
    """`metadata.name` of a POST body (JSON, as kubectl sends it), if it names one."""
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else None


def _kind(client: ClientCluster, rp: ResourcePath) -> str:
    for link in client.links:
        res = link.target.resource(rp.group_version, rp.plural)
        if res is not None:
            return res.kind
    return "Object"


class TargetView(ClusterView):
    """A target tenant cluster's own API, for direct requests (path checks compare against it)."""

    def __init__(self, world: World, target: TargetCluster) -> None:
        super().__init__(world)
        self.target = target

    def local(self) -> list[LocalResource]:
        return [resources.namespaces(self.world, sorted(self.target.namespaces))]

    def proxied_group_versions(self) -> list[str]:
        return self.target.group_versions()

    def discover_proxied(self, gv: str) -> list[ResourceRow]:
        verbs = ["get", "list", "watch", "create", "update", "delete"]
        return [
            (r.plural, r.kind, r.namespaced, verbs) for r in self.target.resources if r.group_version == gv
        ]

    def read_proxied(self, rp: ResourcePath, q: Query) -> Reply:
        if not self.target.answering() or rp.group_version in self.target.failing_group_versions:
            return Reply(503, objects.status(503, "the target's API server is not answering"))
        res = self.target.resource(rp.group_version, rp.plural)
        if res is None:
            return not_found(q.path)
        items = [stored_json(self.world, o) for o in self.target.objects if o.resource == res]
        reply = serve_items(items, rp, q, res.kind, self.now_unix(), None)
        reply.took = self.target.latency
        return reply


class ControlPlaneView(ClusterView):
    """The control plane cluster: tenant namespaces, the proxy-probe CronJobs, generated NetworkPolicies,
    and each tenant's control-plane pods and StatefulSet."""

    def local(self) -> list[LocalResource]:
        tenants = [*self.world.platform.clients.values(), *self.world.platform.targets.values()]
        return [
            resources.namespaces(
                self.world, sorted(["default", "kube-system", *(t.namespace for t in tenants)])
            ),
            resources.cronjobs(self.world),
            resources.network_policies(self.world),
            resources.pods(self.world),
            resources.statefulsets(self.world),
        ]

    def _read(self, rp: ResourcePath, q: Query) -> Reply:
        if (rp.group_version, rp.plural, rp.subresource) == ("v1", "pods", "log"):
            return pod_logs.serve_log(self.world, rp, q)
        return super()._read(rp, q)


__all__ = ["ClientView", "ClusterView", "ControlPlaneView", "Reason", "TargetView"]
