"""Escalation: a firing episode that nobody acknowledged or silenced by its deadline gets the on-call
handle mentioned, once. Pure: the deadline, which alerts escalate, and what happens when it is due.

An escalation is one row per firing episode of a message (`episode` = the group's `first_firing_at`), made
when the leader first sees the episode's message posted, due `after` seconds later; it is closed once, with
its outcome, when it is due (or when the episode ended first), so a restart or another leader neither
loses it nor sends it twice.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from enum import StrEnum

from bot.domain.deadline import EpisodeDeadline

SEVERITY = "severity"


class EscalationOutcome(StrEnum):
    """How an escalation's deadline ended."""

    SENT = "sent"  # nobody had it: the on-call handle was mentioned
    ACKNOWLEDGED = "acknowledged"  # someone acknowledged the episode before the deadline
    SILENCED = "silenced"  # a silence covered the message at the deadline
    ENDED = "ended"  # the episode was over first (resolved, fired again, cleaned up, or no longer escalates)


class Escalation(EpisodeDeadline[EscalationOutcome]):
    """One firing episode's escalation deadline, as stored; `outcome` None while it is pending."""

    __slots__ = ()


def deadline(first_seen_posted: float, after: float) -> float:
    """When an episode escalates: `after` seconds after its message was first seen posted."""
    return first_seen_posted + after


def escalates(label_sets: Iterable[Mapping[str, str]], severities: Collection[str]) -> bool:
    """Whether a message about these alerts escalates: one of them has a listed severity."""
    return any(labels.get(SEVERITY) in severities for labels in label_sets)


def outcome_at_deadline(
    *, same_episode: bool, still_escalates: bool, acknowledged: bool, silenced: bool
) -> EscalationOutcome:
    """What a due escalation becomes: sent only while its episode fires on, nobody has it and no silence
    covers it."""
    if not same_episode or not still_escalates:
        return EscalationOutcome.ENDED
    if acknowledged:
        return EscalationOutcome.ACKNOWLEDGED
    if silenced:
        return EscalationOutcome.SILENCED
    return EscalationOutcome.SENT
