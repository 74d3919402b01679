"""What the triage reads found of one client cluster: its version, its targets' control-plane pods and
versions, its APIServices. Neutral: `bot.reads.triage` reads it; `status`, `verify` and the digest judge it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.domain.apiservices import ClientApiServices, apiservice_findings
from bot.domain.findings import Finding
from bot.domain.verdict import TargetPods
from bot.domain.versions import TenantVersion, VClusterVersion, version_findings


@dataclass(frozen=True, slots=True)
class TargetTriage:
    """One target's control-plane pods and vCluster version."""

    target: str
    pods: TargetPods
    version: TenantVersion


@dataclass(frozen=True)
class ClusterTriage:
    """One client cluster's version, its targets' pods and versions, and its proxy objects."""

    cluster: str
    client_version: TenantVersion
    targets: Mapping[str, TargetTriage]
    apiservices: ClientApiServices

    def versions(self) -> tuple[TenantVersion, ...]:
        return (self.client_version, *(t.version for t in self.targets.values()))

    def as_dict(self) -> dict[str, Any]:
        """The cluster's part of `status --json`: versions, APIServices, orphans."""
        return {
            "cluster": self.cluster,
            "versions": [v.as_dict() for v in self.versions()],
            "target_pods": {
                name: {
                    "unavailable": t.pods.unavailable,
                    "pods": [{"name": p.name, "ready": p.ready, "detail": p.detail} for p in t.pods.pods],
                }
                for name, t in self.targets.items()
            },
            "apiservices": self.apiservices.as_dict(),
        }

    def findings(self, fleet_newest: VClusterVersion | None) -> list[Finding]:
        """APIService problems and orphans, and the version flags against the fleet's newest."""
        targets = [t.version for t in self.targets.values()]
        return [
            *apiservice_findings(self.apiservices),
            *version_findings(self.client_version, targets, fleet_newest),
        ]
