"""The verifications table: one per (channel, group, resolved episode), pending until it is due
(`resolution.verify_after` after the leader first saw the resolve), closed once with its outcome. Its
statements are `bot.store.deadlines`', the shape escalations share."""

from __future__ import annotations

from bot.domain.verification import Verification, VerificationOutcome
from bot.store.deadlines import DeadlineTable

VERIFICATIONS: DeadlineTable[Verification, VerificationOutcome] = DeadlineTable(
    "verifications", Verification, VerificationOutcome
)
