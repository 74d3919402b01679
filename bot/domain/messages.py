"""Message content, neutral: what an alert group, a change, a command answer or a storm says.

These are plain data for the renderers (`bot/render/slack.py`, `bot/render/terminal.py`); nothing here
knows Block Kit. Label values in here come from outside (Alertmanager, users) and are untrusted: the
renderers escape them, and `ActionRef` carries only validated names to the buttons.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Protocol, TypeVar

from bot.domain.diagnosis import AlertDiagnosis
from bot.domain.findings import Finding, Severity, worst
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

    @property
    def firing(self) -> tuple[AlertView, ...]:
        return tuple(a for a in self.alerts if a.status is GroupStatus.FIRING)

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

    @property
    def meaningful(self) -> bool:
        return bool(self.new or self.resolved)


@dataclass(frozen=True)
class FindingsReport:
    """A command's answer (status, peers, reasons): findings about one or more targets."""

    title: str
    findings: tuple[Finding, ...]
    live: LiveRead
    cluster: str | None = None
    notes: tuple[str, ...] = ()  # extra lines in the domain's words, e.g. a reason breakdown

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


class CommonCause(StrEnum):
    """What many alerts at once most likely share (the relay makes the platform a shared failure domain)."""

    PLATFORM_PATH = "platform_path"  # many targets across several clients
    CLIENT_CLUSTER = "client_cluster"  # many targets of one client
    ONE_TARGET = "one_target"  # many alerts, one target
    UNCLEAR = "unclear"


@dataclass(frozen=True, slots=True)
class StormEntry:
    """One alert counted in a storm."""

    alertname: str
    severity: Severity
    group_key: str
    target: str | None = None
    cluster: str | None = None


_K = TypeVar("_K", bound=Hashable)


class _Key:
    """Running counts of one alert name or one target: alerts, alerts per target, alerts per severity."""

    __slots__ = ("count", "per_severity", "per_target")

    def __init__(self) -> None:
        self.count = 0
        self.per_target: Counter[str] = Counter()
        self.per_severity: Counter[Severity] = Counter()

    def change(self, entry: StormEntry, by: int) -> None:
        self.count += by
        _bump(self.per_severity, entry.severity, by)
        if entry.target:
            _bump(self.per_target, entry.target, by)

    def tally(self, name: str) -> Tally:
        return Tally(name, self.count, len(self.per_target), max(self.per_severity, default=Severity.OK))


def _bump(counter: Counter[_K], key: _K, by: int) -> None:
    counter[key] += by
    if counter[key] <= 0:
        del counter[key]


def _worst_first(t: Tally) -> tuple[int, int, str]:
    return (-t.worst, -t.count, t.name)


class StormCounts:
    """A storm's counts kept up to date entry by entry, so a big storm is never recounted from scratch."""

    def __init__(self, entries: Iterable[StormEntry] = ()) -> None:
        self.alerts = 0
        self._alerts: dict[str, _Key] = {}
        self._targets: dict[str, _Key] = {}
        self._groups: Counter[str] = Counter()
        self._clusters: Counter[str] = Counter()
        for entry in entries:
            self.add(entry)

    def add(self, entry: StormEntry) -> None:
        self._change(entry, 1)

    def remove(self, entry: StormEntry) -> None:
        """Take back an entry added before (a group's entries are replaced when it changes)."""
        self._change(entry, -1)

    @property
    def groups(self) -> int:
        return len(self._groups)

    @property
    def targets(self) -> int:
        return len(self._targets)

    @property
    def clusters(self) -> int:
        return len(self._clusters)

    @property
    def alert_names(self) -> int:
        return len(self._alerts)

    def by_alert(self, limit: int | None = None) -> list[Tally]:
        """Counts per alert name, worst first, then most alerts first, then by name; the first `limit`."""
        return _ranked(self._alerts, limit)

    def by_target(self, limit: int | None = None) -> list[Tally]:
        return _ranked(self._targets, limit)

    def common_cause(self) -> CommonCause:
        return _common_cause(self.targets, self.clusters, self.alerts)

    def _change(self, entry: StormEntry, by: int) -> None:
        self.alerts += by
        _bump(self._groups, entry.group_key, by)
        if entry.cluster:
            _bump(self._clusters, entry.cluster, by)
        _change_key(self._alerts, entry.alertname, entry, by)
        if entry.target:
            _change_key(self._targets, entry.target, entry, by)


def _change_key(keys: dict[str, _Key], name: str, entry: StormEntry, by: int) -> None:
    key = keys.get(name)
    if key is None:
        key = keys[name] = _Key()
    key.change(entry, by)
    if key.count <= 0:
        del keys[name]


def _ranked(keys: Mapping[str, _Key], limit: int | None) -> list[Tally]:
    tallies = (k.tally(name) for name, k in keys.items())
    if limit is None:
        return sorted(tallies, key=_worst_first)
    # Only the lines that will be shown are ordered: a storm over 500 targets shows a dozen.
    return heapq.nsmallest(limit, tallies, key=_worst_first)


@dataclass(frozen=True)
class StormView:
    """A storm summary: many new groups in one channel in a short time, summarised in one message.

    Built from `entries`, or from running `counts` that the storm desk keeps (then `entries` stays empty).
    """

    entries: tuple[StormEntry, ...]
    started_at: datetime
    ended_at: datetime | None = None
    counts: StormCounts = field(default_factory=StormCounts, compare=False)

    def __post_init__(self) -> None:
        if self.entries and self.counts.alerts == 0:
            object.__setattr__(self, "counts", StormCounts(self.entries))

    @classmethod
    def of(cls, counts: StormCounts, started_at: datetime, ended_at: datetime | None = None) -> StormView:
        return cls((), started_at, ended_at, counts)

    @property
    def alerts(self) -> int:
        return self.counts.alerts

    @property
    def groups(self) -> int:
        return self.counts.groups

    @property
    def targets(self) -> int:
        return self.counts.targets

    @property
    def clusters(self) -> int:
        return self.counts.clusters

    def by_alert(self, limit: int | None = None) -> list[Tally]:
        return self.counts.by_alert(limit)

    def by_target(self, limit: int | None = None) -> list[Tally]:
        return self.counts.by_target(limit)

    def common_cause(self) -> CommonCause:
        return self.counts.common_cause()


class _Counted(Protocol):
    """What `tally` reads; AlertView and StormEntry both have it."""

    @property
    def severity(self) -> Severity: ...

    @property
    def target(self) -> str | None: ...


_C = TypeVar("_C", bound=_Counted)


def tally(items: Iterable[_C], key: Callable[[_C], str]) -> list[Tally]:
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


def likely_common_cause(entries: Iterable[StormEntry]) -> CommonCause:
    """The guide's reading of a storm: several clients failing at once share the platform path."""
    items = list(entries)
    targets = {e.target for e in items if e.target}
    clusters = {e.cluster for e in items if e.cluster}
    return _common_cause(len(targets), len(clusters), len(items))


def _common_cause(targets: int, clusters: int, alerts: int) -> CommonCause:
    if targets >= 3 and clusters >= 2:
        return CommonCause.PLATFORM_PATH
    if targets >= 3 and clusters == 1:
        return CommonCause.CLIENT_CLUSTER
    if targets == 1 and alerts >= 2:
        return CommonCause.ONE_TARGET
    return CommonCause.UNCLEAR
