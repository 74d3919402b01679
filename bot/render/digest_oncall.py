"""The digest's on-call section: the period's incidents, times to acknowledge and resolve, who was never taken
or escalated, how many resolved unverified (only when some did), the noisiest targets by firing time, and the
silences active now."""

from __future__ import annotations

from datetime import UTC

from bot.domain.oncall_figures import OncallFigures
from bot.render.blocks import Block, code, esc, fmt_span, one_line, section_lines
from bot.render.words import counted

MAX_SILENCES = 8


def _span(seconds: float | None) -> str:
    return "n/a" if seconds is None else fmt_span(seconds)


def oncall_lines(o: OncallFigures) -> list[str]:
    """The section's lines (also the terminal's)."""
    unverified = f", {o.unverified} resolved unverified" if o.unverified else ""
    lines = [
        f"*On call:* {counted(o.incidents, 'incident')} ({o.resolved} resolved, {o.open} firing now); "
        f"{o.never_acknowledged} never acknowledged, {o.escalated} escalated{unverified}.",
        f"Time to acknowledge: median {_span(o.tta_median)}, p90 {_span(o.tta_p90)}. "
        f"Time to resolve: median {_span(o.ttr_median)}, p90 {_span(o.ttr_p90)}.",
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
