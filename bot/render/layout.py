"""Text layout for a terminal: Slack mrkdwn as plain text (optionally styled with ANSI), lines
wrapped at spaces to a width, and their visible length (ANSI codes take no room).

The terminal renderer lays messages out with it, and the compact alert message counts its lines with it
(`lines_shown`), so "at most 15 lines" means the lines the terminal shows.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from bot.render.blocks import WORD_JOINER

WIDTH = 100
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LINK = re.compile(r"<([^<>|]+)(?:\|([^<>]*))?>")
_BOLD = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]*?\S)\*(?![\w*])")
_ITALIC = re.compile(r"(?<![\w_])_(?=\S)([^_\n]*?\S)_(?![\w_])")
# A code block (```…```, over lines) or inline code (`…`): shown as its text, no markup read inside.
_CODE = re.compile(r"```(.*?)```|`([^`\n]+)`", re.DOTALL)
# Where each code span waits while the markup around it is read: between two private-use characters,
# which text of its own may not hold (shown as U+FFFD, so no text points at a span).
_HOLD_MARKS = {0xE000: "\ufffd", 0xE001: "\ufffd"}
_HELD = re.compile("\ue000(\\d+)\ue001")


def visible_len(text: str) -> int:
    return len(_ANSI.sub("", text))


def wrap(text: str, width: int) -> list[str]:
    """Lines wrapped at spaces to `width` visible columns (ANSI codes take no room)."""
    out: list[str] = []
    for raw in text.split("\n"):
        line = ""
        for word in _split_long(raw.split(" "), width):
            if line and visible_len(line) + 1 + visible_len(word) > width:
                out.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        out.append(line)
    return out


def _split_long(words: list[str], width: int) -> list[str]:
    """Words longer than a line cut into line-sized pieces, as Slack wraps them (styled words stay whole)."""
    out: list[str] = []
    for word in words:
        if len(word) <= width or _ANSI.search(word):
            out.append(word)
        else:
            out.extend(word[i : i + width] for i in range(0, len(word), width))
    return out


@dataclass(frozen=True, slots=True)
class Style:
    """ANSI styling, or none at all."""

    colour: bool = False

    def wrap(self, sgr: str, text: str) -> str:
        return f"\x1b[{sgr}m{text}\x1b[0m" if self.colour and text else text

    def bold(self, text: str) -> str:
        return self.wrap("1", text)

    def dim(self, text: str) -> str:
        return self.wrap("2", text)


def mrkdwn_to_text(text: str, style: Style) -> str:
    """Slack mrkdwn as a terminal shows it, plain text: links and mentions spelled out, emphasis and code
    without their marks (as ANSI with colour), entities decoded. Nothing inside code is read as markup."""
    spans: list[str] = []

    def hold(m: re.Match[str]) -> str:
        block, inline = m.group(1), m.group(2)
        spans.append(block.strip("\n") if block is not None else style.wrap("36", inline))
        return f"\ue000{len(spans) - 1}\ue001"

    out = _LINK.sub(_link, _CODE.sub(hold, text.translate(_HOLD_MARKS)))
    out = _BOLD.sub(lambda m: style.bold(m.group(1)) if style.colour else m.group(1), out)
    out = _ITALIC.sub(lambda m: style.wrap("3", m.group(1)) if style.colour else m.group(1), out)
    out = _HELD.sub(lambda m: spans[int(m.group(1))], out)
    # Entities last: an escaped `&lt;!channel&gt;` must show as text, not be read as a mention above. The
    # word joiner that keeps Slack from reading `#name` as a channel means nothing to a terminal, and a
    # name copied from it must be the name.
    return html.unescape(out).replace(WORD_JOINER, "")


def _link(m: re.Match[str]) -> str:
    target, label = m.group(1), m.group(2)
    if target.startswith("!"):
        return "@" + target[1:].split("^")[0]
    if target.startswith(("@", "#")):
        return label or target
    return f"{label} ({target})" if label else target


def lines_shown(mrkdwn: str, width: int = WIDTH) -> int:
    """How many lines a terminal shows for one mrkdwn text (without colour, as the budget counts)."""
    return len(wrap(mrkdwn_to_text(mrkdwn, Style()), width))
