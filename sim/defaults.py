"""The default fleet every scenario starts from: one client, one target, a control plane cluster.

More client/target pairs on request (`default_fleet(..., clients=2)`), healthy whatever the scenario; or
the demo's fleet (`demo_fleet`): the default pair and, around it, two more clients in two projects with a
dozen more targets, one of them shared and one pair on the relay, all healthy unless a scenario says.
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


# The demo's fleet around the default pair: (client, project, its targets); a target named twice is shared.
DEMO_CLIENTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (CLIENT, PROJECT, ("billing-db", "search-index", "feature-flags", "notifications")),
    ("payments-api", "payments", ("ledger", "invoices", "fx-rates", "audit-log", "search-index")),
    ("risk-engine", "payments", ("ledger", "scores", "rules", "case-files")),
)
RELAYED = ("risk-engine", "case-files")  # the pair whose target has no UDP rule for it: relayed, not broken


def demo_group_version(target: str) -> str:
    """The group/version a demo target serves (one each: vCluster refuses one forwarded to two targets)."""
    return f"{target.replace('-', '')}.example.com/v1"


def demo_fleet(seed: int, replicas: int = 1) -> Platform:
    """The default pair (the scenarios' faults stay on it) and the demo's fleet around it: 3 clients in 2
    projects, 12 targets (platform/search-index and payments/ledger shared by two clients each), the
    risk-engine -> case-files pair relayed."""
    platform = default_fleet(seed, replicas)
    rng = random.Random(f"{seed}/demo")
    for client_name, project, names in DEMO_CLIENTS:
        client = platform.clients.get(client_name) or ClientCluster(
            name=client_name,
            project=project,
            replicas=[Replica(f"{client_name}-{i}") for i in range(replicas)],
            network_policy=NetworkPolicyValues(),
        )
        platform.clients[client.name] = client
        for name in names:
            owner = PROJECT if name == "search-index" else project  # the shared ones live in one project
            target = platform.targets.get(name) or _demo_target(rng, name, owner)
            platform.targets[name] = target
            gv = demo_group_version(name)
            client.links.append(TargetLink(target, [gv], resources=["records"]))
            client.network_policy.udp_egress_to.append(target.namespace)
            if (client_name, name) != RELAYED:
                target.network_policy.udp_ingress_from.append(client.namespace)
            owned = {OWNER_LABEL: client.owner_value}
            target.objects += [
                StoredObject(target.resources[0], "default", f"record-{client_name}-{i}", owned, -3600.0)
                for i in range(2)
            ]
    return platform


def _demo_target(rng: random.Random, name: str, project: str) -> TargetCluster:
    return TargetCluster(
        name=name,
        project=project,
        resources=[ProxiedResource(demo_group_version(name), "records", "Record")],
        pods=[ControlPlanePod(f"{name}-0", f"{name}-{rng.getrandbits(40):010x}.vcluster.invalid")],
        namespaces={"default"},
        network_policy=NetworkPolicyValues(),
    )
