"""What `netpol` answers: the two control planes, where the peers and STUN servers are when the ends are
on different clusters, and the vcluster.yaml values for both ends. Neutral: `bot.checks.netpol` writes
them; `bot.render.checks_netpol` lays them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The standard STUN port; platforms may configure others (`--stun-port`).
DEFAULT_STUN_PORT = 3478
ANYWHERE_V4 = "0.0.0.0/0"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One vCluster control plane: its namespace in the control plane cluster and its Helm release."""

    namespace: str
    release: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.release}"


@dataclass(frozen=True, slots=True)
class CrossCluster:
    """Where the peers' advertised endpoints and the STUN servers are, for ends on different clusters."""

    peer_cidrs: tuple[str, ...]
    stun_cidrs: tuple[str, ...] = (ANYWHERE_V4,)
    stun_ports: tuple[int, ...] = (DEFAULT_STUN_PORT,)
    stun_given: bool = False


@dataclass(frozen=True, slots=True)
class NetpolResult:
    """The two vcluster.yaml snippets (YAML text with reasons as comments) and what to know about them."""

    client: Endpoint
    target: Endpoint
    cross: CrossCluster | None
    client_values: str
    target_values: str
    notes: tuple[str, ...]

    passed: bool = True  # nothing to check: the snippets are the answer

    @property
    def mode(self) -> str:
        return "cross_cluster" if self.cross is not None else "same_cluster"

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": "netpol",
            "passed": self.passed,
            "verdict": self.mode,
            "client": str(self.client),
            "target": str(self.target),
            "client_values": self.client_values,
            "target_values": self.target_values,
            "notes": list(self.notes),
        }
