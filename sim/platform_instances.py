"""The simulated fleet as the vCluster Platform lists it: one VirtualClusterInstance per tenant cluster.

Shapes from the vendor's API reference (loft-sh/vcluster-docs,
`platform/api/resources/virtualclusterinstance/`; notes in docs/platform-api.md): `metadata.namespace` is
the project namespace (`p-<project>`), `spec.clusterRef` names the connected cluster and the namespace the
control plane runs in, the vcluster.yaml is a YAML string at `spec.template.helmRelease.values` (an inline
template) and, rendered with the parameters, at `status.virtualCluster.helmRelease.values`. Clients use
inline templates; targets come from a template (`spec.templateRef`, no `spec.template`), so a reader must
take the values from the status for those.

Besides the simulated tenants, the platform lists one instance no simulated cluster backs: a client whose
proxy section vCluster refuses at startup (an entry without `targetVirtualCluster.name`), so its control
plane never becomes ready and the platform cannot reach it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import yaml

from sim.defaults import CONTROL_PLANE, PRIMARY_GV, PROJECT
from sim.fleet import ClientCluster, Platform, TargetCluster, Tenant
from sim.kube import objects
from sim.kube.objects import Json

API_VERSION = "management.loft.sh/v1"
KIND = "VirtualClusterInstance"
PLURAL = "virtualclusterinstances"
PROJECT_NAMESPACE_PREFIX = "p-"
CHART = "vcluster"
CHART_REPO = "https://charts.loft.sh"
TARGET_TEMPLATE = "proxy-target"
# The client the platform lists whose vcluster.yaml vCluster refuses; no simulated cluster serves it.
REFUSED_CLIENT = "team-misconfigured"
# Instances were created a day before the simulation starts (simulated seconds).
CREATED_AT = -86_400.0


def project_namespace(project: str) -> str:
    return f"{PROJECT_NAMESPACE_PREFIX}{project}"


@dataclass(frozen=True)
class Instance:
    """One VirtualClusterInstance: where it lives, what backs it, and its document's parts."""

    project: str
    name: str
    # The simulator's view key of the tenant cluster behind it; None: nothing answers (not ready).
    served_by: str | None
    values: str
    version: str
    templated: bool
    phase: str = "Ready"

    @property
    def namespace(self) -> str:
        return project_namespace(self.project)


def client_values(client: ClientCluster) -> dict[str, Any]:
    """The client's vcluster.yaml: one `customResources` entry per proxied resource (a wildcard when the link
    names none), its target's name (and project when not the client's own), its access mode."""
    entries: dict[str, Any] = {}
    for link in client.links:
        target = {"name": link.target.name}
        if link.target.project != client.project:
            target["project"] = link.target.project
        for gv in link.group_versions:
            for plural in _plurals(link.target, gv, link.resources):
                entries[f"{plural}.{gv}"] = {
                    "enabled": True,
                    "targetVirtualCluster": dict(target),
                    "accessResources": "owned" if link.owned_only else "all",
                }
    values = _tenant_values(client)
    values["experimental"] = {"proxy": {"customResources": entries}}
    return values


def _plurals(target: TargetCluster, gv: str, named: list[str] | None) -> list[str]:
    if named is None:
        return ["*"]
    return [r.plural for r in target.resources if r.group_version == gv and r.plural in named]


def _tenant_values(tenant: Tenant) -> dict[str, Any]:
    """What every tenant's vcluster.yaml carries here: its NetworkPolicy values (the UDP rules between the
    proxy's ends, as `proxybot netpol` writes them) and its control-plane env."""
    policy = tenant.network_policy
    rules = {
        "egress": [_udp_rule("to", ns) for ns in policy.udp_egress_to],
        "ingress": [_udp_rule("from", ns) for ns in policy.udp_ingress_from],
    }
    if policy.ingress_only_from is not None:
        rules["ingress"] = [*rules["ingress"], *(_peer_rule(ns) for ns in policy.ingress_only_from)]
    network_policy: dict[str, Any] = {"enabled": policy.enabled}
    if any(rules.values()):
        network_policy["controlPlane"] = {way: found for way, found in rules.items() if found}
    values: dict[str, Any] = {"policies": {"networkPolicy": network_policy}}
    if tenant.env:
        values["controlPlane"] = {
            "statefulSet": {"env": [{"name": k, "value": v} for k, v in tenant.env.items()]}
        }
    return values


def _udp_rule(way: str, namespace: str) -> dict[str, Any]:
    """UDP (any port) to or from the control plane pods of the tenant in `namespace`."""
    peer = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "podSelector": {"matchLabels": {"app": "vcluster"}},
    }
    return {way: [peer], "ports": [{"protocol": "UDP"}]}


def _peer_rule(namespace: str) -> dict[str, Any]:
    """Any traffic from the control plane pods of the tenant in `namespace` (a hand-written allow-list)."""
    rule = _udp_rule("from", namespace)
    del rule["ports"]
    return rule


def refused_values() -> dict[str, Any]:
    """A client's vcluster.yaml that vCluster refuses: its entry names no target virtual cluster."""
    entry = {"enabled": True, "targetVirtualCluster": {"project": PROJECT}, "accessResources": "owned"}
    return {"experimental": {"proxy": {"customResources": {f"widgets.{PRIMARY_GV}": entry}}}}


def _dump(values: dict[str, Any]) -> str:
    return yaml.safe_dump(values, sort_keys=False)


def fleet_instances(platform: Platform) -> list[Instance]:
    """Every client and target of the simulated fleet, then the refused client, in a stable order."""
    found = [
        Instance(c.project, c.name, c.name, _dump(client_values(c)), c.vcluster_version, templated=False)
        for c in platform.clients.values()
    ]
    found += [
        Instance(t.project, t.name, t.name, _dump(_tenant_values(t)), t.vcluster_version, templated=True)
        for t in platform.targets.values()
    ]
    refused = Instance(PROJECT, REFUSED_CLIENT, None, _dump(refused_values()), "0.37.1", False, "Pending")
    return [*found, refused]


def _helm_release(instance: Instance) -> Json:
    chart = {"name": CHART, "repo": CHART_REPO, "version": instance.version}
    return {"chart": chart, "values": instance.values}


def _spec(instance: Instance) -> Json:
    spec: Json = {
        "displayName": instance.name,
        "owner": {"team": instance.project},
        "clusterRef": {
            "cluster": CONTROL_PLANE,
            "namespace": f"vcluster-{instance.name}",
            "virtualCluster": instance.name,
        },
    }
    if instance.templated:
        spec["templateRef"] = {"name": TARGET_TEMPLATE, "version": "1.0.0"}
        spec["parameters"] = ""
    else:
        spec["template"] = {"metadata": {}, "helmRelease": _helm_release(instance)}
    return spec


def _status(instance: Instance) -> Json:
    status: Json = {
        "phase": instance.phase,
        "virtualCluster": {"metadata": {}, "helmRelease": _helm_release(instance)},
    }
    if instance.phase != "Ready":
        status["reason"] = "VirtualClusterNotReady"
        status["message"] = "the virtual cluster's control plane is not ready"
    return status


def document(instance: Instance, created_unix: float, resource_version: int) -> Json:
    """The instance as the management API serves it."""
    meta = objects.metadata(instance.name, instance.namespace, created_unix, {}, resource_version)
    meta["uid"] = objects.uid(PLURAL, instance.namespace, instance.name)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": meta,
        "spec": _spec(instance),
        "status": _status(instance),
    }


def fingerprint(instance: Instance) -> str:
    """A digest of what the instance says, to tell when it changed."""
    blob = json.dumps([_spec(instance), _status(instance)], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()
