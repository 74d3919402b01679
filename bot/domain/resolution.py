"""The record of a firing episode once it resolved: how long, who took it, what was done, what it cost.

The on-call loop's events of an episode (a check run from its thread) are kept in the store's `oncall_events`
table, keyed once each; the episode's own record (`EventKind.RESOLVED`, its figures in `detail`) is written
there with its summary, and the digest's on-call figures are read from those. An escalation is the
escalation side's row (`escalations`), shown as an event of kind `ESCALATED`, never stored as one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from bot.domain.acknowledgement import Acknowledgement
from bot.domain.impact import Impact


class EventKind(StrEnum):
    """What an on-call event records."""

    ESCALATED = "escalated"  # the escalation reply was sent (read from the `escalations` table)
    PROBE = "probe"  # *Probe now* pressed in the message; `detail` is its outcome
    PATH_CHECK = "path_check"  # *Path check* pressed in the message; `detail` is its outcome
    RESOLVED = "resolved"  # the episode resolved; `detail` is its record (`EpisodeRecord`) as JSON
    VERIFICATION = "verification"  # probed again after the resolve; `detail` is its `VerificationOutcome`


@dataclass(frozen=True, slots=True)
class OncallEvent:
    """One thing that happened to a firing episode of a group's message (`episode` = its first_firing_at)."""

    key: str  # unique: a redelivered press or a re-run records nothing twice
    channel: str
    group_key: str
    episode: float
    kind: EventKind
    at: float
    actor: str  # who pressed (their Slack name), the escalation's mention, or "" when the bot did it
    detail: str


@dataclass(frozen=True, slots=True)
class SilenceNote:
    """A silence that covered the group during the window (from Alertmanager's list)."""

    created_by: str
    comment: str
    starts_at: datetime
    ends_at: datetime


@dataclass(frozen=True, slots=True)
class Resolution:
    """Everything the resolution summary says about one episode."""

    channel: str
    group_key: str
    targets: tuple[str, ...]
    started_at: datetime
    resolved_at: datetime
    ack: Acknowledgement | None
    silences: tuple[SilenceNote, ...]
    escalations: tuple[OncallEvent, ...]
    checks: tuple[OncallEvent, ...]
    impact: Impact | None
    severity: str | None = None

    @property
    def episode(self) -> float:
        return self.started_at.timestamp()

    @property
    def fired_seconds(self) -> float:
        return max(0.0, (self.resolved_at - self.started_at).total_seconds())

    @property
    def acked_after(self) -> float | None:
        return None if self.ack is None else max(0.0, self.ack.at - self.episode)

    def record(self) -> EpisodeRecord:
        return EpisodeRecord(
            targets=self.targets,
            started_at=self.episode,
            fired_seconds=self.fired_seconds,
            acked_after=self.acked_after,
            acked_by=None if self.ack is None else self.ack.user,
            escalated=bool(self.escalations),
            failed=None if self.impact is None else self.impact.total_failed,
        )


@dataclass(frozen=True, slots=True)
class EpisodeRecord:
    """An episode's figures as the digest reads them back (`detail` of its RESOLVED event)."""

    targets: tuple[str, ...]
    started_at: float
    fired_seconds: float
    acked_after: float | None
    acked_by: str | None
    escalated: bool
    failed: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "targets": list(self.targets),
            "started_at": self.started_at,
            "fired_seconds": self.fired_seconds,
            "acked_after": self.acked_after,
            "acked_by": self.acked_by,
            "escalated": self.escalated,
            "failed": self.failed,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> EpisodeRecord:
        acked = raw.get("acked_after")
        failed = raw.get("failed")
        return cls(
            targets=tuple(str(t) for t in raw.get("targets") or ()),
            started_at=float(raw.get("started_at") or 0.0),
            fired_seconds=float(raw.get("fired_seconds") or 0.0),
            acked_after=None if acked is None else float(acked),
            acked_by=None if raw.get("acked_by") is None else str(raw["acked_by"]),
            escalated=bool(raw.get("escalated")),
            failed=None if failed is None else float(failed),
        )


def of_kinds(events: Sequence[OncallEvent], *kinds: EventKind) -> tuple[OncallEvent, ...]:
    return tuple(sorted((e for e in events if e.kind in kinds), key=lambda e: (e.at, e.key)))
