"""Neutral message content -> Slack Block Kit: alert groups, their changes, command answers (storms:
`bot.render.storm`).

All the words proxybot says in Slack live here. Every value that comes from outside (labels,
annotations, diagnosis text quoting them) goes through `esc`/`code`; `blocks.message` keeps the result
within Slack's limits. Times are UTC and relative to an injected `now`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from bot.domain.alert_standing import Standing
from bot.domain.findings import Finding, Severity, sort_worst_first
from bot.domain.messages import (
    AlertGroupView,
    AlertView,
    FindingsReport,
    GroupChange,
    GroupStatus,
    LiveRead,
)
from bot.render.blocks import (
    Block,
    Button,
    Message,
    actions,
    code,
    context,
    esc,
    fields,
    fmt_ago,
    fmt_clock,
    fmt_since,
    fmt_span,
    fmt_time,
    header,
    message,
    section,
    section_lines,
    utc,
)
from bot.render.verdict import verdict_short

ACTION_PROBE = "proxy_probe"
ACTION_PATH = "proxy_path"
ACTION_SILENCE = "proxy_silence"
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
STANDING_WORDS = {
    Standing.STILL_BROKEN: "still broken",
    Standing.RECOVERING: "recovering",
    Standing.RECOVERED: "recovered",
    Standing.UNKNOWN: "unclear",
}


# -- small pieces ----------------------------------------------------------------------------------


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _top(lines: Sequence[str], n: int = LIST_LINES) -> list[str]:
    return [*lines[:n], f"… +{len(lines) - n} more"] if len(lines) > n else list(lines)


def _codes(values: Iterable[str | None], n: int = 3) -> str:
    distinct = sorted({v for v in values if v})
    if not distinct:
        return "—"
    shown = ", ".join(code(v) for v in distinct[:n])
    return shown + (f" +{len(distinct) - n} more" if len(distinct) > n else "")


def _where(alert: AlertView) -> str:
    gv = f" ({code(alert.group_version)})" if alert.group_version else ""
    return f"{code(alert.target)}{gv}" if alert.target else "no target label"


def _live_line(live: LiveRead, now: datetime) -> str:
    if live.ok and live.read_at is not None:
        replica = f" from replica {code(live.replica)}" if live.replica else ""
        return f"Live state read {fmt_clock(live.read_at)} ({fmt_ago(live.read_at, now)}){replica}"
    return f"⚠️ live state unavailable: {esc(live.unavailable or 'not read')}"


def _finding_line(f: Finding) -> str:
    return f"{SEVERITY_MARK[f.severity]} *{esc(f.title)}* ({f.severity.label})"


def _findings_of(alerts: Iterable[AlertView]) -> list[Finding]:
    found = {f.key: f for a in alerts if a.diagnosis for f in a.diagnosis.findings}
    return sort_worst_first(list(found.values()))


def _seconds(start: datetime, end: datetime) -> float:
    return (utc(end) - utc(start)).total_seconds()


def _alert_line(alert: AlertView, now: datetime, prefix: str = "") -> str:
    if alert.status is GroupStatus.RESOLVED:
        took = fmt_span(_seconds(alert.starts_at, alert.ends_at or now))
        return f"{RESOLVED_MARK} {prefix}*{esc(alert.name)}* on {_where(alert)}: resolved after {took}"
    now_part = f": {esc(alert.diagnosis.now)}" if alert.diagnosis else ""
    mark, since = SEVERITY_MARK[alert.severity], fmt_ago(alert.starts_at, now)
    return f"{mark} {prefix}*{esc(alert.name)}* on {_where(alert)}, since {since}{now_part}"


# -- alert groups ----------------------------------------------------------------------------------


def alert_group_message(view: AlertGroupView, now: datetime) -> Message:
    """The one message of an alert group: firing with diagnosis and buttons, or its resolved form."""
    if view.status is GroupStatus.RESOLVED:
        return resolved_message(view, now)
    firing = sorted(view.firing, key=lambda a: (-a.severity, a.name, a.target or ""))
    detailed = _distinct(firing)[:DETAILED_ALERTS]
    body: list[Block] = [header(_title(view)), section_lines(_summary_lines(view, now))]
    for alert in detailed:
        body.extend(_alert_blocks(alert))
    rest = _others([*firing, *view.alerts], detailed)
    if rest:
        body.append(section_lines(["*Also in this group*", *_top([_alert_line(a, now) for a in rest])]))
    findings = _findings_of(view.alerts)
    if findings:
        body.append(section_lines(["*Findings*", *_top([_finding_line(f) for f in findings])]))
    tail = [context(_context_items(view, now)), actions(_buttons(view, firing=True), ACTIONS_BLOCK_ID)]
    return message(_fallback(view), body, tail)


def resolved_message(view: AlertGroupView, now: datetime) -> Message:
    """The group's message once every alert resolved: how long it lasted, what it was, last reading."""
    ended = view.resolved_at or max((a.ends_at for a in view.alerts if a.ends_at), default=now)
    took = fmt_span(_seconds(view.started_at, ended))
    lines = [
        f"*Resolved after {took}* ({fmt_time(view.started_at)} → {fmt_time(ended)})",
        *_place_lines(view),
    ]
    last = next((a.diagnosis for a in view.alerts if a.diagnosis and a.diagnosis.live), None)
    if last is not None:
        lines.append(f"*Last live reading:* {esc(last.now)}")
    body = [
        header(_title(view)),
        section_lines(lines),
        section_lines(_top([_alert_line(a, now) for a in view.alerts])),
    ]
    tail = [context(_context_items(view, now)), actions(_buttons(view, firing=False), ACTIONS_BLOCK_ID)]
    return message(f"{_fallback(view)} after {took}", body, tail)


def _others(alerts: Sequence[AlertView], shown: Sequence[AlertView]) -> list[AlertView]:
    """`alerts` minus those `shown`, each once, in order (views hold dicts: compare by identity)."""
    seen = {id(a) for a in shown}
    out = []
    for a in alerts:
        if id(a) not in seen:
            seen.add(id(a))
            out.append(a)
    return out


def _distinct(alerts: Sequence[AlertView]) -> list[AlertView]:
    """One alert per (name, target, group/version): HA replicas firing the same thing explain it once."""
    seen: dict[tuple[str, str | None, str | None], AlertView] = {}
    for a in alerts:
        seen.setdefault((a.name, a.target, a.group_version), a)
    return list(seen.values())


def _title(view: AlertGroupView) -> str:
    names = view.names() or ["alert"]
    more = f" +{len(names) - 1} more" if len(names) > 1 else ""
    targets = {a.target for a in view.alerts if a.target}
    where = f" · {targets.pop()}" if len(targets) == 1 else ""
    if view.status is GroupStatus.RESOLVED:
        return f"{RESOLVED_MARK} RESOLVED: {names[0]}{more}{where}"
    return f"{SEVERITY_MARK[view.severity]} FIRING: {names[0]}{more}{where}"


def _place_lines(view: AlertGroupView) -> list[str]:
    pods = {a.pod for a in view.alerts if a.pod}
    read = view.live.replica
    replica = code(read) if read else "—"
    if read and pods and read not in pods:
        replica += " (not the alerting pod)"
    return [
        f"*Cluster:* {code(view.cluster) if view.cluster else 'no configured cluster matched'}"
        f" · *Target:* {_codes(a.target for a in view.alerts)}"
        f" · *Group/version:* {_codes(a.group_version for a in view.alerts)}",
        f"*Pod:* {_codes(pods)} · *Replica read:* {replica}",
    ]


def _summary_lines(view: AlertGroupView, now: datetime) -> list[str]:
    firing = len(view.firing)
    resolved = len(view.alerts) - firing
    counts = f"{firing} firing" + (f", {resolved} resolved" if resolved else "")
    return [*_place_lines(view), f"*Since:* {fmt_since(view.started_at, now)} · *Alerts:* {counts}"]


def _alert_blocks(alert: AlertView) -> list[Block]:
    d = alert.diagnosis
    head = f"*{esc(alert.name)}* on {_where(alert)} · {alert.severity.label}"
    if d is None or not d.known:
        return _plain_alert_blocks(alert, head)
    lines = [
        head,
        *([f"*Verdict:* {esc(verdict_short(d.verdict))}"] if d.verdict else []),
        f"*What it means:* {esc(d.meaning)}",
        f"*Now:* {STANDING_WORDS[d.standing]}: {esc(d.now)}",
        f"*Likely cause:* {esc(d.cause)}",
        f"*Next step:* {esc(d.next_step)}",
    ]
    if d.guide_section:
        lines.append(f"*Guide:* _{esc(d.guide_section)}_")
    lines.extend(f"*Watch out:* {esc(t)}" for t in d.traps)
    blocks = [section_lines(lines)]
    if d.now_evidence:
        blocks.append(fields([esc(e) for e in d.now_evidence]))
    return blocks


def _plain_alert_blocks(alert: AlertView, head: str) -> list[Block]:
    """An alert the catalogue does not know: posted as received, never dropped."""
    lines = [head, "_Not one of the guide's proxy alerts: shown as Alertmanager sent it._"]
    for key in ("summary", "description"):
        if alert.annotations.get(key):
            lines.append(f"*{key.capitalize()}:* {esc(alert.annotations[key])}")
    if alert.diagnosis is not None:
        lines.append(f"*Live:* {esc(alert.diagnosis.now)}")
    labels = [f"*{esc(k)}*\n{esc(v)}" for k, v in sorted(alert.labels.items()) if k != "alertname"]
    return [section_lines(lines), *([fields(labels)] if labels else [])]


def _context_items(view: AlertGroupView, now: datetime) -> list[str]:
    items = [_live_line(view.live, now), f"updated {fmt_clock(now)}"]
    if view.truncated_alerts > 0:
        left = _n(view.truncated_alerts, "more alert")
        items.append(f"Alertmanager left {left} out of this notification")
    return items


def _buttons(view: AlertGroupView, *, firing: bool) -> list[Button]:
    value = view.action_ref().encode()
    found = [Button("Probe now", ACTION_PROBE, value), Button("Path check", ACTION_PATH, value)]
    if firing:
        found.append(Button("Silence 1h", ACTION_SILENCE, value))
    return found


def _fallback(view: AlertGroupView) -> str:
    names = ", ".join(esc(n) for n in view.names()[:3]) or "alert"
    targets = sorted({a.target for a in view.alerts if a.target})
    where = f" on {esc(targets[0])}" if targets else ""
    where += f" +{len(targets) - 1} more" if len(targets) > 1 else ""
    cluster = f" ({esc(view.cluster)})" if view.cluster else ""
    return f"{view.status.value.upper()}: {names}{where}{cluster}"


# -- changes, command answers ----------------------------------------------------------------------


def change_reply(change: GroupChange, now: datetime) -> Message:
    """The short thread reply saying what changed in a group: new alerts, resolved ones."""
    lines = [_alert_line(a, now, "New: ") for a in change.new]
    lines += [f"{RESOLVED_MARK} Resolved: *{esc(a.name)}* on {_where(a)}" for a in change.resolved]
    if change.group_status is GroupStatus.RESOLVED and change.started_at is not None:
        lines.append(f"All resolved after {fmt_span(_seconds(change.started_at, change.at))}.")
    parts = [f"{len(change.new)} new"] if change.new else []
    parts += [f"{len(change.resolved)} resolved"] if change.resolved else []
    summary = ", ".join(parts) or "no change"
    return message(summary, [section_lines(_top(lines) or [summary])])


def findings_message(report: FindingsReport, now: datetime) -> Message:
    """A command's answer: worst findings in full, the rest one line each, notes, and the live read."""
    ordered = sort_worst_first(list(report.findings))
    full = [f for f in ordered if f.severity >= Severity.WARNING][: DETAILED_ALERTS * 2]
    body: list[Block] = [header(f"{SEVERITY_MARK[report.severity]} {report.title}")]
    if report.lead:
        body.append(section_lines([esc(line) for line in report.lead]))
    body.append(section(_counts_line(ordered)))
    body.extend(section_lines(_finding_lines(f)) for f in full)
    rest = [_finding_line(f) for f in ordered if f not in full]
    if rest:
        body.append(section_lines(_top(rest)))
    if report.notes:
        body.append(section_lines([esc(n) for n in report.notes]))
    items = [_live_line(report.live, now)]
    if report.cluster:
        items.append(f"cluster {code(report.cluster)}")
    top = f": {esc(ordered[0].title)}" if ordered else ""
    return message(f"{esc(report.title)} — {report.severity.label}{top}", body, [context(items)])


def _counts_line(findings: Sequence[Finding]) -> str:
    if not findings:
        return "No findings."
    per = {s: sum(1 for f in findings if f.severity is s) for s in sorted(Severity, reverse=True)}
    shown = ", ".join(f"{n} {s.label}" for s, n in per.items() if n)
    return f"*{_n(len(findings), 'finding')}:* {shown}"


def _finding_lines(f: Finding) -> list[str]:
    return [
        _finding_line(f),
        *(f"• {esc(e)}" for e in f.evidence),
        f"*Likely cause:* {esc(f.cause)}",
        f"*Next step:* {esc(f.next_step)}",
        f"*Guide:* _{esc(f.guide_section)}_",
    ]
