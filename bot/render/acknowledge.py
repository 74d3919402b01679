"""An acknowledgement as Slack shows it: the 👀 line and the *Acknowledge* / *Unacknowledge* button.

The line and the button's state are laid over a group's message as it is sent (`shown_with`, called by the
delivery worker for every post and edit), from the store's acknowledgement at that moment: whichever
replica rendered the message and whenever, Slack shows who has it now. The overlay is idempotent: a
message already carrying a line gets the current one instead. `laid_over` is that overlay, the silence's
line (`bot.render.silence_line`) laid the same way.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from bot.domain.acknowledgement import Acknowledgement
from bot.render.blocks import Block, Button, Message, context, esc, fmt_span, text_message
from bot.render.slack import ACTION_ACK, ACTION_UNACK, ACTIONS_BLOCK_ID

ACK_BLOCK_ID = "proxy_ack_line"
ACK_LABEL, UNACK_LABEL = "Acknowledge", "Unacknowledge"
# What the compact message keeps free for the line (lines as the terminal shows them, characters).
ACK_LINES, ACK_CHARS = 1, 90
_SLACK_ID = re.compile(r"[UW][A-Z0-9]{2,20}")


def mention(user: str) -> str:
    """A Slack user as a mention when it is a user ID, else as inert text."""
    return f"<@{user}>" if _SLACK_ID.fullmatch(user) else esc(user)


def ack_button(value: str) -> Button:
    """The button of a firing message nobody has acknowledged (the overlay turns it over)."""
    return Button(ACK_LABEL, ACTION_ACK, value)


def _clock(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M UTC")


def _after(ack: Acknowledgement) -> str:
    return f"{fmt_span(ack.at - ack.episode)} after it fired"


def ack_line(ack: Acknowledgement) -> str:
    return f"👀 Acknowledged by {mention(ack.user)} at {_clock(ack.at)} ({_after(ack)})"


def shown_with(message: Message, ack: Acknowledgement | None) -> Message:
    """`message` with the acknowledgement's line (none when `ack` is None) and its button turned to match;
    a message without an *Acknowledge* button (a resolved one) keeps its buttons as they are."""
    line = None if ack is None else ack_line(ack)
    return laid_over(message, ACK_BLOCK_ID, line, (ACTION_ACK, ACK_LABEL), (ACTION_UNACK, UNACK_LABEL))


# A button a line turns over: its action id and label.
Toggle = tuple[str, str]


def laid_over(message: Message, block_id: str, line: str | None, off: Toggle, on: Toggle) -> Message:
    """`message` with `line` as its block `block_id` (none when `line` is None, a line laid before taken
    off) and the button that is `off` or `on` turned to match (`on` while there is a line)."""
    turned_on = line is not None
    blocks = [b for b in message.blocks if b.get("block_id") != block_id]
    blocks = [_turned(b, off, on, turned_on) if b.get("block_id") == ACTIONS_BLOCK_ID else b for b in blocks]
    if line is not None:
        blocks.insert(line_at(blocks), {**context([line]), "block_id": block_id})
    return Message(message.text, tuple(blocks))


def line_at(blocks: list[Block]) -> int:
    """Under the message's body: before its tail (the context line above the buttons, and the buttons)."""
    at = next((i for i, b in enumerate(blocks) if b.get("block_id") == ACTIONS_BLOCK_ID), len(blocks))
    return at - 1 if at > 0 and blocks[at - 1].get("type") == "context" else at


def _turned(block: Block, off: Toggle, on: Toggle, turned_on: bool) -> Block:
    action, label = on if turned_on else off
    elements: list[dict[str, Any]] = []
    for element in block.get("elements") or []:
        if element.get("action_id") in (off[0], on[0]):
            element = {**element, "action_id": action, "text": {**element["text"], "text": label}}
        elements.append(element)
    return {**block, "elements": elements}


# -- the thread and the person who pressed -------------------------------------------------------------


def acked_reply(ack: Acknowledgement) -> Message:
    text = f"👀 {mention(ack.user)} acknowledged this alert at {_clock(ack.at)} ({_after(ack)})."
    return text_message(text)


def unacked_reply(ack: Acknowledgement, by: str, at: float) -> Message:
    whose = "their" if by == ack.user else f"{mention(ack.user)}'s"
    text = f"{mention(by)} removed {whose} acknowledgement at {_clock(at)}: nobody has this alert now."
    return text_message(text)


def taken_already(ack: Acknowledgement) -> str:
    return f"{mention(ack.user)} has this alert already: acknowledged at {_clock(ack.at)} ({_after(ack)})."
