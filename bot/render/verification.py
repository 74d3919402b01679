"""A verification after resolve as Slack shows it: one reply in the resolved message's thread."""

from __future__ import annotations

from bot.domain.verification import Verdict, VerificationOutcome
from bot.render.acknowledge import line_at
from bot.render.blocks import Message, context, esc, text_message

VERIFIED_BLOCK_ID = "verified"

MARKS = {
    VerificationOutcome.VERIFIED: "✅",
    VerificationOutcome.UNVERIFIED: "⚠️",
    VerificationOutcome.FLAPPING: "🔁",
}


def verification_reply(verdict: Verdict) -> Message:
    """The thread reply of a due verification: its mark and its sentence (it reopens nothing)."""
    return text_message(f"{MARKS[verdict.outcome]} {esc(verdict.sentence)}")


def with_verification_line(content: Message, verdict: Verdict) -> Message:
    """The resolved message with its verification's line under its body (idempotent)."""
    blocks = [b for b in content.blocks if b.get("block_id") != VERIFIED_BLOCK_ID]
    line = f"{MARKS[verdict.outcome]} {esc(verdict.sentence)}"
    blocks.insert(line_at(blocks), {**context([line]), "block_id": VERIFIED_BLOCK_ID})
    return Message(content.text, tuple(blocks))
