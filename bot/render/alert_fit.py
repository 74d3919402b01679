"""Fitting text into the compact alert message: its lines counted as the terminal shows them, outside
text clipped at a word, and a few names shown or counted.

Values from outside are clipped before they are escaped (`esc`/`code`), so an escape is never cut.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.render.blocks import code, esc, one_line
from bot.render.layout import WIDTH, lines_shown
from bot.render.words import counted

NAME_SHOWN = 60  # characters of a name from outside (target, cluster, group/version) at the top level


def lines_of(text: str) -> int:
    """Terminal lines of one mrkdwn text, as the terminal renderer lays it out."""
    return lines_shown(text, WIDTH)


def clip(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def clip_words(text: str, limit: int) -> str:
    """`text` within `limit` characters: cut at its first clause ("; ") when that fits, else at a word."""
    text = one_line(text)
    if len(text) <= limit:
        return text
    clause = text.split("; ", 1)[0]
    if len(clause) < limit:
        return clause + " …"
    head = text[: limit - 1].rsplit(" ", 1)[0] if " " in text[: limit - 1] else text[: limit - 1]
    return head.rstrip(" ,;:") + "…"


def fitted(prefix: str, text: str, max_lines: int) -> str:
    """`prefix` + `text` escaped, the text cut at a word with "…" until it takes at most `max_lines`."""
    plain = clip(text, max_lines * WIDTH)
    while True:
        line = prefix + esc(plain)
        if lines_of(line) <= max_lines or not plain:
            return line
        cut = plain.rstrip("…").rsplit(" ", 1)[0] if " " in plain else plain[:-8]
        plain = cut.rstrip(" ,;:") + "…" if cut else ""


def name(value: str) -> str:
    """A name from outside as inline code, clipped."""
    return code(clip(value, NAME_SHOWN))


def names(values: Sequence[str], word: str, shown: int = 2) -> str:
    """`a`, `b` for a few names, else "N words"."""
    if len(values) <= shown:
        return ", ".join(name(v) for v in values)
    return counted(len(values), word)
