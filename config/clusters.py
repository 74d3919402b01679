"""The tenant clusters in the settings: each client cluster, how it is reached, its targets and their probes.

Part of the one `config.settings.Settings` model (its `clusters:` section); strict like every section.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Self

from pydantic import Field
from pydantic import model_validator as _model_validator

from config.escalation import EscalationOverride
from config.fields import (
    ConfigPath,
    DnsLabel,
    GroupVersion,
    LabelName,
    Loc,
    NonEmpty,
    ResourcePlural,
    SlackChannel,
    StrictModel,
    TargetName,
    raise_if_any,
)


class ProbeSettings(StrictModel):
    """The guide's synthetic probe: GET /apis/<group_version>/namespaces/<namespace>/<resource>?limit=1."""

    group_version: GroupVersion
    resource: ResourcePlural
    namespace: DnsLabel = "default"

    @property
    def path(self) -> str:
        return f"/apis/{self.group_version}/namespaces/{self.namespace}/{self.resource}"


class KubeAccess(StrictModel):
    """How to reach one Kubernetes API: a kubeconfig file and optionally one of its contexts."""

    kubeconfig: ConfigPath
    context: str | None = None


class ControlPlaneSettings(StrictModel):
    """Where a tenant cluster's control plane runs, in the control plane cluster.

    Read for the probe CronJob (`verify`) and the NetworkPolicies (`path`); the namespace and release
    default to vCluster's conventions (`vcluster-<name>` and `<name>`).
    """

    kubeconfig: ConfigPath
    context: str | None = None
    namespace: DnsLabel | None = None
    release: DnsLabel | None = None


def default_namespace(tenant: str) -> str:
    """vCluster's convention: tenant `<name>` runs in `vcluster-<name>` of the control plane cluster."""
    return f"vcluster-{tenant}"


class TargetSettings(StrictModel):
    """One target tenant cluster that a client forwards custom resources to."""

    name: TargetName
    group_versions: NonEmpty[tuple[GroupVersion, ...]]
    probe: ProbeSettings
    # The target cluster itself, for path checks that compare against direct requests.
    direct: KubeAccess | None = None
    # The target's control plane in the control plane cluster (its NetworkPolicies), for `path`.
    control_plane: ControlPlaneSettings | None = None
    # The client's `accessResources` for this target (vCluster's default: owned), to order 404 causes.
    access_resources: Literal["owned", "all"] = "owned"

    @property
    def tenant_name(self) -> str:
        """The target's vCluster name: the `<name>` of `<project>/<name>`."""
        return self.name.partition("/")[2]

    @property
    def control_plane_namespace(self) -> str:
        """The target's namespace in the control plane cluster: configured, else `vcluster-<name>`."""
        configured = self.control_plane.namespace if self.control_plane else None
        return configured or default_namespace(self.tenant_name)

    @_model_validator(mode="after")
    def _probe_is_proxied(self) -> Self:
        problems: list[tuple[Loc, str]] = [
            (("group_versions", index), f"{gv!r} is listed twice")
            for index, gv in enumerate(self.group_versions)
            if gv in self.group_versions[:index]
        ]
        if self.probe.group_version not in self.group_versions:
            message = f"{self.probe.group_version!r} is not one of this target's group_versions"
            problems.append((("probe", "group_version"), message))
        raise_if_any(problems)
        return self


def replica_source(cluster: str, pod: str) -> str:
    """The live-state source name of one addressable replica of a cluster."""
    return f"{cluster}/{pod}"


class ClusterSettings(StrictModel):
    """One client tenant cluster: how to read it, which alerts are its, where they go."""

    name: DnsLabel
    kubeconfig: ConfigPath
    context: str | None = None
    # Alert labels (all must be equal) that say an alert came from this cluster.
    match: NonEmpty[dict[LabelName, str]]
    channel: SlackChannel | None = None
    targets: NonEmpty[tuple[TargetSettings, ...]]
    # The client's control plane in the control plane cluster: its probe CronJob and NetworkPolicies.
    control_plane: ControlPlaneSettings | None = None
    # HA replicas that can be read one by one: pod name -> context of `kubeconfig` reaching that replica.
    # Each replica keeps its own peer caches, so an alert carrying `pod` is enriched from that pod when
    # it is listed here; otherwise from whichever replica the cluster's Service answers with.
    replicas: dict[DnsLabel, str] = Field(default_factory=dict)
    # This cluster's escalation keys, over the top-level `escalation` (`Settings.escalation_for`).
    escalation: EscalationOverride = EscalationOverride()

    @property
    def control_plane_namespace(self) -> str:
        """The client's namespace in the control plane cluster: configured, else `vcluster-<name>`."""
        configured = self.control_plane.namespace if self.control_plane else None
        return configured or default_namespace(self.name)

    def source(self, pod: str | None) -> str:
        """The live-state source for an alert's `pod`: that replica when addressable, else the cluster."""
        return replica_source(self.name, pod) if pod is not None and pod in self.replicas else self.name

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(key) == value for key, value in self.match.items())

    def target(self, name: str) -> TargetSettings | None:
        return next((target for target in self.targets if target.name == name), None)
