"""What `status` and `reasons` found: each target's peer caches, findings and verdict, when and where each
client cluster was read, the triage; a target's outcome reasons with their meaning. Neutral:
`bot.checks.status` reads them; `bot.render.checks_status` lays them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.domain.alert_summary import PeerReading
from bot.domain.blast import BlastRadius, ClientReach, client_reach
from bot.domain.findings import Finding, Severity, finding_dict, worst
from bot.domain.reasons import OutcomeReason, ReasonKind
from bot.domain.snapshot import PeerCounts
from bot.domain.triage import ClusterTriage
from bot.domain.verdict import TargetVerdict, Verdict, verdict_dict

REPLICA_UNKNOWN = "not pinned: the client cluster's Service chose one replica"
# Verdicts that fail the check: the triage found something broken.
BROKEN = frozenset(Verdict) - {Verdict.HEALTHY, Verdict.UNKNOWN}


@dataclass(frozen=True, slots=True)
class GroupVersionState:
    """One group/version's peer cache as the proxy reports it now."""

    group_version: str
    peers: PeerCounts | None
    cache_synced: bool | None
    peer_list_age: float | None  # not a staleness signal (the guide): shown, never judged


@dataclass(frozen=True, slots=True)
class TargetStatus:
    """A configured target: its peer caches and the diagnosis, or why the client could not be read."""

    target: str
    cluster: str
    group_versions: tuple[GroupVersionState, ...]
    findings: tuple[Finding, ...]
    unavailable: str | None = None
    # The HA replica this reading is of, when the cluster's replicas are addressable (each keeps its own
    # peer caches, so one healthy replica must not hide a degraded one).
    replica: str | None = None
    verdict: TargetVerdict | None = None  # the quick triage (target pods + this reading)

    @property
    def severity(self) -> Severity:
        return worst(self.findings)


@dataclass(frozen=True, slots=True)
class ClusterReadInfo:
    """When a client cluster was read and which replica answered (None: not known)."""

    cluster: str
    read_at: float
    replica: str | None
    unavailable: str | None


@dataclass(frozen=True, slots=True)
class StatusResult:
    """Live state of one or every configured target."""

    targets: tuple[TargetStatus, ...]
    reads: tuple[ClusterReadInfo, ...]
    triage: tuple[ClusterTriage, ...] = ()  # per client cluster: versions, target pods, APIServices
    # What the triage reads found: APIService problems and orphans, version flags.
    triage_findings: tuple[Finding, ...] = ()

    @property
    def severity(self) -> Severity:
        found = max((t.severity for t in self.targets), default=Severity.OK)
        return max(found, worst(self.triage_findings))

    @property
    def passed(self) -> bool:
        """No warning, and no target the quick triage finds broken (`unknown` fails only by its cause)."""
        broken = any(t.verdict is not None and t.verdict.verdict in BROKEN for t in self.targets)
        return self.severity < Severity.WARNING and not broken

    @property
    def blast(self) -> tuple[BlastRadius, ...]:
        """Each target read through more than one client: how every client behind it reaches it."""
        by_target: dict[str, dict[str, list[TargetStatus]]] = {}
        for t in self.targets:
            by_target.setdefault(t.target, {}).setdefault(t.cluster, []).append(t)
        return tuple(
            BlastRadius(target, tuple(_reach(target, client, rows) for client, rows in clients.items()))
            for target, clients in by_target.items()
            if len(clients) > 1
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": "status",
            "passed": self.passed,
            "verdict": self.severity.label,
            "reads": [_read_dict(r) for r in self.reads],
            "targets": [_target_dict(t) for t in self.targets],
            "blast": [
                {"target": b.target, "clients": [_reach_dict(c) for c in b.clients]} for b in self.blast
            ],
            "clusters": [t.as_dict() for t in self.triage],
            "triage_findings": [finding_dict(f) for f in self.triage_findings],
        }


def _reach(target: str, client: str, rows: list[TargetStatus]) -> ClientReach:
    """One client's reach of `target` from its readings (one per replica read)."""
    read = [r for r in rows if r.unavailable is None]
    if not read:
        return client_reach(client, (), None, target, rows[0].unavailable)
    peers = [
        PeerReading(
            target,
            g.group_version,
            g.peers.healthy,
            g.peers.quarantined,
            g.peers.half_open,
            g.cache_synced,
            r.replica,
        )
        for r in read
        for g in r.group_versions
        if g.peers is not None
    ]
    return client_reach(client, [g.group_version for g in read[0].group_versions], peers, target)


def _reach_dict(c: ClientReach) -> dict[str, Any]:
    return {
        "client": c.client,
        "reach": c.reach.value,
        "lost": list(c.lost),
        "unsynced": list(c.unsynced),
        "why": c.why,
    }


def _read_dict(r: ClusterReadInfo) -> dict[str, Any]:
    return {"cluster": r.cluster, "read_at": r.read_at, "replica": r.replica, "unavailable": r.unavailable}


def _target_dict(t: TargetStatus) -> dict[str, Any]:
    return {
        "target": t.target,
        "cluster": t.cluster,
        "replica": t.replica,
        **verdict_dict(t.verdict),
        "severity": t.severity.label,
        "unavailable": t.unavailable,
        "group_versions": [
            {
                "group_version": g.group_version,
                "peers": None
                if g.peers is None
                else {  # gauges of counts: whole numbers
                    "healthy": round(g.peers.healthy),
                    "quarantined": round(g.peers.quarantined),
                    "half_open": round(g.peers.half_open),
                },
                "cache_synced": g.cache_synced,
                "peer_list_age_seconds": g.peer_list_age,
            }
            for g in t.group_versions
        ],
        "findings": [finding_dict(f) for f in t.findings],
    }


# -- reasons ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReasonCount:
    """How often one reason was counted by one family, and what it means."""

    family: str  # request, termination, dial failure, discovery fallback
    reason: str
    count: float
    info: OutcomeReason

    @property
    def is_fault(self) -> bool:
        return self.info.kind is ReasonKind.PROXY_FAULT


@dataclass(frozen=True, slots=True)
class ReasonsResult:
    """The outcome reasons of one target, over a window (Prometheus) or since the proxy started."""

    target: str
    cluster: str
    scope: str  # "in the last 15m (Prometheus)" or "since the proxy started"
    window_seconds: int | None  # None: totals since the proxy started
    counts: tuple[ReasonCount, ...]
    notes: tuple[str, ...] = ()
    unavailable: str | None = None

    @property
    def faults(self) -> tuple[ReasonCount, ...]:
        return tuple(c for c in self.counts if c.is_fault)

    @property
    def passed(self) -> bool:
        return self.unavailable is None and not self.faults

    @property
    def verdict(self) -> str:
        if self.unavailable is not None:
            return "unknown"
        return "proxy_faults" if self.faults else "no_proxy_faults"

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": "reasons",
            "passed": self.passed,
            "verdict": self.verdict,
            "target": self.target,
            "cluster": self.cluster,
            "scope": self.scope,
            "window_seconds": self.window_seconds,
            "unavailable": self.unavailable,
            "notes": list(self.notes),
            "reasons": [
                {
                    "family": c.family,
                    "reason": c.reason,
                    "count": round(c.count),  # events counted: a whole number
                    "kind": c.info.kind.value,
                    "fault": c.is_fault,
                    "meaning": c.info.meaning,
                    "next_step": c.info.next_step,
                }
                for c in self.counts
            ],
        }
