"""A silence as an alert message shows it: the 🔕 line, and *Silence…* turned into *Expire silence*.

Laid over a message as it is sent (by the delivery worker, from the silences Alertmanager listed last:
`bot.alerts.silences`), like the acknowledgement (`bot.render.acknowledge`): idempotent, and undone
when the silence is gone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.domain.silences import Silence
from bot.render.acknowledge import laid_over, mention
from bot.render.blocks import Message, esc, one_line, truncate
from bot.render.slack import ACTION_EXPIRE_SILENCE, ACTION_SILENCE, ACTIONS_BLOCK_ID

SILENCE_BLOCK_ID = "proxy_silence_line"
SILENCE_LABEL, EXPIRE_LABEL = "Silence…", "Expire silence"
MAX_COMMENT_SHOWN = 200
# proxybot writes who made its silences as "name (Slack U…)": shown as a mention, for those it made only.
_SLACK_MAKER = re.compile(r"\(Slack ([UW][A-Z0-9]{2,20})\)$")


@dataclass(frozen=True, slots=True)
class ShownSilence:
    """The silence a message shows: who made it, until when, why (as Alertmanager has them), and whether
    proxybot made it (`bot.silence_makers`: its store says so, never its `createdBy`)."""

    created_by: str
    ends_at: datetime
    comment: str
    made_here: bool = False

    @classmethod
    def of(cls, silence: Silence) -> ShownSilence:
        return cls(silence.created_by, silence.ends_at, silence.comment, silence.made_here)


def maker(silence: ShownSilence) -> str:
    """Who made it, as the line names them: the Slack user proxybot made it for (a mention), else the
    `createdBy` of a silence made outside proxybot, as plain text, whatever it claims."""
    found = _SLACK_MAKER.search(silence.created_by) if silence.made_here else None
    return mention(found.group(1)) if found else esc(one_line(silence.created_by))


def until_words(at: datetime, now: datetime | None) -> str:
    """When a silence ends, as its lines say it: a time of day, dated unless it is `now`'s day (UTC)."""
    at = at.astimezone(UTC)
    same_day = now is not None and at.date() == now.astimezone(UTC).date()
    return at.strftime("%H:%M UTC" if same_day else "%Y-%m-%d %H:%M UTC")


def silence_line(silence: ShownSilence, now: datetime | None = None) -> str:
    comment = truncate(esc(silence.comment), MAX_COMMENT_SHOWN)
    until = until_words(silence.ends_at, now)
    outside = "" if silence.made_here else " (made outside proxybot)"
    return f"🔕 Silenced by {maker(silence)} until {until}{outside}: {comment}"


def shown_silenced(message: Message, silence: ShownSilence | None, now: datetime | None = None) -> Message:
    """`message` with the silence's line (none when `silence` is None) and its button turned to match."""
    line = None if silence is None else silence_line(silence, now)
    off, on = (ACTION_SILENCE, SILENCE_LABEL), (ACTION_EXPIRE_SILENCE, EXPIRE_LABEL)
    return laid_over(message, SILENCE_BLOCK_ID, line, off, on)


def resolved_alert(message: Message) -> bool:
    """Whether `message` is an alert message in its resolved form: its buttons, none of them a silence's."""
    return any(b.get("block_id") == ACTIONS_BLOCK_ID for b in message.blocks) and not silenceable(message)


def silenceable(message: Message) -> bool:
    """Whether `message` offers Silence… or Expire silence (a firing alert message does; a resolved one
    does not), so a silence line belongs on it."""
    return any(
        element.get("action_id") in (ACTION_SILENCE, ACTION_EXPIRE_SILENCE)
        for block in message.blocks
        if block.get("block_id") == ACTIONS_BLOCK_ID
        for element in block.get("elements") or []
    )
