"""The fleet digest's content: every target judged, worst first, and what moved since the last digest.

    judge_cluster(cluster, read)      every configured target of one client cluster, from that cluster's read
    judge_reads(clusters, outcomes)   every cluster's targets from `read_fleet`'s outcomes
    with_triage(judged, triages)      each target's quick-triage verdict from its pods (and the metrics'
                                      signal judged with it), and the clusters' APIService and version flags
    assemble_digest(judged, ...)      targets worst first, what changed since the last digest, reasons that
                                      moved, the probe ages; `summary()` is stored for the next digest

A target is *unreachable* when its client cluster could not be read, *degraded* when the diagnosis has a
warning or worse, else *healthy*. Reasons that moved are proxy-fault reasons whose counters increased since
the last digest (its stored totals, counter resets read like Prometheus' `increase()`), or over the live
window of recent reads when there is no earlier digest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from bot.checks.status import finding_dict, reason_counts
from bot.checks.triage import ClusterTriage, fleet_newest, metrics_of
from bot.digest.firing import FiringAlert
from bot.digest.fleet import ClusterOutcome, ProbeRun
from bot.domain.delta import counter_increase
from bot.domain.diagnosis import diagnose
from bot.domain.findings import Finding, Severity, sort_worst_first, worst
from bot.domain.snapshot import ProxySnapshot
from bot.domain.verdict import (
    MetricsSignal,
    TargetPods,
    TargetVerdict,
    judge,
    unreadable_metrics,
    verdict_dict,
)
from bot.domain.versions import TenantVersion, too_old
from bot.live import ClusterRead
from config.clusters import ClusterSettings, TargetSettings

REQUEST_FAMILY = "request"  # the words status.py's REASON_FAMILIES use for vcluster_proxy_request_total


class Health(StrEnum):
    """How a target stands in the digest; ordered worst first by `RANK`."""

    UNREACHABLE = "unreachable"
    DEGRADED = "degraded"
    HEALTHY = "healthy"


RANK = {Health.UNREACHABLE: 0, Health.DEGRADED: 1, Health.HEALTHY: 2}


@dataclass(frozen=True, slots=True)
class TargetDigest:
    """One configured target in the digest."""

    target: str
    cluster: str
    health: Health
    findings: tuple[Finding, ...] = ()  # warnings and worse, worst first
    healthy_peers: float | None = None  # the lowest over its group/versions: one bad cache is enough
    unavailable: str | None = None
    fault_totals: Mapping[str, float] = field(default_factory=dict)  # "family/reason" -> since start
    window_faults: Mapping[str, float] = field(default_factory=dict)  # same keys, over the live window
    window_seconds: float | None = None
    signal: MetricsSignal | None = None  # the metrics' side of the verdict (judged with the page)
    verdict: TargetVerdict | None = None  # once the target's pods are read (`with_triage`)

    @property
    def severity(self) -> Severity:
        return Severity.CRITICAL if self.health is Health.UNREACHABLE else worst(self.findings)


def _fault_counts(source: ProxySnapshot, target: str) -> dict[str, float]:
    return {f"{c.family}/{c.reason}": c.count for c in reason_counts(source, target) if c.is_fault}


def _lowest_healthy(snapshot: ProxySnapshot, target: str, configured: Iterable[str]) -> float | None:
    gvs = dict.fromkeys([*configured, *snapshot.group_versions(target)])
    found = [p.healthy for gv in gvs if (p := snapshot.peers(target, gv)) is not None]
    return min(found) if found else None


def judge_target(cluster: str, target: TargetSettings, read: ClusterRead) -> TargetDigest:
    """The target's health from its client cluster's read (the same diagnosis alerts and `status` use)."""
    signal = metrics_of(read, target.name)
    if read.snapshot is None:
        return TargetDigest(
            target.name, cluster, Health.UNREACHABLE, unavailable=read.unavailable, signal=signal
        )
    snapshot = read.snapshot
    findings = tuple(
        f for f in diagnose(snapshot, read.window, target=target.name) if f.severity >= Severity.WARNING
    )
    window = read.window
    return TargetDigest(
        target=target.name,
        cluster=cluster,
        health=Health.DEGRADED if findings else Health.HEALTHY,
        findings=tuple(sort_worst_first(list(findings))),
        healthy_peers=_lowest_healthy(snapshot, target.name, target.group_versions),
        fault_totals=_fault_counts(snapshot, target.name),
        window_faults={} if window is None else _fault_counts(window.increase, target.name),
        window_seconds=None if window is None else window.seconds,
        signal=signal,
    )


@dataclass(frozen=True, slots=True)
class Change:
    """A target whose health differs from the last digest (None: it was not in the last digest)."""

    target: str
    before: Health | None
    after: Health


@dataclass(frozen=True, slots=True)
class ReasonMove:
    """A proxy-fault reason that counted on a target since the last digest (or in the live window)."""

    target: str
    family: str
    reason: str
    count: float
    since_last_digest: bool
    window_seconds: float | None = None


@dataclass(frozen=True)
class Digest:
    """The fleet digest of one period: every target worst first, and what moved since the last one."""

    period: str
    at: float
    targets: tuple[TargetDigest, ...]
    changes: tuple[Change, ...] = ()
    moved: tuple[ReasonMove, ...] = ()
    probes: tuple[ProbeRun, ...] = ()
    previous_at: float | None = None
    cluster_seconds: Mapping[str, float] = field(default_factory=dict)
    # The clusters' APIService problems and orphans and the version flags, worst first; the versions read.
    triage_findings: tuple[Finding, ...] = ()
    versions: tuple[TenantVersion, ...] = ()
    # The alert groups firing now with a message of their own, worst then oldest first.
    firing: tuple[FiringAlert, ...] = ()

    def count(self, health: Health) -> int:
        return sum(1 for t in self.targets if t.health is health)

    def of(self, health: Health) -> tuple[TargetDigest, ...]:
        return tuple(t for t in self.targets if t.health is health)

    @property
    def quiet(self) -> bool:
        """Nothing to tell: every target healthy, nothing moved, every known probe succeeding."""
        calm = not self.changes or all(c.after is Health.HEALTHY for c in self.changes)
        probes_ok = all(p.ok for p in self.probes)
        objects_ok = worst(self.triage_findings) < Severity.WARNING
        everyone = self.count(Health.HEALTHY) == len(self.targets)
        return everyone and calm and not self.moved and probes_ok and objects_ok

    @property
    def severity(self) -> Severity:
        found = max((t.severity for t in self.targets), default=Severity.OK)
        return max(found, worst(self.triage_findings))

    def summary(self) -> dict[str, Any]:
        """What the next digest compares against (stored with the run)."""
        return {
            "at": self.at,
            "targets": {
                t.target: {"health": t.health.value, "faults": dict(t.fault_totals)} for t in self.targets
            },
        }

    def sample(self) -> dict[str, Any]:
        """A small fleet sample for charts: healthy peers and health per target, request faults fleet-wide."""
        faults: dict[str, float] = {}
        for t in self.targets:
            for key, value in t.fault_totals.items():
                family, _, reason = key.partition("/")
                if family == REQUEST_FAMILY:
                    faults[reason] = faults.get(reason, 0.0) + value
        targets = {t.target: {"h": t.healthy_peers, "s": t.health.value} for t in self.targets}
        return {"targets": targets, "faults": faults}

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": "digest",
            "passed": self.severity < Severity.WARNING and all(p.ok for p in self.probes),
            "period": self.period,
            "at": self.at,
            "previous_at": self.previous_at,
            "headline": {h.value: self.count(h) for h in Health},
            "targets": [_target_dict(t) for t in self.targets],
            "changes": [
                {"target": c.target, "before": c.before and c.before.value, "after": c.after.value}
                for c in self.changes
            ],
            "reasons_moved": [
                {"target": m.target, "family": m.family, "reason": m.reason, "count": m.count}
                | {"since_last_digest": m.since_last_digest, "window_seconds": m.window_seconds}
                for m in self.moved
            ],
            "probes": [
                {"cluster": p.cluster, "ok": p.ok, "last_success_age": p.last_success_age}
                | {"summary": p.summary}
                for p in self.probes
            ],
            "triage_findings": [finding_dict(f) for f in self.triage_findings],
            "versions": [v.as_dict() for v in self.versions],
        }


def _target_dict(t: TargetDigest) -> dict[str, Any]:
    return {
        "target": t.target,
        "cluster": t.cluster,
        "health": t.health.value,
        "severity": t.severity.label,
        "healthy_peers": t.healthy_peers,
        "unavailable": t.unavailable,
        **verdict_dict(t.verdict),
        "findings": [
            {"severity": f.severity.label, "kind": f.kind, "title": f.title, "next_step": f.next_step}
            for f in t.findings
        ],
    }


def changes_since(targets: Sequence[TargetDigest], previous: Mapping[str, Any] | None) -> tuple[Change, ...]:
    """Targets whose health differs from the previous digest's summary; none without a previous digest."""
    if previous is None:
        return ()
    before = previous.get("targets") or {}
    found = []
    for t in targets:
        old = str((before.get(t.target) or {}).get("health"))
        was = Health(old) if old in set(Health) else None
        if was is not t.health:
            found.append(Change(t.target, was, t.health))
    return tuple(sorted(found, key=lambda c: (RANK[c.after], c.target)))


def reasons_moved(
    targets: Sequence[TargetDigest], previous: Mapping[str, Any] | None
) -> tuple[ReasonMove, ...]:
    """Fault reasons that counted since the previous digest, else over the live window; largest first."""
    before = (previous or {}).get("targets") or {}
    moved: list[ReasonMove] = []
    for t in targets:
        old = (before.get(t.target) or {}).get("faults")
        if isinstance(old, Mapping):
            increases = {k: counter_increase(old.get(k), v)[0] for k, v in t.fault_totals.items()}
            moved += _moves(t.target, increases, True, None)
        elif t.window_faults:
            moved += _moves(t.target, t.window_faults, False, t.window_seconds)
    return tuple(sorted(moved, key=lambda m: (-m.count, m.target, m.family, m.reason)))


def _moves(
    target: str, counts: Mapping[str, float], since_last: bool, window: float | None
) -> list[ReasonMove]:
    out = []
    for key, count in counts.items():
        if count > 0:
            family, _, reason = key.partition("/")
            out.append(ReasonMove(target, family, reason, count, since_last, window))
    return out


def judge_cluster(cluster: ClusterSettings, read: ClusterRead) -> tuple[TargetDigest, ...]:
    """Every configured target of one client cluster, judged from that cluster's read."""
    return tuple(judge_target(cluster.name, target, read) for target in cluster.targets)


def judge_reads(
    clusters: Sequence[ClusterSettings], outcomes: Mapping[str, ClusterOutcome]
) -> tuple[list[TargetDigest], dict[str, float]]:
    """Every configured target judged from its cluster's read (configuration order), and each read's cost."""
    judged = [t for c in clusters for t in judge_cluster(c, outcomes[c.name].read)]
    return judged, {name: o.seconds for name, o in outcomes.items()}


def with_triage(
    judged: Iterable[TargetDigest], triages: Mapping[str, ClusterTriage | None], timeout: float
) -> tuple[list[TargetDigest], tuple[Finding, ...], tuple[TenantVersion, ...]]:
    """Each target's verdict from its pods and its metrics' signal; the clusters' triage findings (against
    the newest version of the fleet) and every version read. A cluster absent from `triages` was not read."""
    read = [t for t in triages.values() if t is not None]
    newest = fleet_newest(read)
    out = []
    for t in judged:
        triage = triages.get(t.cluster)
        if t.cluster not in triages:
            pods = TargetPods.missing("the digest reads no control planes")
        elif triage is None:
            pods = TargetPods.missing(f"the control plane did not answer within {timeout:g} s")
        else:
            found = triage.targets.get(t.target)
            pods = found.pods if found is not None else TargetPods.missing("not read")
        signal = t.signal or unreadable_metrics(t.unavailable or "not read")
        if triage is not None and signal.unavailable is not None and too_old(triage.client_version):
            signal = unreadable_metrics(signal.unavailable, too_old=True)
        out.append(replace(t, verdict=judge(pods, signal)))
    findings = tuple(sort_worst_first([f for t in read for f in t.findings(newest)]))
    return out, findings, tuple(v for t in read for v in t.versions())


def assemble_digest(
    judged: Iterable[TargetDigest],
    cluster_seconds: Mapping[str, float],
    *,
    period: str,
    at: float,
    probes: tuple[ProbeRun, ...] = (),
    previous: Mapping[str, Any] | None = None,
    previous_at: float | None = None,
    triage_findings: tuple[Finding, ...] = (),
    versions: tuple[TenantVersion, ...] = (),
) -> Digest:
    """The digest of targets already judged (in configuration order), worst first."""
    targets = sorted(judged, key=lambda t: (RANK[t.health], -t.severity, t.cluster, t.target))
    return Digest(
        period=period,
        at=at,
        targets=tuple(targets),
        changes=changes_since(targets, previous),
        moved=reasons_moved(targets, previous),
        probes=tuple(sorted(probes, key=lambda p: (p.ok, p.cluster))),
        previous_at=previous_at,
        cluster_seconds=dict(cluster_seconds),
        triage_findings=triage_findings,
        versions=versions,
    )
