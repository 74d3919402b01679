"""Alerts seen resolved, by fingerprint: what tells a stale copy of a group's state from a new one.

Alertmanager replicas in HA each may deliver a group, and one that missed its peers' gossip can deliver an
older state after a newer one: the group resolved (from replica A), then the same alerts still firing
(from replica B). Prometheus gives an alert that fires again after it resolved a new `startsAt` (its new
activeAt, later than its last endsAt), so a firing alert whose fingerprint was seen resolved with the same
`startsAt` is an older copy of that alert, not a new episode.

One exception bounds the rule in time: Alertmanager ends an alert itself when its updates stop (its
`endsAt` passes: Prometheus down, restarting or cut off for longer than its resend window), and when
Prometheus sends it again it keeps its `startsAt` (still active, or its `for` state restored): a real
re-fire with the same `startsAt`. A stale copy arrives within the replicas' delivery lag (the group
interval plus the peers' waits and retries: minutes), so the same `startsAt` counts as stale only within
`STALE_WINDOW_SECONDS` of the resolve being seen first; later it is applied as the re-fire it then is.
Within the window the same re-fire is possible too: `bot.alerts.stale_check` asks Alertmanager before
anything is skipped, and the window stays the upper bound.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

MAX_SEEN = 200  # fingerprints kept per group, the last seen resolved
STALE_WINDOW_SECONDS = 15 * 60.0


@dataclass(frozen=True, slots=True)
class Ended:
    """One alert as it was seen resolved: its episode's start and end, and when the bot first saw it."""

    starts_at: datetime
    ends_at: datetime | None
    seen_at: float


@dataclass(frozen=True, slots=True)
class SeenResolved:
    """The alerts of a group seen resolved, by fingerprint, the least recently seen first (bounded)."""

    alerts: Mapping[str, Ended] = field(default_factory=dict)

    def record(self, resolved: Iterable[tuple[str, datetime, datetime | None]], now: float) -> SeenResolved:
        """With `(fingerprint, startsAt, endsAt)` seen resolved at `now`: the same episode seen again
        keeps when it was first seen (the stale window runs from there)."""
        found = dict(self.alerts)
        for fingerprint, starts_at, ends_at in resolved:
            known = found.pop(fingerprint, None)
            if known is not None and known.starts_at == starts_at:
                found[fingerprint] = Ended(starts_at, ends_at or known.ends_at, known.seen_at)
            else:
                found[fingerprint] = Ended(starts_at, ends_at, now)
        return SeenResolved(dict(list(found.items())[-MAX_SEEN:]))

    def ended(self, fingerprint: str, starts_at: datetime) -> Ended | None:
        """The alert's episode starting at `starts_at`, when it was seen resolved."""
        known = self.alerts.get(fingerprint)
        return known if known is not None and known.starts_at == starts_at else None

    def stale(self, fingerprint: str, starts_at: datetime, now: float) -> Ended | None:
        """The resolved episode a firing alert is an older copy of, if it is one (see the module)."""
        known = self.ended(fingerprint, starts_at)
        if known is None or now - known.seen_at > STALE_WINDOW_SECONDS:
            return None
        return known
