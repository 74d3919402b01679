"""The digest's on-call figures of a period: how many incidents, how fast they were taken and ended, how
many nobody took or were escalated, how many resolved unverified, the noisiest targets by firing time, and
the silences active now.

Read from the episodes that resolved in the period (their records, `bot.domain.resolution.EpisodeRecord`)
and the groups firing now (their time so far counts toward the noisiest targets, not toward the times to
resolve; their acknowledgement and escalation count as a resolved episode's do). Quantiles interpolate
linearly between the closest ranks (numpy's default), so a median of two is their mean.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.domain.resolution import EpisodeRecord
from bot.domain.verification import VerificationOutcome

NOISIEST = 5


def quantile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile of `values` (None when there are none)."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = q * (len(ordered) - 1)
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True, slots=True)
class OpenEpisode:
    """A group firing now: its targets, since when, how long until someone took it (None: nobody has
    yet), and whether its escalation was sent."""

    targets: tuple[str, ...]
    since: float
    acked_after: float | None = None
    escalated: bool = False


@dataclass(frozen=True, slots=True)
class ActiveSilence:
    """A silence active now, as the digest lists it."""

    created_by: str
    ends_at: datetime
    comment: str
    matchers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OncallFigures:
    """The period's on-call figures."""

    incidents: int
    resolved: int
    open: int
    tta_median: float | None
    tta_p90: float | None
    ttr_median: float | None
    ttr_p90: float | None
    never_acknowledged: int
    escalated: int
    noisiest: tuple[tuple[str, float], ...]  # (target, firing seconds in the period), most first
    silences: tuple[ActiveSilence, ...]
    # Resolved in the period, but probed again `resolution.verify_after` later, still failing.
    unverified: int = 0
    # Firing now and nobody has acknowledged it (`never_acknowledged` counts the resolved ones).
    not_acknowledged_yet: int = 0

    @property
    def empty(self) -> bool:
        return self.incidents == 0 and not self.silences


def figures(
    records: Iterable[EpisodeRecord],
    firing: Iterable[OpenEpisode],
    silences: Iterable[ActiveSilence],
    *,
    since: float,
    now: float,
    verifications: Iterable[VerificationOutcome] = (),
) -> OncallFigures:
    """The figures of the episodes that resolved in [since, now] and of those firing now; `verifications`:
    the outcomes of those verified in the period."""
    done = list(records)
    opened = list(firing)
    # An episode firing now that someone took has its time to acknowledge already.
    acked = [*(r.acked_after for r in done), *(o.acked_after for o in opened)]
    tta = [seconds for seconds in acked if seconds is not None]
    ttr = [r.fired_seconds for r in done]
    noise: dict[str, float] = {}
    for r in done:
        start = max(r.started_at, since)
        seconds = max(0.0, r.started_at + r.fired_seconds - start)
        for target in r.targets:
            noise[target] = noise.get(target, 0.0) + seconds
    for o in opened:
        for target in o.targets:
            noise[target] = noise.get(target, 0.0) + max(0.0, now - max(o.since, since))
    noisiest = sorted(((t, s) for t, s in noise.items() if s > 0), key=lambda ts: (-ts[1], ts[0]))
    return OncallFigures(
        incidents=len(done) + len(opened),
        resolved=len(done),
        open=len(opened),
        tta_median=quantile(tta, 0.5),
        tta_p90=quantile(tta, 0.9),
        ttr_median=quantile(ttr, 0.5),
        ttr_p90=quantile(ttr, 0.9),
        never_acknowledged=sum(1 for r in done if r.acked_after is None),
        escalated=sum(1 for r in done if r.escalated) + sum(1 for o in opened if o.escalated),
        noisiest=tuple(noisiest[:NOISIEST]),
        silences=tuple(sorted(silences, key=lambda s: s.ends_at)),
        unverified=sum(1 for v in verifications if v is VerificationOutcome.UNVERIFIED),
        not_acknowledged_yet=sum(1 for o in opened if o.acked_after is None),
    )
