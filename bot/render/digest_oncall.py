"""The digest's on-call section: the period's incidents, times to acknowledge and resolve, who was never taken
or escalated, how many resolved unverified (only when some did), the noisiest targets by firing time, and the
silences active now."""

from __future__ import annotations

from datetime import UTC

from bot.domain.oncall_figures import OncallFigures
from bot.render.blocks import Block, code, esc, fmt_span, one_line, section_lines
from bot.render.words import counted

MAX_SILENCES = 8


def _times(what: str, median: float | None, p90: float | None, none: str) -> str:
    if median is None or p90 is None:
        return f"Time to {what}: {none}."
    return f"Time to {what}: median {fmt_span(median)}, p90 {fmt_span(p90)}."


def _not_acknowledged(o: OncallFigures) -> list[str]:
    # "never" only of the episodes that ended; one firing now may still be taken.
    never = [f"{o.never_acknowledged} never acknowledged"] if o.resolved or not o.open else []
    return never + ([f"{o.not_acknowledged_yet} not acknowledged yet"] if o.open else [])


def oncall_lines(o: OncallFigures) -> list[str]:
    """The section's lines (also the terminal's)."""
    unverified = [f"{o.unverified} resolved unverified"] if o.unverified else []
    taken = ", ".join([*_not_acknowledged(o), f"{o.escalated} escalated", *unverified])
    lines = [
        f"*On call:* {counted(o.incidents, 'incident')} ({o.resolved} resolved, {o.open} firing now); "
        f"{taken}.",
        _times("acknowledge", o.tta_median, o.tta_p90, "none acknowledged yet")
        + " "
        + _times("resolve", o.ttr_median, o.ttr_p90, "none resolved yet"),
    ]
    if o.noisiest:
        noisy = ", ".join(f"{code(t)} {fmt_span(s)}" for t, s in o.noisiest)
        lines.append(f"Noisiest by firing time: {noisy}.")
    if o.silences:
        lines.append(f"*Silences active now ({len(o.silences)}):*")
        lines += [
            f"• by {esc(one_line(s.created_by))} until {s.ends_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC: "
            f"{esc(one_line(s.comment))} ({esc(', '.join(s.matchers))})"
            for s in o.silences[:MAX_SILENCES]
        ]
        if len(o.silences) > MAX_SILENCES:
            lines.append(f"• … {len(o.silences) - MAX_SILENCES} more")
    else:
        lines.append("No silence is active now.")
    return lines


def oncall_blocks(o: OncallFigures | None) -> list[Block]:
    return [] if o is None or o.empty else [section_lines(oncall_lines(o))]
