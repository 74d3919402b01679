"""What a firing window cost: requests that failed, by status and reason, and the peak of quarantined
peers and unsynced peer caches of the group's targets.

Two sources, said apart in the summary: Prometheus' `increase()` over the window (`bot.prom_queries`), or
the bot's own readings of `/metrics/syncer` taken with each notification of the group (`ImpactTally`).
The readings follow `increase()` on resets (a proxy pod restarted): a counter that went down between two
readings counted from zero, so its whole current value is the increase (`bot.domain.delta`). A series first
seen after the first reading counted its first events in between (absent = zero); the first reading of a
source is the baseline and counts nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from bot.domain.delta import counter_increase
from bot.domain.snapshot import PEER_CACHE_SYNCED, PEERS, REQUESTS, PeerState, ProxySnapshot, label

# A status from here up is a failed request (the proxy's own 501/503s and the target's 4xx/5xx alike).
FAILED_FROM = 400
# The labels that make one request series of a source: a reset is judged per series.
SERIES_LABELS = ("target", "group_version", "verb", "code", "reason")
SEP = "|"


class ImpactSource(StrEnum):
    """Where an impact's counts come from."""

    PROMETHEUS = "prometheus"
    READINGS = "readings"


def failed(code: str) -> bool:
    return code.isdigit() and int(code) >= FAILED_FROM


@dataclass(frozen=True, slots=True)
class ImpactSample:
    """One live reading of a group's targets from one source: its failed-request series, its peers now."""

    source: str
    at: float
    counters: Mapping[str, float]  # series key (SERIES_LABELS joined by SEP) -> value
    quarantined: float
    unsynced: int


def sample(source: str, at: float, snapshot: ProxySnapshot, targets: Iterable[str]) -> ImpactSample:
    """The failed-request counters and peer gauges of `targets` in one snapshot."""
    wanted = sorted(set(targets))
    counters: dict[str, float] = {}
    # By target: the snapshot's lookups are indexed and remembered (a storm asks of one page per group).
    for target in wanted:
        for labels, value in snapshot.series(REQUESTS, target=target).items():
            parts = [label(labels, name) or "" for name in SERIES_LABELS]
            if failed(parts[3]):
                counters[SEP.join(parts)] = value
    quarantined = sum(
        v for t in wanted for v in snapshot.series(PEERS, target=t, state=PeerState.QUARANTINED).values()
    )
    unsynced = sum(1 for t in wanted for v in snapshot.series(PEER_CACHE_SYNCED, target=t).values() if v != 1)
    return ImpactSample(source, at, counters, quarantined, unsynced)


@dataclass(frozen=True, slots=True)
class Impact:
    """A window's cost as the summary shows it."""

    source: ImpactSource
    failed: Mapping[tuple[str, str], float]  # (code, reason) -> requests
    peak_quarantined: float | None
    peak_unsynced: int | None
    resets: int = 0  # counters found reset between readings (the readings source)
    readings: int = 0
    fallback: str | None = None  # why Prometheus was not used, when it was configured

    @property
    def total_failed(self) -> float:
        return sum(self.failed.values())


@dataclass(frozen=True, slots=True)
class ImpactTally:
    """The bot's own readings of a firing episode folded together: kept with the group between
    notifications (`GroupFacts.impact`), started afresh with each episode."""

    last: Mapping[str, float] = field(default_factory=dict)  # source + SEP + series key -> value
    sources: frozenset[str] = frozenset()
    failed: Mapping[tuple[str, str], float] = field(default_factory=dict)
    resets: int = 0
    peak_quarantined: float = 0.0
    peak_unsynced: int = 0
    readings: int = 0

    def fold(self, s: ImpactSample) -> ImpactTally:
        """The tally with one more reading."""
        last, counted, resets = dict(self.last), dict(self.failed), self.resets
        baseline = s.source not in self.sources
        for series, value in s.counters.items():
            key = s.source + SEP + series
            increase, reset = counter_increase(last.get(key), value)
            last[key] = value
            if baseline:
                continue
            resets += reset
            code, reason = series.split(SEP)[3:5]
            counted[(code, reason)] = counted.get((code, reason), 0.0) + increase
        return ImpactTally(
            last=last,
            sources=self.sources | {s.source},
            failed={k: v for k, v in counted.items() if v > 0},
            resets=resets,
            peak_quarantined=max(self.peak_quarantined, s.quarantined),
            peak_unsynced=max(self.peak_unsynced, s.unsynced),
            readings=self.readings + 1,
        )

    def impact(self, fallback: str | None = None) -> Impact:
        return Impact(
            ImpactSource.READINGS,
            dict(self.failed),
            self.peak_quarantined,
            self.peak_unsynced,
            self.resets,
            self.readings,
            fallback,
        )
