"""The escalations table: one deadline per (channel, group, firing episode), pending until it is due
(`escalation.after` after the leader first saw the episode posted), closed once with how it ended. Its
statements are `bot.store.deadlines`', the shape verifications after resolve share."""

from __future__ import annotations

from bot.domain.escalation import Escalation, EscalationOutcome
from bot.store.deadlines import DeadlineTable

ESCALATIONS: DeadlineTable[Escalation, EscalationOutcome] = DeadlineTable(
    "escalations", Escalation, EscalationOutcome
)
