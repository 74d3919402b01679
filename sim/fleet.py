"""The simulated platform: client and target tenant clusters, their pods, objects and network paths."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

# Simulated owner labels the proxy puts on objects a client creates (accessResources: owned).
OWNER_LABEL = "proxy.vcluster.sim/owner"
# The vCluster release every simulated tenant runs unless a scenario says otherwise, and its image.
VCLUSTER_VERSION = "0.37.1"
VCLUSTER_IMAGE = "ghcr.io/loft-sh/vcluster-pro"
# The first release that serves /metrics/syncer.
METRICS_SINCE = (0, 37)


class Path(StrEnum):
    """How a client's proxy reaches a target over the platform network."""

    DIRECT = "direct"
    RELAYED = "relayed"
    CUT = "cut"


class PodPhase(StrEnum):
    RUNNING = "running"
    TERMINATING = "terminating"
    GONE = "gone"


@dataclass(frozen=True)
class ProxiedResource:
    """A resource the proxy forwards: plural name, kind, scope."""

    group_version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def group(self) -> str:
        return self.group_version.split("/")[0]

    @property
    def version(self) -> str:
        return self.group_version.split("/")[1]


@dataclass
class StoredObject:
    """An object the target stores."""

    resource: ProxiedResource
    namespace: str
    name: str
    labels: dict[str, str]
    created_at: float
    resource_version: int = 1


@dataclass
class ControlPlanePod:
    """One target control-plane pod: a peer endpoint, whose hostname changes when it restarts."""

    name: str
    hostname: str
    phase: PodPhase = PodPhase.RUNNING
    # A pod that is running but not answering (crash-looping server, hung process).
    answering: bool = True
    created_at: float = -86_400.0

    @property
    def ready(self) -> bool:
        """Its readiness probe passes: running and answering (a terminating pod is never Ready)."""
        return self.phase is PodPhase.RUNNING and self.answering


@dataclass
class NetworkPolicyValues:
    """The `policies.networkPolicy` values of one tenant: generated defaults plus UDP peer rules."""

    enabled: bool = True
    udp_egress_to: list[str] = field(default_factory=list)
    udp_ingress_from: list[str] = field(default_factory=list)
    # A hand-written control-plane ingress rule admitting peers from these namespaces only (None: the
    # generated defaults, which admit the platform's peers): every other client's path is cut.
    ingress_only_from: list[str] | None = None

    def admits(self, namespace: str) -> bool:
        """Whether a peer from `namespace` may reach this control plane at all (relayed or direct)."""
        return not self.enabled or self.ingress_only_from is None or namespace in self.ingress_only_from


@dataclass
class Tenant:
    """What every tenant cluster has: a name, a project, a host namespace and its policy values."""

    name: str
    project: str = "platform"
    network_policy: NetworkPolicyValues = field(default_factory=NetworkPolicyValues)
    vcluster_version: str = VCLUSTER_VERSION
    # `controlPlane.statefulSet.env` of its vcluster.yaml, as the StatefulSet's syncer container carries it.
    env: dict[str, str] = field(default_factory=dict)

    @property
    def namespace(self) -> str:
        return f"vcluster-{self.name}"

    @property
    def image(self) -> str:
        """The control-plane StatefulSet's vCluster image, tagged with the version it runs."""
        return f"{VCLUSTER_IMAGE}:{self.vcluster_version}"

    def serves_metrics(self) -> bool:
        """Whether this release serves /metrics/syncer (v0.37 and later)."""
        major, minor = (int(part) for part in self.vcluster_version.split(".")[:2])
        return (major, minor) >= METRICS_SINCE

    @property
    def release(self) -> str:
        return self.name


@dataclass
class TargetCluster(Tenant):
    """A target tenant cluster: stores the proxied objects and runs the peer endpoints."""

    resources: list[ProxiedResource] = field(default_factory=list)
    pods: list[ControlPlanePod] = field(default_factory=list)
    objects: list[StoredObject] = field(default_factory=list)
    namespaces: set[str] = field(default_factory=lambda: {"default"})
    # Seconds the target takes to answer a request, and group/versions whose API currently fails with 503.
    latency: float = 0.004
    failing_group_versions: set[str] = field(default_factory=set)
    # RBAC inside the target: the verbs granted to a client identity (an identity not listed may do all).
    rbac: dict[str, set[str]] = field(default_factory=dict)
    # Clients whose platform access key the target rejects (401 `auth failed` on every proxied request).
    rejected_keys: set[str] = field(default_factory=set)
    restarts: int = 0

    @property
    def target_label(self) -> str:
        return f"{self.project}/{self.name}"

    def peer_hostnames(self) -> list[str]:
        return [p.hostname for p in self.pods if p.phase is not PodPhase.GONE]

    def pod_by_hostname(self, hostname: str) -> ControlPlanePod | None:
        return next((p for p in self.pods if p.hostname == hostname), None)

    def answering(self) -> bool:
        return any(p.phase is PodPhase.RUNNING and p.answering for p in self.pods)

    def resource(self, group_version: str, plural: str) -> ProxiedResource | None:
        return next(
            (r for r in self.resources if r.group_version == group_version and r.plural == plural), None
        )

    def group_versions(self) -> list[str]:
        return sorted({r.group_version for r in self.resources})


@dataclass
class Replica:
    """One HA control-plane replica of a client: its own pod name, its own proxy."""

    pod: str
    licence_ok: bool = True


@dataclass
class TargetLink:
    """A client's proxy configuration for one target."""

    target: TargetCluster
    group_versions: list[str]
    # None = the wildcard resource list; otherwise the explicitly configured plurals.
    resources: list[str] | None = None
    # accessResources: vCluster's default is `owned` (lists filtered to the client's objects, named
    # requests for others' objects masked as 404); False is `all`.
    owned_only: bool = True


@dataclass
class ClientCluster(Tenant):
    """A client tenant cluster whose proxy forwards requests to its targets."""

    replicas: list[Replica] = field(default_factory=list)
    links: list[TargetLink] = field(default_factory=list)
    namespaces: set[str] = field(default_factory=lambda: {"default", "kube-system"})
    # Group/versions once proxied whose entries left the configuration: their protected APIService and
    # Service stay behind (vCluster does not garbage-collect them), unavailable.
    orphan_group_versions: list[str] = field(default_factory=list)

    def proxied_group_versions(self) -> list[str]:
        return [gv for link in self.links for gv in link.group_versions]

    @property
    def owner_value(self) -> str:
        return f"{self.project}.{self.name}"

    @property
    def identity(self) -> str:
        """Its identity on targets and the platform: loft:vcluster:<project-namespace>:<name>."""
        return f"loft:vcluster:p-{self.project}:{self.name}"


@dataclass
class Platform:
    """The vCluster Platform: its network server, licence, tenants and the paths between them."""

    clients: dict[str, ClientCluster] = field(default_factory=dict)
    targets: dict[str, TargetCluster] = field(default_factory=dict)
    network_up: bool = True
    licence_ok: bool = True

    def path(self, client: ClientCluster, target: TargetCluster) -> Path:
        if not target.network_policy.admits(client.namespace):
            return Path.CUT  # the target's own ingress rule leaves this client out: neither path answers
        if not dials_direct(client) or not dials_direct(target):
            return Path.RELAYED  # direct dialing turned off at either end: every byte through the relay
        return Path.DIRECT if udp_rules_allow(client, target) else Path.RELAYED


def dials_direct(tenant: Tenant) -> bool:
    """False when the tenant's control plane sets TS_DEBUG_DIAL_DIRECT=false: tsnet never dials peers."""
    return tenant.env.get("TS_DEBUG_DIAL_DIRECT", "").lower() not in {"false", "0", "f"}


def udp_rules_allow(client: Tenant, target: Tenant) -> bool:
    """Direct WireGuard needs both ends: client egress UDP to the target, target ingress from the client."""
    egress, ingress = client.network_policy, target.network_policy
    client_ok = not egress.enabled or target.namespace in egress.udp_egress_to
    target_ok = not ingress.enabled or client.namespace in ingress.udp_ingress_from
    return client_ok and target_ok
