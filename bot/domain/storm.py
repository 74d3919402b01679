"""A storm as its summary and its table say it: a row per target with its live state, the common cause,
and the summary's counts.

Rows. A storm spans hundreds of targets of one cluster, so a cluster's state is read for every target in one
pass over its snapshot (`live_by_target`): the snapshot's own lookups answer one target at a time and scan
the series for each question. A target's state is its worst group/version's peers, whether every peer cache
is synced, and the p99 of its peer dials (over the window when there is one, else since the proxy started),
judged with the guide's constants: 3 failed dials quarantine a peer, dials time out at 5 s.

The common cause, with its evidence when the live state shows one, is read from the storm's rows (every
target with its live state), failing targets only (firing, not healthy now); a target the proxy reports
nothing for, or whose cluster was not read, proves nothing and is only counted. A cause is stated when every
judged failing target shows it and those make up most of the failing ones:

    one target failing from several clients            -> the target
    one client, every failing target's cache unsynced  -> that client's peer feed (peer_cache_synced 0)
    one client, every failing target's dial p99 >= 4 s -> that client's network path (5 s dial timeout)
    several clients, each with the same one of these   -> the platform, which every client shares

Behind a peer feed, a target whose listed peers none answers (no healthy peer, quarantined or half-open)
is also down on its own (`StormCause.down`): a current peer list would not heal it. A target with no peer
listed at all is what a missing feed does, and is not named.

Without such evidence the storm's shape gives a suspicion only (`evidence` False): many targets of several
clients -> the shared platform path; of one client -> that client; one target -> that target.

The summary holds the alerts counted in it, their running counts (`StormCounts`, kept entry by entry),
every target's live state grouped per client cluster (the rows), and the common cause.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TypeVar

from bot.domain.delta import ProxyDelta
from bot.domain.diagnosis_readings import MIN_OBSERVATIONS
from bot.domain.findings import Severity
from bot.domain.messages import Tally
from bot.domain.quantile import P99, histogram_quantile
from bot.domain.snapshot import (
    DIAL_DURATION,
    PEER_CACHE_SYNCED,
    PEERS,
    Histogram,
    PeerState,
    ProxySnapshot,
    label,
)
from bot.domain.verdict import DIAL_TIMEOUT_SECONDS

# A dial p99 this close to the 5 s dial timeout means dials run into it: the network path, not the target.
SLOW_DIAL_SECONDS = 0.8 * DIAL_TIMEOUT_SECONDS


class TargetState(StrEnum):
    """One target's live state, worst first (the order the summary and the table list them in)."""

    NO_HEALTHY_QUARANTINED = "no_healthy_quarantined"  # no healthy peer, every peer quarantined
    NO_HEALTHY_HALF_OPEN = "no_healthy_half_open"  # no healthy peer, one trial dial pending
    NO_PEERS = "no_peers"  # the list holds no peer at all
    CACHE_UNSYNCED = "cache_unsynced"  # peers counted healthy from a list that is not synced
    SLOW_DIALS = "slow_dials"  # healthy peers, dials near the 5 s timeout
    NO_SERIES = "no_series"  # the proxy reports nothing for the target
    NOT_READ = "not_read"  # the cluster could not be read
    NO_TARGET = "no_target"  # the alert names no target (a control-plane alert: the probe CronJob)
    HEALTHY = "healthy"

    @property
    def rank(self) -> int:
        return _RANK[self]

    @property
    def down(self) -> bool:
        """Peers listed but none answering: the target fails its dials, whatever list they came from."""
        return self in (TargetState.NO_HEALTHY_QUARANTINED, TargetState.NO_HEALTHY_HALF_OPEN)

    @property
    def judged(self) -> bool:
        """Whether the state rests on a reading of the target (else it says nothing about a cause)."""
        return self not in (TargetState.NO_SERIES, TargetState.NOT_READ, TargetState.NO_TARGET)


_RANK = {state: i for i, state in enumerate(TargetState)}


@dataclass(frozen=True, slots=True)
class StormEntry:
    """One alert counted in a storm: what, how bad, where, since when, and when it resolved."""

    alertname: str
    severity: Severity
    group_key: str
    target: str | None = None
    cluster: str | None = None
    since: float | None = None  # the alert's start (wall-clock seconds)
    ended: float | None = None  # when it resolved; None while it fires


@dataclass(frozen=True, slots=True)
class TargetLive:
    """What the client's proxy says of one target right now."""

    state: TargetState
    synced: bool | None = None  # False: some group/version's peer_cache_synced is 0
    dial_p99: float | None = None  # seconds; None without enough dials
    healthy: float = 0.0  # peers of the worst group/version, per state
    quarantined: float = 0.0
    half_open: float = 0.0

    @property
    def slow_dials(self) -> bool:
        return self.dial_p99 is not None and self.dial_p99 >= SLOW_DIAL_SECONDS


NOT_READ = TargetLive(TargetState.NOT_READ)
NO_SERIES = TargetLive(TargetState.NO_SERIES)
NO_TARGET = TargetLive(TargetState.NO_TARGET)


def live_by_target(snapshot: ProxySnapshot, window: ProxyDelta | None = None) -> dict[str, TargetLive]:
    """Every target the snapshot reports, with its state; one pass over the series it needs."""
    peers = _peers_by_target(snapshot)
    synced = _synced_by_target(snapshot)
    recent = snapshot if window is None else window.increase
    dials = _dials_by_target(recent)
    return {t: _judge(peers.get(t, {}), synced.get(t), dials.get(t)) for t in _all_targets(snapshot)}


def _judge(peers: Mapping[str, dict[str, float]], synced: bool | None, dials: Histogram | None) -> TargetLive:
    p99 = _p99(dials)
    # The worst group/version: the worst peer state, then the fewest healthy, then by name.
    judged = sorted(
        (_peer_state(counts).rank, counts.get(PeerState.HEALTHY, 0.0), gv) for gv, counts in peers.items()
    )
    counts = peers[judged[0][2]] if judged else {}
    state = _peer_state(counts) if judged else TargetState.HEALTHY
    if state is TargetState.HEALTHY and synced is False:
        state = TargetState.CACHE_UNSYNCED
    elif state is TargetState.HEALTHY and p99 is not None and p99 >= SLOW_DIAL_SECONDS:
        state = TargetState.SLOW_DIALS
    healthy = counts.get(PeerState.HEALTHY, 0.0)
    quarantined = counts.get(PeerState.QUARANTINED, 0.0)
    half_open = counts.get(PeerState.HALF_OPEN, 0.0)
    return TargetLive(state, synced, p99, healthy, quarantined, half_open)


def _peer_state(counts: Mapping[str, float]) -> TargetState:
    """One group/version's peers: healthy, or why no peer is selectable."""
    healthy = counts.get(PeerState.HEALTHY, 0.0)
    quarantined = counts.get(PeerState.QUARANTINED, 0.0)
    half_open = counts.get(PeerState.HALF_OPEN, 0.0)
    if healthy > 0:
        return TargetState.HEALTHY
    if half_open > 0:
        return TargetState.NO_HEALTHY_HALF_OPEN
    return TargetState.NO_HEALTHY_QUARANTINED if quarantined > 0 else TargetState.NO_PEERS


def _peers_by_target(snapshot: ProxySnapshot) -> dict[str, dict[str, dict[str, float]]]:
    """target -> group/version -> state -> peers."""
    found: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for labels, value in snapshot.samples.get(PEERS, {}).items():
        target, gv, state = label(labels, "target"), label(labels, "group_version"), label(labels, "state")
        if target is not None and gv is not None and state is not None:
            per_state = found[target][gv]
            per_state[state] = per_state.get(state, 0.0) + value
    return found


def _synced_by_target(snapshot: ProxySnapshot) -> dict[str, bool]:
    found: dict[str, bool] = {}
    for labels, value in snapshot.samples.get(PEER_CACHE_SYNCED, {}).items():
        target = label(labels, "target")
        if target is not None:
            found[target] = found.get(target, True) and value == 1.0
    return found


def _dials_by_target(source: ProxySnapshot) -> dict[str, Histogram]:
    found: dict[str, Histogram] = {}
    for labels, histogram in source.histograms.get(DIAL_DURATION, {}).items():
        target = label(labels, "target")
        if target is not None:
            found[target] = histogram if target not in found else found[target].merged(histogram)
    return found


def _all_targets(snapshot: ProxySnapshot) -> set[str]:
    """Targets named by any series: the proxy reports them even without a peer gauge yet."""
    return {
        t
        for family in (*snapshot.samples.values(), *snapshot.histograms.values())
        for labels in family
        if (t := label(labels, "target")) is not None
    }


def _p99(histogram: Histogram | None) -> float | None:
    if histogram is None or histogram.count < MIN_OBSERVATIONS:
        return None
    value = histogram_quantile(P99, histogram.buckets)
    return None if math.isnan(value) else value


# -- the rows --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StormRow:
    """One target of a storm: where, which alerts, its state now, since when."""

    cluster: str | None
    target: str | None
    alerts: tuple[tuple[str, int], ...]  # alert name and how many of its alerts fire (or fired)
    worst: Severity
    since: float | None  # the earliest alert's start (wall-clock seconds)
    live: TargetLive
    resolved: bool = False  # every alert of the target resolved
    unread: str | None = None  # why the cluster was not read

    @property
    def failing(self) -> bool:
        return not self.resolved and self.live.state is not TargetState.HEALTHY


@dataclass(frozen=True, slots=True)
class TargetsRead:
    """What the storm desk got of one cluster for its table: every target's state, or why none."""

    targets: Mapping[str, TargetLive] | None
    unavailable: str | None = None


def storm_rows(entries: Iterable[StormEntry], reads: Mapping[str, TargetsRead]) -> tuple[StormRow, ...]:
    """One row per (cluster, target) of the entries, worst state first within each cluster."""
    by_place: dict[tuple[str | None, str | None], list[StormEntry]] = defaultdict(list)
    for entry in entries:
        by_place[(entry.cluster, entry.target)].append(entry)
    rows = [_row(cluster, target, found, reads) for (cluster, target), found in by_place.items()]
    return tuple(sorted(rows, key=_row_order))


def _row(
    cluster: str | None, target: str | None, entries: list[StormEntry], reads: Mapping[str, TargetsRead]
) -> StormRow:
    names: dict[str, int] = {}
    for e in sorted(entries, key=lambda e: (-e.severity, e.alertname)):
        names[e.alertname] = names.get(e.alertname, 0) + 1
    starts = [e.since for e in entries if e.since is not None]
    read = reads.get(cluster) if cluster is not None else None
    unread = None
    if target is None:
        live = NO_TARGET
    elif read is None or read.targets is None:
        live = NOT_READ
        unread = "no configured cluster" if cluster is None else (read and read.unavailable) or "not read"
    else:
        live = read.targets.get(target, NO_SERIES)
    return StormRow(
        cluster=cluster,
        target=target,
        alerts=tuple(names.items()),
        worst=max(e.severity for e in entries),
        since=min(starts, default=None),
        live=live,
        resolved=all(e.ended is not None for e in entries),
        unread=unread,
    )


def _row_order(row: StormRow) -> tuple[str, bool, int, str]:
    return (row.cluster or "", row.resolved, row.live.state.rank, row.target or "")


class CommonCause(StrEnum):
    """What many alerts at once most likely share (the relay makes the platform a shared failure domain)."""

    PEER_FEED = "peer_feed"  # one client's peer list from the platform
    NETWORK_PATH = "network_path"  # one client's network path to its targets
    PLATFORM_PATH = "platform_path"  # many targets across several clients
    CLIENT_CLUSTER = "client_cluster"  # many targets of one client
    ONE_TARGET = "one_target"  # many alerts, one target
    HEALTHY_NOW = "healthy_now"  # every target still firing reads healthy now
    UNCLEAR = "unclear"


@dataclass(frozen=True, slots=True)
class StormCause:
    """The storm's common cause, and what it rests on."""

    kind: CommonCause
    evidence: bool = False  # shown by the live state (else suspected from the storm's shape)
    cluster: str | None = None  # the client it is about
    target: str | None = None  # the target it is about
    failing: int = 0  # failing targets it covers
    judged: int = 0  # of them, the ones with a reading (the rest: no series, not read)
    clusters: int = 0  # clients it covers
    via: CommonCause | None = None  # for the platform: what every client showed
    dial_p99: tuple[float, float] | None = None  # lowest and highest dial p99 behind a network path cause
    # Behind a peer feed cause: the targets also down on their own (no listed peer answers), by name.
    down: tuple[str, ...] = ()


def shape_cause(targets: int, clusters: int, alerts: int) -> CommonCause:
    """A suspicion from the storm's shape alone (how many targets, clients and alerts)."""
    if targets >= 3 and clusters >= 2:
        return CommonCause.PLATFORM_PATH
    if targets >= 3 and clusters == 1:
        return CommonCause.CLIENT_CLUSTER
    if targets == 1 and alerts >= 2:
        return CommonCause.ONE_TARGET
    return CommonCause.UNCLEAR


def judge_cause(rows: Sequence[StormRow], shape: CommonCause) -> StormCause:
    """The cause the rows show, else the storm's `shape` as a suspicion."""
    failing = [r for r in rows if r.failing]
    if not failing:
        firing = any(not r.resolved for r in rows)
        return StormCause(CommonCause.HEALTHY_NOW if firing else shape)
    targets = {r.target for r in failing}
    clusters = {r.cluster for r in failing}
    if len(targets) == 1 and len(clusters) >= 2 and None not in targets:
        return _one_target(failing)
    per_cluster = [cluster_cause(group) for group in _by_cluster(failing).values()]
    if len(per_cluster) == 1 and per_cluster[0] is not None:
        return per_cluster[0]
    kinds = {c.kind if c is not None else None for c in per_cluster}
    if len(per_cluster) >= 2 and len(kinds) == 1 and None not in kinds:
        found = [c for c in per_cluster if c is not None]
        return StormCause(
            CommonCause.PLATFORM_PATH,
            evidence=True,
            failing=sum(c.failing for c in found),
            judged=sum(c.judged for c in found),
            clusters=len(found),
            via=found[0].kind,
            down=tuple(sorted({t for c in found for t in c.down})),
        )
    return StormCause(shape, failing=len(failing), clusters=len(clusters))


def cluster_cause(failing: Sequence[StormRow]) -> StormCause | None:
    """The live cause behind one client's failing targets, when they all show the same one."""
    judged = [r for r in failing if r.live.state.judged]
    if not judged or 2 * len(judged) <= len(failing):
        return None
    cluster = failing[0].cluster
    if all(r.live.synced is False for r in judged):
        down = tuple(sorted({r.target for r in judged if r.live.state.down and r.target is not None}))
        return StormCause(CommonCause.PEER_FEED, True, cluster, None, len(failing), len(judged), 1, down=down)
    if all(r.live.slow_dials for r in judged):
        dials = [r.live.dial_p99 for r in judged if r.live.dial_p99 is not None]
        return StormCause(
            CommonCause.NETWORK_PATH,
            True,
            cluster,
            None,
            len(failing),
            len(judged),
            1,
            dial_p99=(min(dials), max(dials)),
        )
    return None


def _one_target(failing: Sequence[StormRow]) -> StormCause:
    judged = sum(1 for r in failing if r.live.state.judged)
    clusters = len({r.cluster for r in failing})
    target = failing[0].target
    return StormCause(CommonCause.ONE_TARGET, judged > 0, None, target, len(failing), judged, clusters)


def _by_cluster(rows: Sequence[StormRow]) -> dict[str | None, list[StormRow]]:
    found: dict[str | None, list[StormRow]] = defaultdict(list)
    for row in rows:
        found[row.cluster].append(row)
    return found


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
