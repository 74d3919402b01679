"""The fleet digest: read every client cluster (bounded, each with its own timeout), judge every target.

    read_fleet(clusters, read)        every cluster concurrently, at most `concurrency` at once; a cluster
                                      that does not answer within `timeout` costs only that and is unreachable
    probe_runs(clusters, cronjobs)    the probe CronJob's last success per client, where configured
    build_digest(...)                 targets worst first, what changed since the last digest, reasons that
                                      moved, the probe ages; `summary()` is stored for the next digest

A target is *unreachable* when its client cluster could not be read, *degraded* when the diagnosis has a
warning or worse, else *healthy*. Reasons that moved are proxy-fault reasons whose counters increased since
the last digest (its stored totals, counter resets read like Prometheus' `increase()`), or over the live
window of recent reads when there is no earlier digest.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from bot.checks.context import CheckContext
from bot.checks.status import reason_counts
from bot.checks.verify_cronjob import cronjob_path, judge_cronjob
from bot.checks.verify_lines import Outcome
from bot.domain.delta import counter_increase
from bot.domain.diagnosis import diagnose
from bot.domain.findings import Finding, Severity, sort_worst_first, worst
from bot.domain.snapshot import ProxySnapshot
from bot.errors import ClusterError
from bot.live import ClusterRead
from config.settings import ClusterSettings, Settings, TargetSettings

Clock = Callable[[], float]
ReadCluster = Callable[[str], Awaitable[ClusterRead]]
# Reads at once, each from a different client cluster: the bound is on the bot (sockets, pages in memory).
# 40 rather than 20 since pages are parsed in worker processes: with 20, a cluster late in the fleet only
# started reading a second in, and a hung one there held the digest past its budget.
DEFAULT_CONCURRENCY = 40
DEFAULT_CLUSTER_TIMEOUT = 4.0  # below the 5 s budget a whole digest of a big fleet is held to
REQUEST_FAMILY = "request"  # the words status.py's REASON_FAMILIES use for vcluster_proxy_request_total


class Health(StrEnum):
    """How a target stands in the digest; ordered worst first by `RANK`."""

    UNREACHABLE = "unreachable"
    DEGRADED = "degraded"
    HEALTHY = "healthy"


RANK = {Health.UNREACHABLE: 0, Health.DEGRADED: 1, Health.HEALTHY: 2}


# -- collection ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterOutcome:
    """One cluster's read and what it cost (seconds of wall time, waiting for a slot not included)."""

    read: ClusterRead
    seconds: float
    timed_out: bool = False


async def read_fleet(
    clusters: Sequence[str],
    read: ReadCluster,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float = DEFAULT_CLUSTER_TIMEOUT,
    wall: Clock = time.time,
    monotonic: Clock = time.monotonic,
) -> dict[str, ClusterOutcome]:
    """Every cluster read at most `concurrency` at a time; each read is cut off after `timeout` seconds."""
    slots = asyncio.Semaphore(max(1, concurrency))

    async def one(name: str) -> ClusterOutcome:
        async with slots:
            started = monotonic()
            try:
                async with asyncio.timeout(timeout):
                    result = await read(name)
            except TimeoutError:
                why = f"cluster {name}: no answer within {timeout:g} s (timed out)"
                return ClusterOutcome(ClusterRead(name, wall(), None, None, why), monotonic() - started, True)
            return ClusterOutcome(result, monotonic() - started)

    outcomes = await asyncio.gather(*(one(name) for name in clusters))
    return {o.read.cluster: o for o in outcomes}


@dataclass(frozen=True, slots=True)
class ProbeRun:
    """The probe CronJob of one client cluster: seconds since its last success (None: never or unknown)."""

    cluster: str
    ok: bool
    last_success_age: float | None
    summary: str


class CronJobSource(Protocol):
    """Reads a client's probe CronJob (`ContextCronJobs` over a `CheckContext` is one)."""

    async def probe_run(self, cluster: ClusterSettings, now: float) -> ProbeRun: ...


@dataclass
class ContextCronJobs:
    """The probe CronJob read from the control plane cluster and judged as `verify` judges it."""

    ctx: CheckContext

    async def probe_run(self, cluster: ClusterSettings, now: float) -> ProbeRun:
        access = cluster.control_plane
        assert access is not None  # probe_runs only asks for clusters with a control plane
        namespace = cluster.control_plane_namespace
        try:
            reader = await self.ctx.control_plane(cluster.name, access)
            response = await reader.get(cronjob_path(namespace), timeout=self.ctx.timeout)
        except ClusterError as err:
            return ProbeRun(cluster.name, False, None, f"could not read the CronJob: {err}")
        if response.status != 200:
            return ProbeRun(cluster.name, False, None, f"reading the CronJob answered HTTP {response.status}")
        cronjob = _json(response.body)
        line = judge_cronjob(cluster.name, namespace, cronjob, now)
        age = _success_age(cronjob, now)
        return ProbeRun(cluster.name, line.outcome is Outcome.PASS, age, line.summary)


def _json(body: bytes) -> Mapping[str, Any]:
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, Mapping) else {}


def _success_age(cronjob: Mapping[str, Any], now: float) -> float | None:
    raw = (cronjob.get("status") or {}).get("lastSuccessfulTime")
    if not isinstance(raw, str):
        return None
    try:
        return max(0.0, now - datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


async def probe_runs(
    clusters: Sequence[ClusterSettings],
    source: CronJobSource | None,
    now: float,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float = DEFAULT_CLUSTER_TIMEOUT,
) -> tuple[ProbeRun, ...]:
    """The probe CronJob of every client with a `control_plane`, bounded like `read_fleet`."""
    if source is None:
        return ()
    slots = asyncio.Semaphore(max(1, concurrency))

    async def one(cluster: ClusterSettings) -> ProbeRun:
        async with slots:
            try:
                async with asyncio.timeout(timeout):
                    return await source.probe_run(cluster, now)
            except TimeoutError:
                return ProbeRun(cluster.name, False, None, f"no answer within {timeout:g} s")

    chosen = [c for c in clusters if c.control_plane is not None]
    return tuple(await asyncio.gather(*(one(c) for c in chosen)))


# -- judging ---------------------------------------------------------------------------------------------


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
    if read.snapshot is None:
        return TargetDigest(target.name, cluster, Health.UNREACHABLE, unavailable=read.unavailable)
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

    def count(self, health: Health) -> int:
        return sum(1 for t in self.targets if t.health is health)

    def of(self, health: Health) -> tuple[TargetDigest, ...]:
        return tuple(t for t in self.targets if t.health is health)

    @property
    def quiet(self) -> bool:
        """Nothing to tell: every target healthy, nothing moved, every known probe succeeding."""
        calm = not self.changes or all(c.after is Health.HEALTHY for c in self.changes)
        probes_ok = all(p.ok for p in self.probes)
        return self.count(Health.HEALTHY) == len(self.targets) and calm and not self.moved and probes_ok

    @property
    def severity(self) -> Severity:
        return max((t.severity for t in self.targets), default=Severity.OK)

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
        }


def _target_dict(t: TargetDigest) -> dict[str, Any]:
    return {
        "target": t.target,
        "cluster": t.cluster,
        "health": t.health.value,
        "severity": t.severity.label,
        "healthy_peers": t.healthy_peers,
        "unavailable": t.unavailable,
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


def build_digest(
    settings: Settings,
    outcomes: Mapping[str, ClusterOutcome],
    *,
    period: str,
    at: float,
    probes: tuple[ProbeRun, ...] = (),
    previous: Mapping[str, Any] | None = None,
    previous_at: float | None = None,
) -> Digest:
    """The digest of every configured target from the clusters' reads, worst first."""
    judged = [t for c in settings.clusters for t in judge_cluster(c, outcomes[c.name].read)]
    seconds = {name: o.seconds for name, o in outcomes.items()}
    return assemble_digest(
        judged, seconds, period=period, at=at, probes=probes, previous=previous, previous_at=previous_at
    )


def assemble_digest(
    judged: Iterable[TargetDigest],
    cluster_seconds: Mapping[str, float],
    *,
    period: str,
    at: float,
    probes: tuple[ProbeRun, ...] = (),
    previous: Mapping[str, Any] | None = None,
    previous_at: float | None = None,
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
    )
