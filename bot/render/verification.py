"""A verification after resolve as Slack shows it: one reply in the resolved message's thread."""

from __future__ import annotations

from bot.domain.verification import Verdict, VerificationOutcome
from bot.render.blocks import Message, esc, text_message

MARKS = {
    VerificationOutcome.VERIFIED: "✅",
    VerificationOutcome.UNVERIFIED: "⚠️",
    VerificationOutcome.FLAPPING: "🔁",
}


def verification_reply(verdict: Verdict) -> Message:
    """The thread reply of a due verification: its mark and its sentence (it reopens nothing)."""
    return text_message(f"{MARKS[verdict.outcome]} {esc(verdict.sentence)}")
