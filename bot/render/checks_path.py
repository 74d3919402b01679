"""The path check's answer as a Slack message (the CLI shows the same message in the terminal)."""

from __future__ import annotations

from bot.domain.path_result import LatencySeries, PathResult, PathVerdict
from bot.render.blocks import Block, Message, code, context, esc, header, message, section, section_lines

_MARK = {
    PathVerdict.LIKELY_DIRECT: "✅",
    PathVerdict.LIKELY_RELAYED: "🟠",
    PathVerdict.UNKNOWN: "🔵",
    PathVerdict.CANNOT_JUDGE: "⚪",
}


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:.1f} ms"


def _series_line(series: LatencySeries | None, name: str) -> str:
    if series is None:
        return f"*{name}:* not configured"
    answered = f"{len(series.seconds)} answered"
    failed = f", {len(series.failures)} failed ({esc(series.failures[0])})" if series.failures else ""
    quantiles = (
        f"min {_ms(series.minimum)}, p50 {_ms(series.quantile(0.5))}, p99 {_ms(series.quantile(0.99))}"
    )
    return f"*{name}:* {quantiles} — {answered}{failed}"


def path_message(result: PathResult) -> Message:
    """Verdict, the samples of both sides, the evidence of each signal and the fix."""
    verdict = result.verdict.value
    body: list[Block] = [
        header(f"{_MARK[result.verdict]} Path {result.target}: {verdict}"),
        section(
            f"`GET {esc(result.request)}` through {code(result.cluster)} and directly against the target. "
            "No metric says direct or relayed: this is evidence, not certainty."
        ),
        section_lines(
            [
                _series_line(result.client, "Through the client"),
                _series_line(result.direct, "Directly"),
                f"*Floor (client min - direct min):* {_ms(result.floor)}",
            ]
        ),
        section_lines(["*Evidence*", *(f"• {esc(line)}" for line in result.evidence)]),
    ]
    if result.fix:
        body.append(section_lines(["*Fix*", *(f"• {esc(line)}" for line in result.fix)]))
    tail = [context(["Guide: _Confirm which path you are on_, _NetworkPolicy exceptions for a direct path_"])]
    return message(f"Path {esc(result.target)}: {verdict}", body, tail)
