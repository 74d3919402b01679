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
from dataclasses import replace
from typing import Any

from bot.checks.status import reason_counts
from bot.digest.fleet import ClusterOutcome
from bot.domain.delta import counter_increase
from bot.domain.diagnosis import diagnose
from bot.domain.digest import RANK, Change, Digest, Health, ProbeRun, ReasonMove, TargetDigest
from bot.domain.findings import Finding, Severity, sort_worst_first
from bot.domain.snapshot import ProxySnapshot
from bot.domain.triage import ClusterTriage
from bot.domain.verdict import (
    TargetPods,
    judge,
    unreadable_metrics,
)
from bot.domain.versions import TenantVersion, too_old
from bot.live import ClusterRead
from bot.reads.triage import fleet_newest, metrics_of
from config.clusters import ClusterSettings, TargetSettings


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
