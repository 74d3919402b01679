"""The resolution summary as Slack shows it: one thread reply, and one line in the resolved message.

Text from outside (a silence's author and comment, a check's outcome) is escaped. People are named, never
mentioned: the reply is a new post, often at night, and a mention in it would notify them again.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from bot.domain.impact import Impact, ImpactSource
from bot.domain.resolution import EventKind, OncallEvent, Resolution
from bot.render.acknowledge import line_at
from bot.render.blocks import Block, Message, context, esc, fmt_span, message, one_line, section_lines

SUMMARY_BLOCK_ID = "proxy_resolution_line"
MAX_REASONS = 8
CHECK_NAMES = {EventKind.PROBE: "Probe now", EventKind.PATH_CHECK: "Path check"}


def _clock(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%H:%M UTC")


def _count(n: float) -> str:
    return f"{n:,.0f}"


def ack_words(r: Resolution) -> str:
    if r.ack is None or r.acked_after is None:
        return "never acknowledged"
    return f"acknowledged by {esc(r.ack.user_name)} {fmt_span(r.acked_after)} after it fired"


def failed_words(impact: Impact | None) -> str:
    if impact is None:
        return "impact unknown (no reading of its targets)"
    total = impact.total_failed
    return "no failed requests" if total == 0 else f"{_count(total)} failed requests"


def summary_line(r: Resolution) -> str:
    """The one line the resolved message carries."""
    parts = [f"🧾 Fired {fmt_span(r.fired_seconds)}", ack_words(r), failed_words(r.impact)]
    if r.escalations:
        parts.append(f"escalated {len(r.escalations)} time(s)")
    if r.silences:
        parts.append(f"silenced {len(r.silences)} time(s)")
    return ", ".join(parts) + " (summary in the thread)."


def source_words(impact: Impact) -> str:
    if impact.source is ImpactSource.PROMETHEUS:
        return (
            "Counted by Prometheus: `increase()` over the firing window (counter resets taken into account)."
        )
    resets = (
        f"{impact.resets} counter reset(s) found: a counter that went down counted from zero"
        if impact.resets
        else "no counter reset found (a counter that went down would count from zero)"
    )
    why = "" if impact.fallback is None else f" Prometheus was not used: {esc(one_line(impact.fallback))}."
    return (
        f"Counted from proxybot's own readings of `/metrics/syncer` ({impact.readings} from the first to "
        f"the last notification; {resets}).{why}"
    )


def _failed_lines(failed: Mapping[tuple[str, str], float]) -> list[str]:
    ordered = sorted(failed.items(), key=lambda kv: (-kv[1], kv[0]))
    lines = [f"• `{esc(code)}` `{esc(reason)}`: {_count(n)}" for (code, reason), n in ordered[:MAX_REASONS]]
    if len(ordered) > MAX_REASONS:
        lines.append(f"• … {len(ordered) - MAX_REASONS} more")
    return lines


def impact_lines(impact: Impact | None) -> list[str]:
    if impact is None:
        return ["*Impact:* unknown: no reading of its targets' proxy metrics was made in the window."]
    lines = [f"*Impact:* {failed_words(impact)}" + (" by status and reason:" if impact.failed else ".")]
    lines += _failed_lines(impact.failed)
    q = "unknown" if impact.peak_quarantined is None else _count(impact.peak_quarantined)
    u = "unknown" if impact.peak_unsynced is None else str(impact.peak_unsynced)
    lines.append(f"Peak quarantined peers: {q}; peak unsynced peer caches: {u}.")
    lines.append(source_words(impact))
    return lines


def _check_line(e: OncallEvent) -> str:
    who = f" by {esc(e.actor)}" if e.actor else ""
    at = _clock(datetime.fromtimestamp(e.at, UTC))
    # The outcome is the check's own answer line, escaped by its renderer already.
    return f"• {CHECK_NAMES.get(e.kind, e.kind.value)}{who} at {at}: {one_line(e.detail)}"


def summary_reply(r: Resolution, now: datetime, change: Message | None = None) -> Message:
    """The thread reply recording the episode, after what the last notification changed (`change`, the
    reply a resolve would have had: which alerts resolved, after how long)."""
    head = [
        f"🧾 *Resolution summary*: fired {fmt_span(r.fired_seconds)}, from {_clock(r.started_at)} to "
        f"{_clock(r.resolved_at)}.",
        f"{ack_words(r)[0].upper()}{ack_words(r)[1:]}.",
    ]
    silences = [
        f"• by {esc(one_line(s.created_by))} from {_clock(s.starts_at)} until {_clock(s.ends_at)}: "
        f"{esc(one_line(s.comment))}"
        for s in r.silences
    ]
    head.append("*Silences:* " + ("none." if not silences else ""))
    body = [*head, *silences]
    escalations = [
        f"• {_clock(datetime.fromtimestamp(e.at, UTC))} to {esc(e.actor) or 'on call'}" for e in r.escalations
    ]
    body.append("*Escalations:* " + ("none." if not escalations else ""))
    body += escalations
    blocks: list[Block] = [section_lines(body), section_lines(impact_lines(r.impact))]
    checks = [_check_line(e) for e in r.checks]
    blocks.append(
        section_lines(["*Checks run from the thread:* " + ("none." if not checks else ""), *checks])
    )
    fallback = summary_line(r).removeprefix("🧾 ").removesuffix(" (summary in the thread).")
    fallback = f"Resolution summary: {fallback}"
    if change is not None:
        blocks[:0] = list(change.blocks)
        fallback = f"{change.text}. {fallback}"
    return message(fallback, blocks, [context([f"recorded {_clock(now)}"])])


def with_summary_line(content: Message, r: Resolution) -> Message:
    """The resolved message with the summary's line under its body (idempotent)."""
    blocks = [b for b in content.blocks if b.get("block_id") != SUMMARY_BLOCK_ID]
    blocks.insert(line_at(blocks), {**context([summary_line(r)]), "block_id": SUMMARY_BLOCK_ID})
    return Message(content.text, tuple(blocks))
