"""What a storm summary says: the alerts counted in it, their running counts, every target's live state
grouped per client cluster (`bot.domain.storm_targets`), and the common cause (`bot.domain.storm_cause`)."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from bot.domain.findings import Severity
from bot.domain.messages import Tally
from bot.domain.storm_cause import CommonCause, StormCause, cluster_cause, judge_cause, shape_cause
from bot.domain.storm_targets import StormEntry, StormRow, TargetState

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
        self.firing = 0
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

    def shape_cause(self) -> CommonCause:
        """The cause suspected from the storm's shape alone (no live state)."""
        return shape_cause(self.targets, self.clusters, self.alerts)

    def _change(self, entry: StormEntry, by: int) -> None:
        self.alerts += by
        if entry.ended is None:
            self.firing += by
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


@dataclass(frozen=True, slots=True)
class ClusterStates:
    """One client cluster's targets in a storm: how many share each live state, and its own cause."""

    cluster: str | None
    targets: int  # the rows naming a target (a control-plane alert has a row without one)
    states: tuple[tuple[TargetState, int], ...]  # firing rows per state, worst first
    resolved: int
    cause: StormCause | None


@dataclass(frozen=True)
class StormView:
    """A storm summary: many new groups in one channel in a short time, summarised in one message.

    Built from `entries`, or from running `counts` that the storm desk keeps (then `entries` stays empty);
    `rows` are every target with its live state when the desk read them (else the cause is a suspicion).
    """

    entries: tuple[StormEntry, ...]
    started_at: datetime
    ended_at: datetime | None = None
    counts: StormCounts = field(default_factory=StormCounts, compare=False)
    rows: tuple[StormRow, ...] = ()

    def __post_init__(self) -> None:
        if self.entries and self.counts.alerts == 0:
            object.__setattr__(self, "counts", StormCounts(self.entries))

    @classmethod
    def of(
        cls,
        counts: StormCounts,
        started_at: datetime,
        ended_at: datetime | None = None,
        rows: tuple[StormRow, ...] = (),
    ) -> StormView:
        return cls((), started_at, ended_at, counts, rows)

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

    @property
    def resolved(self) -> bool:
        """Every alert of the storm resolved."""
        return self.counts.alerts > 0 and self.counts.firing == 0

    def by_alert(self, limit: int | None = None) -> list[Tally]:
        return self.counts.by_alert(limit)

    def by_target(self, limit: int | None = None) -> list[Tally]:
        return self.counts.by_target(limit)

    def common_cause(self) -> StormCause:
        """The cause the live state shows, else the one the storm's shape suggests."""
        shape = self.counts.shape_cause()
        return judge_cause(self.rows, shape) if self.rows else StormCause(shape)

    def by_cluster(self) -> list[ClusterStates]:
        """Each client cluster's targets grouped by live state (from the rows), clusters by name."""
        per: dict[str | None, list[StormRow]] = {}
        for row in self.rows:
            per.setdefault(row.cluster, []).append(row)
        return [_cluster_states(cluster, rows) for cluster, rows in sorted(per.items(), key=_by_name)]

    def signature(self) -> tuple[object, ...]:
        """What the summary shows, without the clock: equal signatures, the same message."""
        counts = self.counts
        tallies = tuple(self.by_alert(SIGNATURE_TALLIES))
        shape = (counts.alerts, counts.firing, counts.groups, counts.targets, counts.clusters)
        return (shape, tallies, tuple(self.by_cluster()), self.common_cause(), self.ended_at)


# The alert tallies a summary shows (and its signature compares).
SIGNATURE_TALLIES = 5


def _by_name(item: tuple[str | None, list[StormRow]]) -> str:
    return item[0] or ""


def _cluster_states(cluster: str | None, rows: list[StormRow]) -> ClusterStates:
    firing = [r for r in rows if not r.resolved]
    counted: dict[TargetState, int] = {}
    for row in firing:
        counted[row.live.state] = counted.get(row.live.state, 0) + 1
    states = tuple(sorted(counted.items(), key=lambda kv: kv[0].rank))
    failing = [r for r in firing if r.failing]
    cause = cluster_cause(failing) if failing else None
    targets = sum(1 for r in rows if r.target is not None)
    return ClusterStates(cluster, targets, states, len(rows) - len(firing), cause)
