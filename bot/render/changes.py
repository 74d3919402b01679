"""What changed before an alert, laid out: its one line for the alert message, and for the details reply that
line with the diff as a code block, kept within the room the reply gives it (the reply as a whole stays
within 2 000 characters as shown; what of the diff did not fit is counted in its last line).

The words are the domain's (`bot.domain.changes`); values from the platform (entry keys, versions) enter
mrkdwn only through `esc` and `code_block`.
"""

from __future__ import annotations

from bot.domain.changes import ChangeReport
from bot.render.blocks import code_block, esc, units

LABEL = "Changes"
# The details' room for the diff unless told: a quarter of the reply's 2 000 characters.
DIFF_ROOM = 500
DIFF_LINES = 10
# The message's line at most (its words, before escaping): a fifth of the message's 1 500 visible characters.
LINE_ROOM = 300
_FENCES = len("``````")


def change_line(report: ChangeReport, max_chars: int = LINE_ROOM) -> str:
    """The alert message's line (mrkdwn): `*Changes:* 12 min before: team-a's vcluster.yaml …`, its words
    cut at `max_chars` (the details have them all; a code span cut in two is made inert by `esc`)."""
    words = report.line()
    if len(words) > max_chars:
        words = words[: max_chars - 1].rstrip() + "…"
    return f"*{LABEL}:* {esc(words)}"


def change_details(report: ChangeReport, room: int = DIFF_ROOM) -> list[str]:
    """The details reply's lines (mrkdwn): the line, then the diff within `room` characters as shown, its
    last line saying how much of it was left out; no diff when nothing changed."""
    lines = [change_line(report, max_chars=room)]
    if not report.changes:
        return lines
    diff = report.diff(max_lines=DIFF_LINES, max_chars=max(0, room - _FENCES - 40))
    if diff:
        block = code_block(diff)
        # Escaped `&<>` count as one character each as shown; never more than the room.
        if units(diff) + _FENCES <= room:
            lines.append(block)
    return lines
