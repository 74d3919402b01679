"""Neutral message content -> Slack Block Kit: the words alert messages share, an alert group's changes,
command answers. An alert group's own message is `bot.render.alert_message` (compact) and its details reply
`bot.render.alert_details`; storms are `bot.render.storm`.

Every value that comes from outside (labels, annotations, diagnosis text quoting them) goes through
`esc`/`code`; `blocks.message` keeps the result within Slack's limits. Times are UTC and relative to an
injected `now`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from bot.domain.alert_standing import Standing
from bot.domain.findings import Finding, Severity, sort_worst_first
from bot.domain.messages import (
    AlertView,
    FindingsReport,
    GroupChange,
    GroupStatus,
    LiveRead,
)
from bot.render.blocks import (
    Block,
    Message,
    code,
    context,
    esc,
    fmt_ago,
    fmt_clock,
    fmt_span,
    header,
    message,
    section,
    section_lines,
    utc,
)
from bot.render.words import counted

ACTION_PROBE = "proxy_probe"
ACTION_PATH = "proxy_path"
ACTION_SILENCE = "proxy_silence"
ACTION_ACK = "proxy_ack"
ACTION_UNACK = "proxy_unack"
ACTION_EXPIRE_SILENCE = "proxy_expire_silence"
# Link buttons: Slack opens their URL and still sends the press, which is only acknowledged.
LINK_ACTION_PREFIX = "proxy_link_"
ACTION_GRAPH = f"{LINK_ACTION_PREFIX}graph"
ACTION_SILENCE_PAGE = f"{LINK_ACTION_PREFIX}silence_page"
ACTIONS_BLOCK_ID = "proxy_alert_actions"

DETAILED_ALERTS = 3  # alerts of a group explained in full; the rest get one line each
LIST_LINES = 12  # lines of a list before "+N more"

SEVERITY_MARK = {
    Severity.CRITICAL: "🔴",
    Severity.WARNING: "🟠",
    Severity.INFO: "🔵",
    Severity.OK: "✅",
}
RESOLVED_MARK = "✅"
BLAST_MARK = "🎯"  # who else a shared target's trouble hits
STANDING_WORDS = {
    Standing.STILL_BROKEN: "still broken",
    Standing.RECOVERING: "recovering",
    Standing.RECOVERED: "recovered",
    Standing.UNKNOWN: "unclear",
}


# -- small pieces ----------------------------------------------------------------------------------


def _top(lines: Sequence[str], n: int = LIST_LINES) -> list[str]:
    return [*lines[:n], f"… +{len(lines) - n} more"] if len(lines) > n else list(lines)


def alert_subject(alert: AlertView) -> str:
    """What one alert is about: its target, else the probe CronJob (ProbeFailing names no target)."""
    if alert.target:
        return code(alert.target)
    namespace, cronjob = alert.labels.get("namespace"), alert.labels.get("cronjob")
    return f"CronJob {code(f'{namespace}/{cronjob}')}" if namespace and cronjob else "no target label"


def _where(alert: AlertView) -> str:
    gv = f" ({code(alert.group_version)})" if alert.group_version else ""
    return f"{alert_subject(alert)}{gv}"


def live_line(live: LiveRead, now: datetime) -> str:
    if live.ok and live.read_at is not None:
        replica = f" from replica {code(live.replica)}" if live.replica else ""
        return f"Live state read {fmt_clock(live.read_at)} ({fmt_ago(live.read_at, now)}){replica}"
    return f"⚠️ live state unavailable: {esc(live.unavailable or 'not read')}"


def _finding_line(f: Finding) -> str:
    return f"{SEVERITY_MARK[f.severity]} *{esc(f.title)}* ({f.severity.label})"


def _seconds(start: datetime, end: datetime) -> float:
    return (utc(end) - utc(start)).total_seconds()


def _alert_line(alert: AlertView, now: datetime, prefix: str = "") -> str:
    if alert.status is GroupStatus.RESOLVED:
        took = fmt_span(_seconds(alert.starts_at, alert.ends_at or now))
        return f"{RESOLVED_MARK} {prefix}*{esc(alert.name)}* on {_where(alert)}: resolved after {took}"
    now_part = f": {esc(alert.diagnosis.now)}" if alert.diagnosis else ""
    mark, since = SEVERITY_MARK[alert.severity], fmt_ago(alert.starts_at, now)
    return f"{mark} {prefix}*{esc(alert.name)}* on {_where(alert)}, since {since}{now_part}"


# -- changes, command answers ---------------------------------------------------------------------


def change_reply(change: GroupChange, now: datetime, *, quiet: float | None = None) -> Message:
    """The short thread reply saying what changed in a group: new alerts, resolved ones. A group firing
    again after `quiet` seconds resolved (longer than a flap) says so first, and is also shown in the
    channel: its message sits far up it by then."""
    lines = [_alert_line(a, now, "New: ") for a in change.new]
    lines += [f"{RESOLVED_MARK} Resolved: *{esc(a.name)}* on {_where(a)}" for a in change.resolved]
    if change.group_status is GroupStatus.RESOLVED and change.started_at is not None:
        ended = change.ended_at or change.at  # the message's own "Resolved after" counts to the same end
        lines.append(f"All resolved after {fmt_span(_seconds(change.started_at, ended))}.")
    parts = [f"{len(change.new)} new"] if change.new else []
    parts += [f"{len(change.resolved)} resolved"] if change.resolved else []
    summary = ", ".join(parts) or "no change"
    if quiet is None:
        return message(summary, [section_lines(_top(lines) or [summary])])
    again = f"Firing again, {fmt_span(quiet)} after it resolved"
    shown = message(f"{again}: {summary}", [section_lines([f"*{again}:*", *_top(lines)])])
    return replace(shown, broadcast=True)


def findings_message(report: FindingsReport, now: datetime) -> Message:
    """A command's answer: worst findings in full, the rest one line each, notes, and the live read."""
    ordered = sort_worst_first(list(report.findings))
    full = [f for f in ordered if f.severity >= Severity.WARNING][: DETAILED_ALERTS * 2]
    body: list[Block] = [header(f"{SEVERITY_MARK[report.severity]} {report.title}")]
    if report.lead:
        body.append(section_lines([esc(line) for line in report.lead]))
    body.append(section(_counts_line(ordered)))
    body.extend(section_lines(finding_lines(f)) for f in full)
    rest = [_finding_line(f) for f in ordered if f not in full]
    if rest:
        body.append(section_lines(_top(rest)))
    if report.notes:
        body.append(section_lines([esc(n) for n in report.notes]))
    items = [live_line(report.live, now)]
    if report.cluster:
        items.append(f"cluster {code(report.cluster)}")
    top = f": {esc(ordered[0].title)}" if ordered else ""
    return message(f"{esc(report.title)} — {report.severity.label}{top}", body, [context(items)])


def _counts_line(findings: Sequence[Finding]) -> str:
    if not findings:
        return "No findings."
    per = {s: sum(1 for f in findings if f.severity is s) for s in sorted(Severity, reverse=True)}
    shown = ", ".join(f"{n} {s.label}" for s, n in per.items() if n)
    return f"*{counted(len(findings), 'finding')}:* {shown}"


def finding_lines(f: Finding) -> list[str]:
    """One finding in full: title, evidence, likely cause, next step, guide section."""
    return [
        _finding_line(f),
        *(f"• {esc(e)}" for e in f.evidence),
        f"*Likely cause:* {esc(f.cause)}",
        f"*Next step:* {esc(f.next_step)}",
        f"*Guide:* _{esc(f.guide_section)}_",
    ]
