"""Messages for a terminal: a Block Kit message printed as Slack would show it, with optional colour.

The demo prints every message the fake Slack receives with `show_message`; the CLI prints the message
Slack would get with `show`, so both say exactly the same words, but for the commands offered: the console
names its own (`proxybot NAME`, the same grammar as `/proxy NAME`) where it has them.
Colour is off when the stream is not a terminal or `NO_COLOR` is set (https://no-color.org).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from bot.render.blocks import Message
from bot.render.layout import WIDTH, Style, mrkdwn_to_text, visible_len, wrap
from bot.subcommands import SUBCOMMANDS

__all__ = [
    "THREAD_INDENT",
    "Style",
    "colour_enabled",
    "show",
    "show_message",
]

THREAD_INDENT = "    │ "
_HEADER_COLOURS = {"🔴": "31", "🟠": "33", "🔵": "34", "✅": "32", "🌩": "35"}
_SLASH_COMMAND = re.compile(r"(?<![\w/.])/proxy (?P<name>[a-z][a-z-]*)\b")
_CONSOLE_NAMES = frozenset(spec.name for spec in SUBCOMMANDS if spec.slash is not None and spec.cli)


def colour_enabled(stream: TextIO, env: Mapping[str, str]) -> bool:
    """Colour only for a terminal, and never when `NO_COLOR` is set to anything non-empty."""
    if env.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def _text_of(obj: Any) -> str:
    return str(obj.get("text", "")) if isinstance(obj, dict) else ""


def _render_text(obj: Any, style: Style) -> str:
    text = _text_of(obj)
    return mrkdwn_to_text(text, style) if obj.get("type") == "mrkdwn" else text


def _header(block: Mapping[str, Any], style: Style, width: int) -> list[str]:
    text = _text_of(block.get("text"))
    sgr = next((c for mark, c in _HEADER_COLOURS.items() if text.startswith(mark)), "")
    shown = style.wrap(f"1;{sgr}" if sgr else "1", text)
    return [shown, "═" * min(width, max(visible_len(text), 3))]


def _fields(items: Sequence[Any], style: Style, width: int) -> list[str]:
    """Fields two per row, as Slack lays them out."""
    column = (width - 3) // 2
    out: list[str] = []
    for i in range(0, len(items), 2):
        left = wrap(_render_text(items[i], style), column)
        right = wrap(_render_text(items[i + 1], style), column) if i + 1 < len(items) else []
        for n in range(max(len(left), len(right))):
            cell = left[n] if n < len(left) else ""
            pad = " " * max(0, column - visible_len(cell))
            out.append((cell + pad + "   " + (right[n] if n < len(right) else "")).rstrip())
    return out


def _block_lines(block: Mapping[str, Any], style: Style, width: int) -> list[str]:
    kind = block.get("type")
    if kind == "header":
        return _header(block, style, width)
    if kind == "section":
        lines = wrap(_render_text(block["text"], style), width) if "text" in block else []
        return lines + _fields(block.get("fields") or [], style, width)
    if kind == "context":
        parts = [_render_text(e, style) for e in block.get("elements") or []]
        return [style.dim(line) for line in wrap(" · ".join(parts), width)]
    if kind == "divider":
        return ["─" * width]
    if kind == "actions":
        # A link button says so: pressing it opens a page rather than asking the bot.
        labels = [
            f"[{_text_of(e.get('text'))}{' ↗' if e.get('url') else ''}]" for e in block.get("elements") or []
        ]
        return [style.wrap("36", " ".join(labels))]
    if kind == "table":
        return _table(block, width)
    return [style.dim(f"[{kind} block]")]


def _table(block: Mapping[str, Any], width: int) -> list[str]:
    """A table block, a line per row (wrapped when wider), its cells split by " │ "."""
    lines: list[str] = []
    for row in block.get("rows") or []:
        cells = [_cell_text(c) for c in row if isinstance(c, Mapping)] if isinstance(row, list) else []
        lines += wrap(" │ ".join(cells), width)
    return lines


def _cell_text(cell: Mapping[str, Any]) -> str:
    """A cell's words: a raw text's text, a rich text's every text element."""
    if cell.get("type") != "rich_text":
        return str(cell.get("text", ""))
    return "".join(_rich_words(cell.get("elements")))


def _rich_words(elements: object) -> list[str]:
    words: list[str] = []
    for element in elements if isinstance(elements, list) else []:
        if isinstance(element, Mapping):
            words.append(str(element.get("text", "")))
            words += _rich_words(element.get("elements"))
    return words


def show_message(
    text: str,
    blocks: Sequence[Mapping[str, Any]] = (),
    *,
    style: Style | None = None,
    width: int = WIDTH,
    edited: bool = False,
    thread_reply: bool = False,
    heading: str | None = None,
) -> str:
    """One Slack message as Slack shows it: blocks when there are any (else the text), thread replies
    indented, edits marked "(edited)", an optional heading line (channel, time) above it.
    """
    style = style or Style()
    inner = width - len(THREAD_INDENT) if thread_reply else width
    lines: list[str] = []
    if heading is not None or edited:
        mark = style.wrap("33", "(edited)") if edited else ""
        lines.append(style.dim(heading or "") + (" " if heading and edited else "") + mark)
    for i, block in enumerate(blocks):
        # Slack leaves space between blocks; a blank line does the same here.
        gap = i > 0 and block.get("type") != "actions" and blocks[i - 1].get("type") != "header"
        lines.extend([""] * gap)
        lines.extend(_block_lines(block, style, inner))
    if not blocks:
        lines.extend(wrap(mrkdwn_to_text(text, style), inner))
    if thread_reply:
        lines = [THREAD_INDENT + line for line in lines]
    return "\n".join(lines)


def show(message: Message, **options: Any) -> str:
    """`show_message` for a message built by the renderers, as the console prints its own answer: the
    `/proxy` commands it offers named as the console's."""
    blocks = [_console_words(block) for block in message.blocks]
    return show_message(_console_command(message.text), blocks, **options)


def _console_command(text: str) -> str:
    """`/proxy NAME ...` as `proxybot NAME ...` where the console has NAME (`/proxy ack` stays Slack's)."""
    return _SLASH_COMMAND.sub(
        lambda m: f"proxybot {m['name']}" if m["name"] in _CONSOLE_NAMES else m[0], text
    )


def _console_words(obj: Any) -> Any:
    """A block with every text in it read by `_console_command` (its IDs and URLs as they were)."""
    if isinstance(obj, list):
        return [_console_words(item) for item in obj]
    if not isinstance(obj, Mapping):
        return obj
    return {
        key: _console_command(value) if key == "text" and isinstance(value, str) else _console_words(value)
        for key, value in obj.items()
    }
