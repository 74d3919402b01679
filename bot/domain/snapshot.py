"""The proxy's own view at one instant: every `vcluster_proxy_*` series read from `/metrics/syncer`.

Storage is generic (family -> label set -> value) so that nothing on the page is lost and a parse can be
compared series for series with another parser; the accessors give the typed, domain-shaped view.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

# A label set, sorted by label name. Histogram keys never include `le`.
Labels = tuple[tuple[str, str], ...]

PREFIX = "vcluster_proxy_"

# Gauges.
PEERS = "vcluster_proxy_peers"
PEER_CACHE_SYNCED = "vcluster_proxy_peer_cache_synced"
PEER_LIST_AGE = "vcluster_proxy_peer_list_age_seconds"
INFLIGHT = "vcluster_proxy_inflight_requests"
ACTIVE_WATCHES = "vcluster_proxy_active_watches"
# Counters (sample names, with the `_total` suffix).
REQUESTS = "vcluster_proxy_request_total"
TERMINATIONS = "vcluster_proxy_request_terminations_total"
DISCOVERY_FALLBACKS = "vcluster_proxy_discovery_fallbacks_total"
QUARANTINES = "vcluster_proxy_peer_quarantines_total"
ALL_QUARANTINED = "vcluster_proxy_target_all_peers_quarantined_total"
RECOVERIES = "vcluster_proxy_peer_recoveries_total"
DIAL_FAILURES = "vcluster_proxy_peer_dial_failures_total"
WATCH_EVENTS = "vcluster_proxy_watch_events_total"
# Histograms (family names, without `_bucket`/`_sum`/`_count`).
REQUEST_DURATION = "vcluster_proxy_request_duration_seconds"
DIAL_DURATION = "vcluster_proxy_peer_dial_duration_seconds"

HISTOGRAMS = frozenset({REQUEST_DURATION, DIAL_DURATION})


def is_counter(sample_name: str) -> bool:
    """Counters are the `_total` samples (the text format's convention, and the guide's names)."""
    return sample_name.endswith("_total")


class PeerState(StrEnum):
    """The three states `vcluster_proxy_peers` always reports."""

    HEALTHY = "healthy"
    QUARANTINED = "quarantined"
    HALF_OPEN = "half_open"


def make_labels(pairs: Iterable[tuple[str, str]]) -> Labels:
    """A canonical (sorted) label set."""
    return tuple(sorted(pairs))


def label(labels: Labels, name: str) -> str | None:
    """The value of one label, or None when absent."""
    for key, value in labels:
        if key == name:
            return value
    return None


def matches(labels: Labels, match: Mapping[str, str]) -> bool:
    """Whether every `name=value` of `match` is in `labels`."""
    return all(label(labels, k) == v for k, v in match.items())


@dataclass(frozen=True, slots=True)
class Bucket:
    """One cumulative histogram bucket: observations <= `le`."""

    le: float
    count: float


@dataclass(frozen=True, slots=True)
class Histogram:
    """A cumulative histogram, buckets sorted by upper bound (`+Inf` last when present)."""

    buckets: tuple[Bucket, ...]
    count: float
    sum: float

    def merged(self, other: Histogram) -> Histogram:
        """Sum of two histograms; buckets are matched by upper bound."""
        by_le: dict[float, float] = {}
        for b in (*self.buckets, *other.buckets):
            by_le[b.le] = by_le.get(b.le, 0.0) + b.count
        buckets = tuple(Bucket(le, c) for le, c in sorted(by_le.items()))
        return Histogram(buckets, self.count + other.count, self.sum + other.sum)

    @property
    def has_inf(self) -> bool:
        return bool(self.buckets) and math.isinf(self.buckets[-1].le)


@dataclass(frozen=True, slots=True)
class PeerCounts:
    """Peers of one target and group/version, per state."""

    healthy: float
    quarantined: float
    half_open: float

    @property
    def total(self) -> float:
        return self.healthy + self.quarantined + self.half_open


def _freeze_samples(
    samples: Mapping[str, Mapping[Labels, float]],
) -> Mapping[str, Mapping[Labels, float]]:
    return MappingProxyType({k: MappingProxyType(dict(v)) for k, v in samples.items()})


def _freeze_histograms(
    histograms: Mapping[str, Mapping[Labels, Histogram]],
) -> Mapping[str, Mapping[Labels, Histogram]]:
    return MappingProxyType({k: MappingProxyType(dict(v)) for k, v in histograms.items()})


@dataclass(frozen=True)
class ProxySnapshot:
    """Every `vcluster_proxy_*` series of one page.

    `samples`: sample name (as on the page, e.g. `vcluster_proxy_request_total`) -> labels -> value,
    for counters, gauges and any other non-histogram sample. `histograms`: family name -> labels ->
    histogram. A counter that is absent has never counted: read it as zero (the guide).
    """

    samples: Mapping[str, Mapping[Labels, float]] = field(default_factory=dict)
    histograms: Mapping[str, Mapping[Labels, Histogram]] = field(default_factory=dict)

    # Lookups are answered from an index on (target, group_version) and remembered: a snapshot never
    # changes, and the diagnosis asks the same questions of thousands of series (a scan per question
    # was the cost of a fleet digest).
    _index: dict[str, dict[tuple[str | None, str | None], list[tuple[Labels, dict[str, str], float]]]] = (
        field(default_factory=dict, init=False, repr=False, compare=False)
    )
    _answers: dict[tuple[str, tuple[tuple[str, str], ...]], dict[Labels, float]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    _merged: dict[tuple[str, tuple[tuple[str, str], ...]], Histogram | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    # The index's keys per target (a question naming one target reads its keys only, not every target's:
    # a storm across a client's thousands of targets asks once per alert) and `targets()`, remembered.
    _by_target: dict[str, dict[str | None, list[tuple[str | None, str | None]]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _targets: list[str] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "samples", _freeze_samples(self.samples))
        object.__setattr__(self, "histograms", _freeze_histograms(self.histograms))

    # -- generic access ---------------------------------------------------------------------------

    def series(self, name: str, **match: str) -> dict[Labels, float]:
        """Every series of one sample name whose labels include `match` (a new dict: callers may keep it)."""
        return dict(self._lookup(name, match))

    def _lookup(self, name: str, match: dict[str, str]) -> dict[Labels, float]:
        """The remembered answer (shared: never modify it)."""
        key = (name, tuple(sorted(match.items())))
        found = self._answers.get(key)
        if found is None:
            found = self._find(name, match)
            self._answers[key] = found
        return found

    def _find(self, name: str, match: dict[str, str]) -> dict[Labels, float]:
        index = self._indexed(name)
        target, gv = match.pop("target", None), match.pop("group_version", None)
        keys = index.keys() if target is None else self._by_target[name].get(target, [])
        buckets = [
            index[(t, g)] for t, g in keys if (target is None or t == target) and (gv is None or g == gv)
        ]
        return {
            labels: value
            for rows in buckets
            for labels, named, value in rows
            if all(named.get(k) == v for k, v in match.items())
        }

    def _indexed(
        self, name: str
    ) -> dict[tuple[str | None, str | None], list[tuple[Labels, dict[str, str], float]]]:
        index = self._index.get(name)
        if index is None:
            index = {}
            for labels, value in self.samples.get(name, {}).items():
                named = dict(labels)
                key = (named.get("target"), named.get("group_version"))
                index.setdefault(key, []).append((labels, named, value))
            by_target: dict[str | None, list[tuple[str | None, str | None]]] = {}
            for key in index:
                by_target.setdefault(key[0], []).append(key)
            self._index[name], self._by_target[name] = index, by_target
        return index

    def value(self, name: str, **match: str) -> float:
        """The sum over matching series; 0.0 when none (absent counter = zero)."""
        return math.fsum(self._lookup(name, match).values())

    def breakdown(self, name: str, by: str, **match: str) -> dict[str, float]:
        """Sum of matching series grouped by one label (e.g. `reason`), largest first."""
        out: dict[str, float] = {}
        for labels, v in self._lookup(name, match).items():
            key = label(labels, by) or ""
            out[key] = out.get(key, 0.0) + v
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))

    def histogram(self, name: str, **match: str) -> Histogram | None:
        """All matching series of a histogram family merged into one; None when there is none."""
        key = (name, tuple(sorted(match.items())))
        if key not in self._merged:
            merged: Histogram | None = None
            for labels, h in self.histograms.get(name, {}).items():
                if matches(labels, match):
                    merged = h if merged is None else merged.merged(h)
            self._merged[key] = merged
        return self._merged[key]

    # -- the domain view --------------------------------------------------------------------------

    def targets(self) -> list[str]:
        """Every target named by any series, sorted (a new list: callers may keep it)."""
        if not self._targets:
            found: set[str] = set()
            for family in (*self.samples.values(), *self.histograms.values()):
                for labels in family:
                    t = label(labels, "target")
                    if t is not None:
                        found.add(t)
            self._targets.extend(sorted(found))
        return list(self._targets)

    def group_versions(self, target: str) -> list[str]:
        """The group/versions the proxy keeps a peer cache for, for one target."""
        found = {
            gv
            for name in (PEERS, PEER_CACHE_SYNCED, PEER_LIST_AGE)
            for labels in self.series(name, target=target)
            if (gv := label(labels, "group_version")) is not None
        }
        return sorted(found)

    def peers(self, target: str, group_version: str) -> PeerCounts | None:
        """Peer counts per state, or None when the proxy reports no peer gauge for this pair."""
        by_state = self.breakdown(PEERS, "state", target=target, group_version=group_version)
        if not by_state:
            return None
        return PeerCounts(
            healthy=by_state.get(PeerState.HEALTHY, 0.0),
            quarantined=by_state.get(PeerState.QUARANTINED, 0.0),
            half_open=by_state.get(PeerState.HALF_OPEN, 0.0),
        )

    def cache_synced(self, target: str, group_version: str) -> bool | None:
        found = self.series(PEER_CACHE_SYNCED, target=target, group_version=group_version)
        return None if not found else all(v == 1.0 for v in found.values())

    def peer_list_age(self, target: str, group_version: str) -> float | None:
        """Seconds since the last peer list; None before the first one. Not a staleness signal."""
        found = self.series(PEER_LIST_AGE, target=target, group_version=group_version)
        return max(found.values()) if found else None
