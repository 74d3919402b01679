"""Slack's Block Kit limits as a checker: what about a message Slack would reject, or our ~10 000 chars rule.

limit_problems(kwargs)   every problem of a `chat.postMessage` payload; [] when Slack would take it
text_units(text)         the length Slack counts (UTF-16 code units)
"""

from __future__ import annotations

from typing import Any

# Slack's numbers, written out here rather than imported, so a wrong constant in the module fails a test.
SLACK_MAX_BLOCKS = 50
SLACK_MAX_SECTION = 3000
SLACK_MAX_FIELDS = 10
SLACK_MAX_FIELD = 2000
SLACK_MAX_HEADER = 150
SLACK_MAX_CONTEXT_ELEMENTS = 10
SLACK_MAX_BUTTONS = 25
SLACK_MAX_BUTTON_TEXT = 75
WHOLE_MESSAGE = 10_000


def _texts(block: dict[str, Any]) -> list[dict[str, Any]]:
    """Every text object of a block (section text, fields, context elements, button labels)."""
    found = [block["text"]] if "text" in block else []
    found += block.get("fields", [])
    return found + [e["text"] if e.get("type") == "button" else e for e in block.get("elements", [])]


def text_units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def limit_problems(kwargs: dict[str, Any]) -> list[str]:
    """Everything about a message that Slack would reject or that breaks our own ~10 000 chars rule."""
    problems: list[str] = []
    text = kwargs.get("text", "")
    if not text.strip():
        problems.append("no fallback text")
    blocks = kwargs.get("blocks", [])
    if len(blocks) > SLACK_MAX_BLOCKS:
        problems.append(f"{len(blocks)} blocks")
    total = text_units(text)
    for i, block in enumerate(blocks):
        problems += [f"block {i}: {p}" for p in _block_problems(block)]
        total += sum(text_units(t["text"]) for t in _texts(block))
    if total > WHOLE_MESSAGE:
        problems.append(f"{total} chars of text")
    return problems


def _block_problems(block: dict[str, Any]) -> list[str]:
    kind = block["type"]
    out: list[str] = []
    for t in _texts(block):
        if not t["text"].strip():
            out.append("empty text")
    if kind == "header":
        if block["text"]["type"] != "plain_text" or text_units(block["text"]["text"]) > SLACK_MAX_HEADER:
            out.append("bad header")
    elif kind == "section":
        if "text" not in block and "fields" not in block:
            out.append("section without text or fields")
        if "text" in block and text_units(block["text"]["text"]) > SLACK_MAX_SECTION:
            out.append("section text too long")
        flds = block.get("fields", [])
        if len(flds) > SLACK_MAX_FIELDS or any(text_units(f["text"]) > SLACK_MAX_FIELD for f in flds):
            out.append("fields over limit")
    elif kind == "context":
        if not 0 < len(block["elements"]) <= SLACK_MAX_CONTEXT_ELEMENTS:
            out.append("context elements")
    elif kind == "actions":
        out += _actions_problems(block)
    return out


def _actions_problems(block: dict[str, Any]) -> list[str]:
    els = block["elements"]
    out = [] if 0 < len(els) <= SLACK_MAX_BUTTONS else ["button count"]
    for e in els:
        if text_units(e["text"]["text"]) > SLACK_MAX_BUTTON_TEXT or e["text"]["type"] != "plain_text":
            out.append("button text")
        if len(e["action_id"]) > 255 or len(e.get("value", "")) > 2000:
            out.append("button id or value")
    return out
