"""The default fleet every scenario starts from: one client, one target, a control plane cluster.

More client/target pairs on request (`default_fleet(..., clients=2)`), healthy whatever the scenario.
"""

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


def default_fleet(seed: int, replicas: int = 1, clients: int = 1) -> Platform:
    """team-a proxies both group/versions of platform/crd-store; both ends carry the UDP peer rules.

    With `clients` > 1, each further client (team-b, team-c, ...) proxies a target of its own
    (platform/crd-store-b, ...) the same way; the scenarios' faults stay on team-a and crd-store.
    """
    platform = Platform()
    for index in range(clients):
        letter = chr(ord("a") + index)
        # The first pair draws from the seed itself: a one-client fleet is what it always was.
        names = (CLIENT, TARGET) if index == 0 else (f"team-{letter}", f"{TARGET}-{letter}")
        rng = random.Random(seed if index == 0 else f"{seed}/{names[0]}")
        client, target = _pair(rng, *names, replicas)
        platform.clients[client.name] = client
        platform.targets[target.name] = target
    return platform


def _pair(
    rng: random.Random, client_name: str, target_name: str, replicas: int
) -> tuple[ClientCluster, TargetCluster]:
    target = TargetCluster(
        name=target_name,
        project=PROJECT,
        resources=list(RESOURCES),
        pods=[
            ControlPlanePod(f"{target_name}-0", f"{target_name}-{rng.getrandbits(40):010x}.vcluster.invalid")
        ],
        namespaces={"default", "apps"},
        network_policy=NetworkPolicyValues(udp_ingress_from=[f"vcluster-{client_name}"]),
    )
    client = ClientCluster(
        name=client_name,
        project=PROJECT,
        replicas=[Replica(f"{client_name}-{i}") for i in range(replicas)],
        links=[TargetLink(target, [PRIMARY_GV, SECONDARY_GV], resources=["widgets", "gadgets", "datasets"])],
        network_policy=NetworkPolicyValues(udp_egress_to=[f"vcluster-{target_name}"]),
    )
    target.objects = _objects(rng, client.owner_value)
    return client, target
