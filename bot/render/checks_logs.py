"""Log evidence in words: the logs check's answer (Slack; the CLI shows the same message in the terminal),
and the lines it adds to an alert's evidence.

Log text comes from pods, so it is untrusted: it reaches here already redacted and goes through
`esc`/`code` in Block Kit; the alert lines are plain text, which the alert renderer escapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from bot.domain.diagnosis import AlertDiagnosis
from bot.domain.enrichment import Unavailable
from bot.domain.findings import Severity
from bot.domain.log_reference import PLACEHOLDER_NOTE, LogEvidence, LogMatch
from bot.domain.logs_result import LogsResult
from bot.render.blocks import Block, Message, code, context, esc, fmt_clock, header, message, section
from bot.render.enrichment import prometheus_unavailable
from bot.render.slack import SEVERITY_MARK
from bot.render.words import counted

ALERT_MATCHES = 4  # matches an alert shows; the logs check shows them all
LINE_SHOWN = 300  # characters of a matched line quoted


def _when(m: LogMatch) -> str:
    if m.last_at is None:
        return ""
    if m.first_at is None or m.count == 1 or m.first_at == m.last_at:
        return f"at {fmt_clock(m.last_at)}"
    return f"{fmt_clock(m.first_at)} → {fmt_clock(m.last_at)}"


def _pods_read(ev: LogEvidence) -> str:
    read = [p for p in ev.pods if p.error is None]
    return f"{ev.scope} of {counted(len(read), 'pod')}" + (
        f" of {len(ev.pods)}" if len(read) < len(ev.pods) else ""
    )


def _cut(text: str, limit: int = LINE_SHOWN) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


# -- an alert's evidence -------------------------------------------------------------------------------


def _per_pod(matches: Sequence[LogMatch]) -> list[str]:
    """`pod: label (N lines); label (N lines)`, each pod once, in the matches' order."""
    pods: dict[str, list[str]] = {}
    for m in matches:
        pods.setdefault(m.pod, []).append(f"{m.reference.label} ({counted(m.count, 'line')})")
    return [f"{pod}: " + "; ".join(found) for pod, found in pods.items()]


def evidence_lines(ev: LogEvidence) -> str:
    """The alert's one evidence entry about the logs, counted, not quoted: what was read, then the worst
    matches, each with its count (their meaning, details and lines are `proxybot logs TARGET`'s)."""
    if ev.unavailable is not None:
        return f"Control-plane logs: unavailable: {ev.unavailable}"
    head = f"Control-plane logs ({_pods_read(ev)} in {ev.namespace})"
    failed = [f"{p.pod}: not read: {p.error}" for p in ev.pods if p.error is not None]
    if not ev.matches:
        return "; ".join([f"{head}: no line of the vendor's log reference", *failed])
    shown = _per_pod(ev.matches[:ALERT_MATCHES])
    more = len(ev.matches) - ALERT_MATCHES
    tail = f" (+{more} more: proxybot logs {ev.target})" if more > 0 else ""
    return f"{head}: " + "; ".join([*shown, *failed]) + tail


def logs_unavailable(missed: Unavailable) -> str:
    return f"Control-plane logs: unavailable: {prometheus_unavailable(missed)}"


def with_logs(diagnosis: AlertDiagnosis, evidence: LogEvidence | Unavailable | None) -> AlertDiagnosis:
    """The diagnosis with what the control-plane logs say about its target (or why they say nothing)."""
    if evidence is None:
        return diagnosis
    line = logs_unavailable(evidence) if isinstance(evidence, Unavailable) else evidence_lines(evidence)
    return replace(diagnosis, now_evidence=(*diagnosis.now_evidence, line))


# -- the logs check ------------------------------------------------------------------------------------


def _match_block(m: LogMatch) -> Block:
    when = _when(m)
    lines_on = f"{counted(m.count, 'line')} on {code(m.pod)}"
    head = f"{SEVERITY_MARK[m.reference.severity]} *{esc(m.reference.label)}*: {lines_on}"
    lines = [
        head + (f" · {when}" if when else ""),
        esc(m.reference.meaning[:1].upper() + m.reference.meaning[1:]) + ".",
    ]
    if m.details:
        lines.append(" · ".join(code(d) for d in m.details))
    lines.append(f"*Action:* {esc(m.reference.action)}")
    lines.append(f"Last: {code(_cut(m.last_line))}")
    return section("\n".join(lines))


def _title(result: LogsResult) -> str:
    ev = result.evidence
    if ev.unavailable is not None:
        return f"🟠 Logs of {ev.target}: not read"
    worst = ev.severity
    bad = [m for m in ev.matches if m.reference.severity >= Severity.WARNING]
    if not bad:
        return f"{SEVERITY_MARK[Severity.OK]} Logs of {ev.target}: nothing the log reference calls for action"
    kinds = len({m.reference.key for m in bad})
    verb = "calls" if kinds == 1 else "call"
    messages = counted(kinds, "message")
    return f"{SEVERITY_MARK[worst]} Logs of {ev.target}: {messages} of the log reference {verb} for action"


def logs_message(result: LogsResult) -> Message:
    """Every matched entry per pod, worst first, with meaning and action; what could not be read."""
    ev = result.evidence
    body: list[Block] = [header(_title(result))]
    if ev.unavailable is not None:
        body.append(section(esc(f"Not read: {ev.unavailable}")))
    else:
        read = ", ".join(f"{code(p.pod)} ({counted(p.lines, 'line')})" for p in ev.pods if p.error is None)
        body.append(section(f"*Read:* {read or 'no pod'} · {esc(ev.scope)} · namespace {code(ev.namespace)}"))
        body += [section(f"🟠 {code(p.pod)} not read: {esc(p.error)}") for p in ev.pods if p.error]
        body += [_match_block(m) for m in ev.matches]
        if not ev.matches:
            body.append(section("No line of the vendor's log reference in what was read."))
        if any(m.placeholder_host for m in ev.matches):
            body.append(section(esc(PLACEHOLDER_NOTE)))
    notes = [
        f"cluster {code(result.cluster)}",
        "In HA every replica runs its own proxy and logs for itself: each pod is read.",
    ]
    return message(f"{_title(result)} ({ev.scope})", body, [context(notes)])
