"""Non-proxied objects the clusters serve: namespaces, APIServices, CronJobs, NetworkPolicies."""

from __future__ import annotations

from typing import Any

from sim.fleet import ClientCluster, Tenant
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


def apiservices(world: World, client: ClientCluster) -> LocalResource:
    """One APIService per proxied group/version: Available even while the proxy is degraded (the guide)."""

    def items() -> list[Json]:
        created = world.wall_time(-86_400.0)
        out = []
        for link in client.links:
            for gv in link.group_versions:
                group, version = gv.split("/")
                name = f"{version}.{group}"
                spec = {
                    "group": group,
                    "version": version,
                    "service": {"name": "vcluster-resource-proxy", "namespace": "kube-system", "port": 443},
                    "groupPriorityMinimum": 1000,
                    "versionPriority": 15,
                }
                condition = {
                    "type": "Available",
                    "status": "True",
                    "lastTransitionTime": objects.timestamp(created),
                    "reason": "Passed",
                    "message": "all checks passed",
                }
                meta = objects.metadata(name, None, created, {})
                doc = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": meta}
                out.append({**doc, "spec": spec, "status": {"conditions": [condition]}})
        return out

    def cells(item: Json) -> list[Any]:
        svc = item["spec"]["service"]
        age = objects.age(item["metadata"]["creationTimestamp"], world.wall_time(world.now()))
        return [item["metadata"]["name"], f"{svc['namespace']}/{svc['name']}", "True", age]

    columns = (("Name", "string"), ("Service", "string"), ("Available", "string"), ("Age", "string"))
    return LocalResource(
        "apiregistration.k8s.io/v1", "apiservices", "APIService", False, items, columns, cells
    )


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
