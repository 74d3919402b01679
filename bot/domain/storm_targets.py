"""Every target of a storm with its live state: one row each, as the storm's table and summary show them.

A storm spans hundreds of targets of one cluster, so a cluster's state is read for every target in one
pass over its snapshot (`live_by_target`): the snapshot's own lookups answer one target at a time and
scan the series for each question. A target's state is its worst group/version's peers, whether every
peer cache is synced, and the p99 of its peer dials (over the window when there is one, else since the
proxy started), judged with the guide's constants: 3 failed dials quarantine a peer, dials time out at 5 s.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from bot.domain.delta import ProxyDelta
from bot.domain.diagnosis_readings import MIN_OBSERVATIONS
from bot.domain.findings import Severity
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
