"""A message Slack refused (`invalid_blocks`, `msg_too_long`), made smaller: the delivery worker's fallbacks.

`bot.render.blocks` builds every message within Slack's published limits; Slack may still refuse one
(limits tighter than published, `msg_blocks_too_long`, a block built wrong). Then the message is sent
again `smaller` (each block cut to its type's limits, the whole within half the text budget), and at last
as `text_only`; never dropped for its size.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from bot.render.blocks import (
    MAX_BUTTON_TEXT,
    MAX_BUTTONS,
    MAX_CONTEXT_ELEMENTS,
    MAX_CONTEXT_TEXT,
    MAX_FIELD_TEXT,
    MAX_FIELDS,
    MAX_HEADER_TEXT,
    MAX_MESSAGE_TEXT,
    MAX_SECTION_TEXT,
    Block,
    Message,
    block_texts,
    lines_within,
    message,
    mrkdwn,
    one_line,
    plain,
)


def smaller(refused: Message) -> Message:
    """A message Slack refused (`invalid_blocks`, `msg_too_long`), built again within half the text budget.

    Every block is cut to its own limits (header, section, fields, context, buttons) and the whole to
    half of `MAX_MESSAGE_TEXT`, blocks dropped from the end as `message` drops them; trailing buttons
    are kept. For when Slack's limits are tighter than ours, or a block came out malformed."""
    blocks = [_refit(b) for b in refused.blocks]
    cut = len(blocks)
    while cut and blocks[cut - 1].get("type") == "actions":
        cut -= 1
    fitted = message(refused.text, blocks[:cut], blocks[cut:], budget=MAX_MESSAGE_TEXT // 2)
    return replace(fitted, broadcast=refused.broadcast)


def text_only(refused: Message) -> Message:
    """A message Slack refused, as text without blocks: its fallback, then what its blocks said."""
    said = [t for b in refused.blocks if b.get("type") != "actions" for t in block_texts(b) if t.strip()]
    lines = list(dict.fromkeys([one_line(refused.text), *said]))  # a line said twice is shown once
    return Message(lines_within(lines, MAX_SECTION_TEXT), broadcast=refused.broadcast)


def _refit(block: Block) -> Block:
    """One block cut to Slack's limits for its type; blocks of other types are kept as they are."""
    kind = block.get("type")
    if kind == "header":
        return {**block, "text": plain(_text_of(block.get("text")), MAX_HEADER_TEXT)}
    if kind == "context":
        items = _objects(block.get("elements"))[:MAX_CONTEXT_ELEMENTS]
        elements = [e if e.get("type") == "image" else _fit(e, MAX_CONTEXT_TEXT) for e in items]
        return {**block, "elements": elements or [mrkdwn("", MAX_CONTEXT_TEXT)]}
    if kind == "actions":
        buttons = _objects(block.get("elements"))[:MAX_BUTTONS]
        fitted = [{**b, "text": plain(_text_of(b.get("text")), MAX_BUTTON_TEXT)} for b in buttons]
        return {**block, "elements": fitted}
    if kind == "section":
        return _refit_section(block)
    return block


def _refit_section(block: Block) -> Block:
    fitted = dict(block)
    if "text" in block:
        fitted["text"] = _fit(block["text"], MAX_SECTION_TEXT)
    if "fields" in block:
        fitted["fields"] = [_fit(f, MAX_FIELD_TEXT) for f in _objects(block["fields"])[:MAX_FIELDS]]
    if not fitted.get("text") and not fitted.get("fields"):
        fitted["text"] = mrkdwn("", MAX_SECTION_TEXT)
    return fitted


def _fit(obj: object, limit: int) -> dict[str, Any]:
    """A text object cut to `limit`, of its own type (its text was made inert when it was built)."""
    kind = obj.get("type") if isinstance(obj, dict) else None
    return plain(_text_of(obj), limit) if kind == "plain_text" else mrkdwn(_text_of(obj), limit)


def _objects(items: object) -> list[dict[str, Any]]:
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _text_of(obj: object) -> str:
    return str(obj.get("text", "")) if isinstance(obj, dict) else str(obj or "")
