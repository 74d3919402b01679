"""Non-proxied objects the clusters serve: namespaces, the proxy's APIServices and Services, CronJobs,
NetworkPolicies, and the control planes' pods and StatefulSets."""

from __future__ import annotations

import hashlib
from typing import Any

from sim.fleet import ClientCluster, ControlPlanePod, PodPhase, TargetCluster, Tenant
from sim.kube import objects
from sim.kube.api import LocalResource
from sim.kube.objects import Json
from sim.world import ProbeRecord, World

PROBE_NAME = "proxy-probe"
PROBE_SCHEDULE = "*/5 * * * *"
PLATFORM_NAMESPACE = "vcluster-platform"


def namespaces(world: World, names: list[str]) -> LocalResource:
    def items() -> list[Json]:
        created = world.wall_time(-86_400.0)
        out = []
        for name in names:
            meta = objects.metadata(name, None, created, {"kubernetes.io/metadata.name": name})
            out.append(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": meta, "status": {"phase": "Active"}}
            )
        return out

    return LocalResource("v1", "namespaces", "Namespace", False, items)


PROTECTED = {"vcluster.loft.sh/protected": "resource-proxy"}
_NAME_MAX = 63


def proxy_service_name(gv: str) -> str:
    """`proxy-<group with dashes>-<version>` in kube-system; too long for a name: cut, with a hash suffix."""
    group, version = gv.split("/")
    name = f"proxy-{group.replace('.', '-')}-{version}"
    if len(name) <= _NAME_MAX:
        return name
    suffix = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[: _NAME_MAX - len(suffix) - 1].rstrip('-')}-{suffix}"


def _apiservice(world: World, gv: str, available: bool) -> Json:
    group, version = gv.split("/")
    created = world.wall_time(-86_400.0)
    service = {"name": proxy_service_name(gv), "namespace": "kube-system", "port": 443}
    spec = {
        "group": group,
        "version": version,
        "service": service,
        "groupPriorityMinimum": 1000,
        "versionPriority": 15,
    }
    condition: Json = {"type": "Available", "lastTransitionTime": objects.timestamp(created)}
    if available:
        condition |= {"status": "True", "reason": "Passed", "message": "all checks passed"}
    else:
        # The orphan's Service points at a proxy port nothing listens on any more.
        message = f"failing or missing response from https://{service['name']}.kube-system.svc:443/apis/{gv}"
        condition |= {"status": "False", "reason": "FailedDiscoveryCheck", "message": message}
    meta = objects.metadata(f"{version}.{group}", None, created, PROTECTED)
    doc = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": meta}
    return {**doc, "spec": spec, "status": {"conditions": [condition]}}


def apiservices(world: World, client: ClientCluster) -> LocalResource:
    """One protected APIService per proxied group/version: Available even while the proxy is degraded
    (the guide); an orphan's (its group/version left the configuration) is not Available."""

    def items() -> list[Json]:
        live = [_apiservice(world, gv, True) for gv in client.proxied_group_versions()]
        return live + [_apiservice(world, gv, False) for gv in client.orphan_group_versions]

    def cells(item: Json) -> list[Any]:
        svc = item["spec"]["service"]
        age = objects.age(item["metadata"]["creationTimestamp"], world.wall_time(world.now()))
        available = item["status"]["conditions"][0]
        shown = available["status"] if available["status"] == "True" else f"False ({available['reason']})"
        return [item["metadata"]["name"], f"{svc['namespace']}/{svc['name']}", shown, age]

    columns = (("Name", "string"), ("Service", "string"), ("Available", "string"), ("Age", "string"))
    return LocalResource(
        "apiregistration.k8s.io/v1", "apiservices", "APIService", False, items, columns, cells
    )


def services(world: World, client: ClientCluster) -> LocalResource:
    """The proxy's ExternalName Services in kube-system (one per APIService, orphans' included)."""

    def items() -> list[Json]:
        created = world.wall_time(-86_400.0)
        out = []
        for gv in [*client.proxied_group_versions(), *client.orphan_group_versions]:
            meta = objects.metadata(proxy_service_name(gv), "kube-system", created, PROTECTED)
            spec = {"type": "ExternalName", "externalName": "localhost", "ports": [{"port": 443}]}
            out.append({"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec})
        return out

    def cells(item: Json) -> list[Any]:
        age = objects.age(item["metadata"]["creationTimestamp"], world.wall_time(world.now()))
        return [item["metadata"]["name"], "ExternalName", "<none>", "localhost", "443/TCP", age]

    columns = (
        ("Name", "string"),
        ("Type", "string"),
        ("Cluster-IP", "string"),
        ("External-IP", "string"),
        ("Port(s)", "string"),
        ("Age", "string"),
    )
    return LocalResource("v1", "services", "Service", True, items, columns, cells)


# -- the control plane cluster: each tenant's pods and StatefulSet -----------------------------------------


def _tenants(world: World) -> list[Tenant]:
    return [*world.platform.clients.values(), *world.platform.targets.values()]


def _pod_json(world: World, tenant: Tenant, name: str, pod: ControlPlanePod | None) -> Json:
    """A control-plane pod; `pod` None for a client replica (always running and Ready here)."""
    ready = pod is None or pod.ready
    terminating = pod is not None and pod.phase is PodPhase.TERMINATING
    created = world.wall_time(-86_400.0 if pod is None else pod.created_at)
    labels = {"app": "vcluster", "release": tenant.release, "statefulset.kubernetes.io/pod-name": name}
    meta = objects.metadata(name, tenant.namespace, created, labels)
    if terminating:
        meta["deletionTimestamp"] = objects.timestamp(world.wall_time(world.now()))
    since = objects.timestamp(created)
    flag = "True" if ready else "False"
    conditions = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": since}]
    conditions += [{"type": "Initialized", "status": "True", "lastTransitionTime": since}]
    for kind in ("ContainersReady", "Ready"):
        condition = {"type": kind, "status": flag, "lastTransitionTime": since}
        if not ready:
            condition |= {
                "reason": "ContainersNotReady",
                "message": "containers with unready status: [syncer]",
            }
        conditions.append(condition)
    container = {
        "name": "syncer",
        "image": tenant.image,
        "ready": ready,
        "restartCount": 0,
        "started": True,
        "state": {"running": {"startedAt": since}},
    }
    status = {"phase": "Running", "conditions": conditions, "containerStatuses": [container]}
    spec = {"containers": [{"name": "syncer", "image": tenant.image}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def pods(world: World) -> LocalResource:
    """Every tenant's control-plane pods: a target's follow its simulated pods (not Ready while hung or
    terminating, absent while gone), a client's are its replicas."""

    def items() -> list[Json]:
        out = []
        for tenant in _tenants(world):
            if isinstance(tenant, TargetCluster):
                shown = [p for p in tenant.pods if p.phase is not PodPhase.GONE]
                out += [_pod_json(world, tenant, p.name, p) for p in shown]
            elif isinstance(tenant, ClientCluster):
                out += [_pod_json(world, tenant, r.pod, None) for r in tenant.replicas]
        return out

    def cells(item: Json) -> list[Any]:
        container = item["status"]["containerStatuses"][0]
        phase = "Terminating" if "deletionTimestamp" in item["metadata"] else item["status"]["phase"]
        age = objects.age(item["metadata"]["creationTimestamp"], world.wall_time(world.now()))
        ready = f"{1 if container['ready'] else 0}/1"
        return [item["metadata"]["name"], ready, phase, container["restartCount"], age]

    columns = (
        ("Name", "string"),
        ("Ready", "string"),
        ("Status", "string"),
        ("Restarts", "integer"),
        ("Age", "string"),
    )
    return LocalResource("v1", "pods", "Pod", True, items, columns, cells)


def _statefulset_json(world: World, tenant: Tenant) -> Json:
    labels = {"app": "vcluster", "release": tenant.release}
    meta = objects.metadata(tenant.release, tenant.namespace, world.wall_time(-86_400.0), labels)
    if isinstance(tenant, TargetCluster):
        replicas, ready = len(tenant.pods), sum(1 for p in tenant.pods if p.ready)
    else:
        replicas = ready = len(tenant.replicas) if isinstance(tenant, ClientCluster) else 1
    container: Json = {"name": "syncer", "image": tenant.image}
    if tenant.env:
        container["env"] = [{"name": k, "value": v} for k, v in sorted(tenant.env.items())]
    spec = {
        "replicas": replicas,
        "serviceName": f"{tenant.release}-headless",
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
    }
    status = {"replicas": replicas, "readyReplicas": ready, "currentReplicas": replicas}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta, "spec": spec, "status": status}


def statefulsets(world: World) -> LocalResource:
    """Each tenant's control plane StatefulSet (`<release>` in its namespace), its image tagged with the
    vCluster version it runs."""

    def items() -> list[Json]:
        return [_statefulset_json(world, tenant) for tenant in _tenants(world)]

    def cells(item: Json) -> list[Any]:
        age = objects.age(item["metadata"]["creationTimestamp"], world.wall_time(world.now()))
        status = item["status"]
        return [item["metadata"]["name"], f"{status['readyReplicas']}/{status['replicas']}", age]

    columns = (("Name", "string"), ("Ready", "string"), ("Age", "string"))
    return LocalResource("apps/v1", "statefulsets", "StatefulSet", True, items, columns, cells)


def cronjob_json(world: World, record: ProbeRecord) -> Json:
    namespace = world.platform.clients[record.client].namespace
    meta = objects.metadata(PROBE_NAME, namespace, world.wall_time(record.created_at), {"app": PROBE_NAME})
    container = {
        "name": "probe",
        "image": "registry.k8s.io/kubectl:v1.34.0",
        "command": ["/bin/sh", "/scripts/proxy-probe.sh"],
    }
    job = {
        "spec": {
            "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        }
    }
    status: Json = {}
    if record.last_schedule is not None:
        status["lastScheduleTime"] = objects.timestamp(world.wall_time(record.last_schedule))
    if record.last_success is not None:
        status["lastSuccessfulTime"] = objects.timestamp(world.wall_time(record.last_success))
    spec = {"schedule": PROBE_SCHEDULE, "concurrencyPolicy": "Forbid", "suspend": False, "jobTemplate": job}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta, "spec": spec, "status": status}


def cronjobs(world: World) -> LocalResource:
    def items() -> list[Json]:
        return [cronjob_json(world, r) for r in world.probes.values() if r.created_at <= world.now()]

    def cells(item: Json) -> list[Any]:
        now = world.wall_time(world.now())
        last = item["status"].get("lastScheduleTime")
        last_age = objects.age(last, now) if last else "<none>"
        age = objects.age(item["metadata"]["creationTimestamp"], now)
        return [item["metadata"]["name"], PROBE_SCHEDULE, "<none>", "False", 0, last_age, age]

    columns = (
        ("Name", "string"),
        ("Schedule", "string"),
        ("Timezone", "string"),
        ("Suspend", "boolean"),
        ("Active", "integer"),
        ("Last Schedule", "string"),
        ("Age", "string"),
    )
    return LocalResource("batch/v1", "cronjobs", "CronJob", True, items, columns, cells)


def _peer(namespace: str) -> Json:
    release = namespace.removeprefix("vcluster-")
    return {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "podSelector": {"matchLabels": {"app": "vcluster", "release": release}},
    }


def policy_json(world: World, tenant: Tenant) -> Json:
    """What `policies.networkPolicy.enabled: true` generates, plus the tenant's UDP peer rules if any."""
    own = {"podSelector": {"matchLabels": {"release": tenant.release}}}
    platform = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": PLATFORM_NAMESPACE}}}
    dns = {"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}
    egress: list[Json] = [
        {"ports": [{"protocol": "TCP", "port": p} for p in (443, 8443, 6443)]},
        {"to": [dns], "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
        {"to": [own]},
        {"to": [platform]},
    ]
    ingress: list[Json] = [{"from": [own]}, {"from": [platform]}]
    values = tenant.network_policy
    egress += [{"to": [_peer(ns)], "ports": [{"protocol": "UDP"}]} for ns in values.udp_egress_to]
    ingress += [{"from": [_peer(ns)], "ports": [{"protocol": "UDP"}]} for ns in values.udp_ingress_from]
    meta = objects.metadata(
        f"vc-{tenant.release}-control-plane", tenant.namespace, world.wall_time(-86_400.0), {}
    )
    spec = {
        "podSelector": {"matchLabels": {"app": "vcluster", "release": tenant.release}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": ingress,
        "egress": egress,
    }
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta, "spec": spec}


def network_policies(world: World) -> LocalResource:
    def items() -> list[Json]:
        tenants = [*world.platform.clients.values(), *world.platform.targets.values()]
        return [policy_json(world, t) for t in tenants if t.network_policy.enabled]

    return LocalResource("networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", True, items)


def kube_state_metrics(world: World) -> str:
    """kube-state-metrics' CronJob series per probe; unix timestamps, as Prometheus' time() expects."""
    families: dict[str, list[str]] = {
        "kube_cronjob_created": [],
        "kube_cronjob_status_last_schedule_time": [],
        "kube_cronjob_status_last_successful_time": [],
        "kube_cronjob_status_active": [],
    }
    for record in world.probes.values():
        if record.created_at > world.now():
            continue
        labels = f'{{namespace="{world.platform.clients[record.client].namespace}",cronjob="{PROBE_NAME}"}}'
        families["kube_cronjob_created"].append(
            f"kube_cronjob_created{labels} {world.wall_time(record.created_at):.3f}"
        )
        families["kube_cronjob_status_active"].append(f"kube_cronjob_status_active{labels} 0")
        for name, when in (
            ("kube_cronjob_status_last_schedule_time", record.last_schedule),
            ("kube_cronjob_status_last_successful_time", record.last_success),
        ):
            if when is not None:
                families[name].append(f"{name}{labels} {world.wall_time(when):.3f}")
    lines = []
    for name, samples in families.items():
        lines += [
            f"# HELP {name} Simulated kube-state-metrics CronJob series.",
            f"# TYPE {name} gauge",
            *samples,
        ]
    return "\n".join(lines) + "\n"
