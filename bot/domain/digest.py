"""The fleet digest's model: every target's health, what changed and moved since the last digest, the
probes' runs and the alerts firing now. `bot.digest` judges and assembles it; `bot.render.digest` lays it out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bot.domain.findings import Finding, Severity, finding_dict, worst
from bot.domain.oncall_figures import OncallFigures
from bot.domain.verdict import MetricsSignal, TargetVerdict, verdict_dict
from bot.domain.versions import TenantVersion

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


@dataclass(frozen=True, slots=True)
class FiringAlert:
    """An alert group firing now: what it is, how bad it got, since when, and the link to its message."""

    name: str
    target: str | None
    alerts: int
    severity: Severity
    since: float
    link: str | None


@dataclass(frozen=True, slots=True)
class ProbeRun:
    """The probe CronJob of one client cluster: seconds since its last success (None: never or unknown)."""

    cluster: str
    ok: bool
    last_success_age: float | None
    summary: str


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
    # The period's on-call figures (None: not read, as in the CLI's digest without a store of alerts).
    oncall: OncallFigures | None = None

    def count(self, health: Health) -> int:
        return sum(1 for t in self.targets if t.health is health)

    def by_target(self) -> dict[str, tuple[TargetDigest, ...]]:
        """Each target's readings, one per client that forwards to it, in the digest's order."""
        found: dict[str, list[TargetDigest]] = {}
        for t in self.targets:
            found.setdefault(t.target, []).append(t)
        return {name: tuple(readings) for name, readings in found.items()}

    def target_health(self) -> dict[str, Health]:
        """Each target's health: its worst client's (a target one client cannot reach is not healthy)."""
        return {
            name: min((r.health for r in rs), key=RANK.__getitem__) for name, rs in self.by_target().items()
        }

    def shared(self) -> dict[str, tuple[TargetDigest, ...]]:
        """The targets several clients forward to, each with every client's reading."""
        return {name: rs for name, rs in self.by_target().items() if len({r.cluster for r in rs}) > 1}

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
        health = self.target_health()
        faults: dict[str, dict[str, float]] = {}
        for t in self.targets:  # a shared target's faults summed over its clients
            mine = faults.setdefault(t.target, {})
            for key, value in t.fault_totals.items():
                mine[key] = mine.get(key, 0.0) + value
        return {
            "at": self.at,
            "targets": {name: {"health": health[name].value, "faults": faults[name]} for name in health},
        }

    def sample(self) -> dict[str, Any]:
        """A small fleet sample for charts: healthy peers and health per target, request faults fleet-wide."""
        faults: dict[str, float] = {}
        for t in self.targets:
            for key, value in t.fault_totals.items():
                family, _, reason = key.partition("/")
                if family == REQUEST_FAMILY:
                    faults[reason] = faults.get(reason, 0.0) + value
        health = self.target_health()
        targets = {
            name: {"h": _lowest(r.healthy_peers for r in readings), "s": health[name].value}
            for name, readings in self.by_target().items()
        }
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
            "oncall": None if self.oncall is None else _oncall_dict(self.oncall),
        }


def _lowest(values: Iterable[float | None]) -> float | None:
    """The lowest known value (a shared target's healthy peers: its worst client's), None when none is."""
    known = [v for v in values if v is not None]
    return min(known) if known else None


def _oncall_dict(o: OncallFigures) -> dict[str, Any]:
    return {
        "incidents": o.incidents,
        "resolved": o.resolved,
        "open": o.open,
        "tta_median": o.tta_median,
        "tta_p90": o.tta_p90,
        "ttr_median": o.ttr_median,
        "ttr_p90": o.ttr_p90,
        "never_acknowledged": o.never_acknowledged,
        "not_acknowledged_yet": o.not_acknowledged_yet,
        "escalated": o.escalated,
        "noisiest": [{"target": t, "firing_seconds": s} for t, s in o.noisiest],
        "silences": [
            {"created_by": s.created_by, "ends_at": s.ends_at.isoformat(), "comment": s.comment}
            | {"matchers": list(s.matchers)}
            for s in o.silences
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
        **verdict_dict(t.verdict),
        "findings": [
            {"severity": f.severity.label, "kind": f.kind, "title": f.title, "next_step": f.next_step}
            for f in t.findings
        ],
    }
