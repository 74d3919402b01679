"""The quick-triage verdict in words, plain text (each renderer escapes it for its medium).

`status` and `/proxy status` lead with `verdict_lines`; alert messages and the digest carry `verdict_short`.
"""

from __future__ import annotations

from bot.domain.verdict import TargetVerdict, Verdict

VERDICT_MARK = {
    Verdict.HEALTHY: "✅",
    Verdict.TARGET_DOWN: "🔴",
    Verdict.PROXY_PATH: "🟠",
    Verdict.NO_PEER_FEED: "🟠",
    Verdict.CHECK_REASON: "🟠",
    Verdict.SLOW_TARGET: "🟠",
    Verdict.UNKNOWN: "❔",
}


def verdict_short(v: TargetVerdict) -> str:
    """`🔴 target_down: none of the target's 1 control-plane pods is Ready: the target is down`."""
    return f"{VERDICT_MARK[v.verdict]} {v.verdict.value}: {v.why}"


def verdict_lines(subject: str, v: TargetVerdict) -> list[str]:
    """The verdict, what it rests on, and the next step (the evidence is left to the findings)."""
    return [
        f"{VERDICT_MARK[v.verdict]} Verdict for {subject}: {v.verdict.value}: {v.why}",
        f"    rests on: {'; '.join(v.inputs)}",
        f"    next: {v.next_step}",
    ]
