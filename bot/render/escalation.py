"""An escalation as Slack shows it: one thread reply, broadcast to the channel, mentioning the on-call."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from bot.render.blocks import Message, fmt_span, text_message


def escalation_reply(mention: str, after: float, at: float) -> Message:
    """The reply of an escalation sent at `at`: whom it pages and why (`mention` is validated config)."""
    clock = datetime.fromtimestamp(at, UTC).strftime("%H:%M UTC")
    text = (
        f"🚨 Escalated to {mention} at {clock}: nobody acknowledged or silenced this alert within "
        f"{fmt_span(after)} of its post. Press *Acknowledge* if you have it."
    )
    return replace(text_message(text), broadcast=True)
