"""Message content, neutral: what an alert group, a change or a command answer says (a storm summary:
`bot.domain.storm`).

These are plain data for the renderers (`bot/render/slack.py`, `bot/render/terminal.py`); nothing here
knows Block Kit. Label values in here come from outside (Alertmanager, users) and are untrusted: the
renderers escape them, and `ActionRef` carries only validated names to the buttons.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from bot.domain.alert_summary import (
    FoldedFinding,
    PeerReading,
    WorstSeen,
    common_labels,
    fold_findings,
    silence_page,
    web_link,
    worst_of,
)
from bot.domain.blast import BlastRadius
from bot.domain.changes import ChangeReport
from bot.domain.diagnosis import AlertDiagnosis
from bot.domain.findings import Finding, Severity, worst
from bot.domain.incident import IncidentView
from bot.errors import InputError

# A configured cluster name, and a target as the proxy labels it (`<project>/<name>`, Kubernetes names).
_CLUSTER_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?")
_K8S_NAME = r"[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?"
_TARGET_NAME = re.compile(f"{_K8S_NAME}/{_K8S_NAME}")
_GROUP_ID = re.compile(r"[0-9a-f]{16}")


class GroupStatus(StrEnum):
    """An alert's or an alert group's status, in Alertmanager's words."""

    FIRING = "firing"
    RESOLVED = "resolved"


def group_id(group_key: str) -> str:
    """A short stable id of an Alertmanager group key (which can be long and carries label text)."""
    return hashlib.sha256(group_key.encode()).hexdigest()[:16]


def valid_cluster(name: str | None) -> str | None:
    """`name` when it is a plausible cluster name, else None."""
    return name if name is not None and _CLUSTER_NAME.fullmatch(name) else None


def valid_target(name: str | None) -> str | None:
    """`name` when it has the proxy's `<project>/<name>` shape, else None."""
    return name if name is not None and len(name) <= 300 and _TARGET_NAME.fullmatch(name) else None


@dataclass(frozen=True, slots=True)
class ActionRef:
    """What a button on an alert message refers to: validated names and the group's id, nothing else."""

    cluster: str | None
    target: str | None
    group: str

    @classmethod
    def for_group(cls, cluster: str | None, target: str | None, group_key: str) -> ActionRef:
        """A reference that drops any name failing validation (a hostile label never reaches a button)."""
        return cls(valid_cluster(cluster), valid_target(target), group_id(group_key))

    def encode(self) -> str:
        return json.dumps({"c": self.cluster, "t": self.target, "g": self.group}, separators=(",", ":"))

    @classmethod
    def decode(cls, value: str) -> ActionRef:
        """Parse a button value; raises InputError on anything `encode` would not have produced."""
        try:
            raw = json.loads(value)
        except ValueError as exc:
            raise InputError("button value is not JSON") from exc
        if not isinstance(raw, dict) or set(raw) != {"c", "t", "g"}:
            raise InputError("button value has unexpected fields")
        cluster, target, group = raw["c"], raw["t"], raw["g"]
        if not isinstance(group, str) or not _GROUP_ID.fullmatch(group):
            raise InputError("button value carries no valid group id")
        if cluster is not None and (not isinstance(cluster, str) or valid_cluster(cluster) is None):
            raise InputError("button value carries an invalid cluster name")
        if target is not None and (not isinstance(target, str) or valid_target(target) is None):
            raise InputError("button value carries an invalid target name")
        return cls(cluster, target, group)


@dataclass(frozen=True, slots=True)
class LiveRead:
    """Whether live state was read for a message: when, from which replica, or why not."""

    read_at: datetime | None = None
    replica: str | None = None
    unavailable: str | None = None

    @classmethod
    def read(cls, at: datetime, replica: str | None = None) -> LiveRead:
        return cls(read_at=at, replica=replica)

    @classmethod
    def missing(cls, why: str) -> LiveRead:
        return cls(unavailable=why)

    @property
    def ok(self) -> bool:
        return self.read_at is not None and self.unavailable is None


@dataclass(frozen=True)
class AlertView:
    """One alert of a group as Alertmanager sent it, with its diagnosis when there is one."""

    name: str
    status: GroupStatus
    starts_at: datetime
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    ends_at: datetime | None = None
    diagnosis: AlertDiagnosis | None = None
    generator_url: str = ""  # the Prometheus graph of the alert's expression, as Alertmanager sent it

    def graph_link(self) -> str | None:
        """The alert's Prometheus graph when `generatorURL` is a link Slack can open."""
        return web_link(self.generator_url)

    @property
    def target(self) -> str | None:
        return self.labels.get("target") or None

    @property
    def group_version(self) -> str | None:
        return self.labels.get("group_version") or None

    @property
    def pod(self) -> str | None:
        return self.labels.get("pod") or None

    @property
    def severity(self) -> Severity:
        """The diagnosis' severity, else the alert's `severity` label, else WARNING."""
        if self.diagnosis is not None:
            return self.diagnosis.severity
        return Severity.from_label(self.labels.get("severity", "")) or Severity.WARNING


@dataclass(frozen=True)
class AlertGroupView:
    """One Alertmanager alert group: the content of its single, edited-in-place message."""

    group_key: str
    status: GroupStatus
    alerts: tuple[AlertView, ...]
    started_at: datetime
    live: LiveRead
    cluster: str | None = None
    resolved_at: datetime | None = None
    truncated_alerts: int = 0  # alerts Alertmanager left out of the notification
    peers: tuple[PeerReading, ...] = ()  # the peer caches of the group's targets, as read live
    external_url: str = ""  # Alertmanager's own address, from the notification
    worst_seen: WorstSeen | None = None  # the worst state of this incident before this reading
    # The incident this message carries beyond its own alerts (groups that joined, flapping).
    incident: IncidentView | None = None
    # Every client behind each shared target of the group, as each reaches it now (`bot.domain.blast`).
    blast: tuple[BlastRadius, ...] = ()
    # What changed on its client and target before it fired (a fleet from the platform; else None).
    changes: ChangeReport | None = None

    @property
    def firing(self) -> tuple[AlertView, ...]:
        return tuple(a for a in self.alerts if a.status is GroupStatus.FIRING)

    def folded_findings(self) -> list[FoldedFinding]:
        """Every alert's findings, the same ones across group/versions, replicas and targets folded."""
        return fold_findings(
            (f, a.pod) for a in self.alerts if a.diagnosis is not None for f in a.diagnosis.findings
        )

    def worst_now(self) -> WorstSeen | None:
        """The worst state this reading shows, and the worst seen before it when that was worse."""
        now = worst_of(self.folded_findings()) if self.status is GroupStatus.FIRING else None
        return now.worse(self.worst_seen) if now is not None else self.worst_seen

    def silence_link(self) -> str | None:
        """Alertmanager's new-silence page for the labels the group's firing alerts share."""
        alerts = self.firing or self.alerts
        return silence_page(self.external_url, common_labels(a.labels for a in alerts))

    def graph_link(self) -> str | None:
        """The Prometheus graph of the worst firing alert (else of any alert) that has one."""
        ordered = sorted(self.alerts, key=lambda a: (a.status is not GroupStatus.FIRING, -a.severity))
        return next((link for a in ordered if (link := a.graph_link()) is not None), None)

    def ended_at(self, fallback: datetime) -> datetime:
        """When the group resolved: its recorded resolve, else its alerts' latest end, else `fallback`
        (the one end every line about its duration counts to)."""
        return self.resolved_at or max((a.ends_at for a in self.alerts if a.ends_at), default=fallback)

    @property
    def severity(self) -> Severity:
        return max((a.severity for a in self.alerts), default=Severity.WARNING)

    def names(self) -> list[str]:
        """Distinct alert names, worst first, then by how many alerts carry them."""
        return [t.name for t in tally(self.alerts, lambda a: a.name)]

    def action_ref(self) -> ActionRef:
        targets = {a.target for a in self.alerts if a.target}
        target = targets.pop() if len(targets) == 1 else None
        return ActionRef.for_group(self.cluster, target, self.group_key)


@dataclass(frozen=True)
class GroupChange:
    """What changed in a group since its last notification: the thread reply's content."""

    group_key: str
    at: datetime
    new: tuple[AlertView, ...] = ()
    resolved: tuple[AlertView, ...] = ()
    group_status: GroupStatus = GroupStatus.FIRING
    started_at: datetime | None = None
    ended_at: datetime | None = None  # when it resolved (`AlertGroupView.ended_at`), not when it was read


@dataclass(frozen=True)
class FindingsReport:
    """A command's answer (status, peers, reasons): findings about one or more targets."""

    title: str
    findings: tuple[Finding, ...]
    live: LiveRead
    cluster: str | None = None
    notes: tuple[str, ...] = ()  # extra lines in the domain's words, e.g. a reason breakdown
    lead: tuple[str, ...] = ()  # lines shown first, under the title (the quick-triage verdict)

    @property
    def severity(self) -> Severity:
        return worst(self.findings)


@dataclass(frozen=True, slots=True)
class Tally:
    """How many alerts share one name or one target, how many targets, and how bad the worst is."""

    name: str
    count: int
    targets: int
    worst: Severity


def tally(items: Iterable[AlertView], key: Callable[[AlertView], str]) -> list[Tally]:
    """Counts per key, worst first, then most alerts first, then by name."""
    found: dict[str, tuple[int, set[str], Severity]] = {}
    for item in items:
        name = key(item)
        count, targets, bad = found.get(name, (0, set(), Severity.OK))
        if item.target:
            targets.add(item.target)
        found[name] = (count + 1, targets, max(bad, item.severity))
    tallies = [Tally(n, c, len(t), w) for n, (c, t, w) in found.items()]
    return sorted(tallies, key=lambda t: (-t.worst, -t.count, t.name))
