"""The probe's answer as a Slack message (the CLI shows the same message in the terminal)."""

from __future__ import annotations

from bot.domain.probe_result import LatencySummary, ProbeOutcome, ProbeResult
from bot.render.blocks import Block, Message, code, context, esc, header, message, section, section_lines

_MARK = {ProbeOutcome.OK: "✅", ProbeOutcome.TIMEOUT: "🟠", ProbeOutcome.UNREACHABLE: "🟠"}
FAILED_MARK = "🔴"


def _ms(seconds: float) -> str:
    """Milliseconds, whole; under half of one said so ("0 ms" reads as not measured)."""
    return "under 1 ms" if seconds < 0.0005 else f"{seconds * 1000:.0f} ms"


def _latency_line(latency: LatencySummary) -> str:
    if latency.count == 1:
        return f"*Latency:* {_ms(latency.p50)}"
    return (
        f"*Latency over {latency.count} answers:* min {_ms(latency.min)}, p50 {_ms(latency.p50)}, "
        f"max {_ms(latency.max)}"
    )


def probe_message(result: ProbeResult) -> Message:
    """Verdict, the request made, evidence lines, latency and the next step."""
    request = result.request
    mark = _MARK.get(result.outcome, FAILED_MARK)
    verdict = "passed" if result.passed else f"failed ({result.outcome.value})"
    body: list[Block] = [
        header(f"{mark} Probe {request.target}: {verdict}"),
        section(f"*{esc(result.summary)}*\n`GET {esc(request.url)}` through {code(request.cluster)}"),
    ]
    lines = [f"• {esc(line)}" for line in result.evidence]
    if result.latency is not None:
        lines.append(_latency_line(result.latency))
    body.append(section_lines(lines))
    body.append(section(f"*Next step:* {esc(result.next_step)}"))
    tail = [context(["Guide: _Monitor the proxy &gt; Synthetic probe_", "timeout 15 s, read-only GET"])]
    return message(f"Probe {esc(request.target)}: {verdict} — {esc(result.summary)}", body, tail)
