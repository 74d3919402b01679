"""The default fleet every scenario starts from: one client, one target, a control plane cluster."""

from __future__ import annotations

import random

from sim.fleet import (
    OWNER_LABEL,
    ClientCluster,
    ControlPlanePod,
    NetworkPolicyValues,
    Platform,
    ProxiedResource,
    Replica,
    StoredObject,
    TargetCluster,
    TargetLink,
)

CLIENT = "team-a"
TARGET = "crd-store"
PROJECT = "platform"
TARGET_LABEL = f"{PROJECT}/{TARGET}"
PRIMARY_GV = "example.com/v1"
SECONDARY_GV = "data.example.com/v1alpha1"
PROBE_RESOURCE = "widgets"
PROBE_NAMESPACE = "default"
CONTROL_PLANE = "control-plane"

RESOURCES = (
    ProxiedResource(PRIMARY_GV, "widgets", "Widget"),
    ProxiedResource(PRIMARY_GV, "gadgets", "Gadget"),
    ProxiedResource(SECONDARY_GV, "datasets", "Dataset"),
)


def _objects(rng: random.Random, owner: str) -> list[StoredObject]:
    out = []
    for resource in RESOURCES:
        for i in range(6):
            labels = {
                "app": rng.choice(["billing", "search", "ingest"]),
                "tier": rng.choice(["gold", "silver"]),
            }
            if i % 2 == 0:
                labels[OWNER_LABEL] = owner
            namespace = "default" if i < 4 else "apps"
            created = -86_400.0 + rng.uniform(0, 80_000)
            out.append(StoredObject(resource, namespace, f"{resource.kind.lower()}-{i}", labels, created))
    return out


def default_fleet(seed: int, replicas: int = 1) -> Platform:
    """team-a proxies both group/versions of platform/crd-store; both ends carry the UDP peer rules."""
    rng = random.Random(seed)
    target = TargetCluster(
        name=TARGET,
        project=PROJECT,
        resources=list(RESOURCES),
        pods=[ControlPlanePod(f"{TARGET}-0", f"{TARGET}-{rng.getrandbits(40):010x}.vcluster.invalid")],
        namespaces={"default", "apps"},
        network_policy=NetworkPolicyValues(udp_ingress_from=[f"vcluster-{CLIENT}"]),
    )
    client = ClientCluster(
        name=CLIENT,
        project=PROJECT,
        replicas=[Replica(f"{CLIENT}-{i}") for i in range(replicas)],
        links=[TargetLink(target, [PRIMARY_GV, SECONDARY_GV], resources=["widgets", "gadgets", "datasets"])],
        network_policy=NetworkPolicyValues(udp_egress_to=[f"vcluster-{TARGET}"]),
    )
    target.objects = _objects(rng, client.owner_value)
    return Platform(clients={CLIENT: client}, targets={TARGET: target})
