"""The fleet digest as a Slack message (worst first; a short line when all is well), in the terminal, as PNGs.

Layout: a header with the headline and the quick-triage verdicts counted, the alerts firing now (each a
link to its message, worst then oldest first, at most `FIRING_LINES`), then degraded targets with their
finding, verdict and next step, unreachable clusters with their targets, what changed since the last digest,
the probe CronJobs, the proxy objects (APIServices, orphans) and version flags, the outcome reasons that
moved, and in words each chart with nothing to show (those are not posted). A quiet digest is the header
and one context line (with the vCluster versions seen), and the alerts firing now when there are any.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.domain.diagnosis_readings import fmt_count
from bot.domain.digest import Change, Digest, FiringAlert, Health, ProbeRun, ReasonMove, TargetDigest
from bot.domain.findings import Severity
from bot.domain.moments import from_epoch
from bot.domain.verdict import Verdict
from bot.render.blocks import (
    Block,
    Message,
    code,
    context,
    esc,
    fmt_span,
    fmt_time,
    header,
    message,
    section_lines,
)
from bot.render.chart import Chart, draw
from bot.render.digest_oncall import oncall_blocks
from bot.render.slack import BLAST_MARK, SEVERITY_MARK
from bot.render.verdict import VERDICT_MARK, verdict_short
from bot.render.words import counted

DETAILED = 15  # degraded targets shown with finding and next step; the rest one line each
LIST_LINES = 12
FIRING_LINES = 10
HEALTH_MARK = {Health.UNREACHABLE: "⚫", Health.DEGRADED: "🟠", Health.HEALTHY: "✅"}


def _top(lines: Sequence[str], n: int = LIST_LINES) -> list[str]:
    return [*lines[:n], f"… +{len(lines) - n} more"] if len(lines) > n else list(lines)


def headline(d: Digest) -> str:
    """Counted by target: a target several clients use is one, as its worst client sees it."""
    health = list(d.target_health().values())
    total = len(health)
    if d.quiet:
        return f"Proxy fleet digest: all {counted(total, 'target')} healthy"
    parts = [f"{health.count(Health.DEGRADED)} degraded", f"{health.count(Health.UNREACHABLE)} unreachable"]
    return f"Proxy fleet digest: {', '.join(parts)}, {health.count(Health.HEALTHY)} of {total} healthy"


def _shared_blocks(d: Digest) -> list[Block]:
    """Each target several clients use that some client cannot use well: every client and its state."""
    lines = []
    for name, readings in d.shared().items():
        if all(r.health is Health.HEALTHY for r in readings):
            continue
        hit = [r for r in readings if r.health is not Health.HEALTHY]
        each = " · ".join(f"{code(r.cluster)} {_state(r)}" for r in readings)
        lines.append(f"{BLAST_MARK} {code(name)}: {len(hit)} of {len(readings)} clients hit: {each}")
    return [section_lines(["*Shared targets*", *_top(lines)])] if lines else []


def _state(r: TargetDigest) -> str:
    if r.health is Health.HEALTHY:
        return "✅ healthy"
    if r.health is Health.UNREACHABLE:
        return f"{SEVERITY_MARK[Severity.CRITICAL]} not read"
    return f"{SEVERITY_MARK[r.findings[0].severity]} {esc(r.findings[0].title)}" if r.findings else "degraded"


def _mark(d: Digest) -> str:
    return "✅" if d.quiet else SEVERITY_MARK[d.severity]


def _degraded_lines(t: TargetDigest) -> list[str]:
    worst = t.findings[0]
    more = f" (+{counted(len(t.findings) - 1, 'more finding')})" if len(t.findings) > 1 else ""
    lines = [
        f"{SEVERITY_MARK[worst.severity]} *{code(t.target)}* on {code(t.cluster)}: {esc(worst.title)}{more}",
    ]
    step = worst.next_step
    if t.verdict is not None:
        lines.append(f"    _Verdict:_ {esc(verdict_short(t.verdict))}")
        if t.verdict.verdict not in (Verdict.HEALTHY, Verdict.UNKNOWN):
            step = t.verdict.next_step  # the triage knows which side to fix first
    return [*lines, f"    _Next:_ {esc(step)}"]


def _firing_line(a: FiringAlert, now: float) -> str:
    name = esc(a.name)
    shown = name if a.link is None else f"<{a.link}|{name}>"
    more = f" ({counted(a.alerts, 'alert')})" if a.alerts > 1 else ""
    target = f" · {code(a.target)}" if a.target else ""
    return f"{SEVERITY_MARK[a.severity]} {shown}{more}{target} · for {fmt_span(now - a.since)}"


def _firing_blocks(d: Digest) -> list[Block]:
    """The alert groups firing now, each a link to its message (its thread has the detail)."""
    if not d.firing:
        return []
    lines = [_firing_line(a, d.at) for a in d.firing]
    return [section_lines(["*Firing now*", *_top(lines, FIRING_LINES)])]


def _verdict_tally(d: Digest) -> list[Block]:
    """How many targets each verdict covers, broken ones first (none when no verdict was judged)."""
    # Per target, as the headline counts them: a shared target's worst client's verdict.
    worst: dict[str, Verdict] = {}
    for t in d.targets:
        if t.verdict is not None:
            seen = worst.get(t.target)
            worst[t.target] = t.verdict.verdict if seen is None else min(seen, t.verdict.verdict, key=_rank)
    found = list(worst.values())
    if not found:
        return []
    order = sorted(set(found), key=_rank)
    parts = [f"{VERDICT_MARK[v]} {v.value} {found.count(v)}" for v in order]
    return [section_lines([f"*Quick triage:* {' · '.join(parts)}"])]


def _rank(v: Verdict) -> tuple[bool, bool, str]:
    """Broken verdicts first, then unknown, then healthy (the tally's order)."""
    return (v is Verdict.HEALTHY, v is Verdict.UNKNOWN, v.value)


def _triage_blocks(d: Digest) -> list[Block]:
    shown = [f for f in d.triage_findings if f.severity >= Severity.INFO]
    if not shown:
        return []
    lines = [f"{SEVERITY_MARK[f.severity]} {esc(f.title)}" for f in shown]
    tail = "_`/proxy status` shows the next step of each (for an orphan, its removal steps)._"
    return [section_lines(["*Proxy objects and vCluster versions*", *_top(lines), tail])]


def _versions_item(d: Digest) -> list[str]:
    # Each tenant once: a target several clients use is read through each of them.
    tenants = list({(v.role, v.name): v for v in d.versions}.values())
    known = [v.version for v in tenants if v.version is not None]
    if not tenants:
        return []
    seen = ", ".join(
        f"{v} on {counted(known.count(v), 'tenant cluster')}" for v in sorted(set(known), reverse=True)
    )
    unknown = len(tenants) - len(known)
    return [f"vCluster versions: {seen or 'none read'}" + (f", {unknown} unknown" if unknown else "")]


def _degraded_blocks(targets: Sequence[TargetDigest]) -> list[Block]:
    if not targets:
        return []
    lines = ["*Degraded, worst first*"]
    for t in targets[:DETAILED]:
        lines += _degraded_lines(t)
    rest = [f"• {code(t.target)}: {esc(t.findings[0].title)}" for t in targets[DETAILED:]]
    return [section_lines([*lines, *_top(rest)])]


def _unreachable_blocks(targets: Sequence[TargetDigest]) -> list[Block]:
    if not targets:
        return []
    by_cluster: dict[str, list[TargetDigest]] = {}
    for t in targets:
        by_cluster.setdefault(t.cluster, []).append(t)
    lines = [
        f"⚫ {code(cluster)} ({counted(len(ts), 'target')}): {esc(ts[0].unavailable or 'not read')}"
        for cluster, ts in sorted(by_cluster.items())
    ]
    return [section_lines(["*Unreachable client clusters*", *_top(lines)])]


def _change_line(c: Change) -> str:
    before = c.before.value if c.before is not None else "new"
    return f"{HEALTH_MARK[c.after]} {code(c.target)}: {before} → *{c.after.value}*"


def _changes_blocks(d: Digest) -> list[Block]:
    if not d.changes:
        return []
    since = "" if d.previous_at is None else f" ({fmt_time(from_epoch(d.previous_at))})"
    return [
        section_lines(
            [f"*Changed since the last digest{since}*", *_top([_change_line(c) for c in d.changes])]
        )
    ]


def _probe_line(p: ProbeRun) -> str:
    age = (
        "never succeeded"
        if p.last_success_age is None
        else f"last success {fmt_span(p.last_success_age)} ago"
    )
    mark = "✅" if p.ok else "🔴"
    return f"{mark} {code(p.cluster)}: {age}" + ("" if p.ok else f" — {esc(p.summary)}")


def _probe_blocks(probes: Sequence[ProbeRun]) -> list[Block]:
    failing = [p for p in probes if not p.ok]
    if not failing:
        return []
    return [section_lines(["*Probe CronJobs not succeeding*", *_top([_probe_line(p) for p in failing])])]


def _move_line(m: ReasonMove) -> str:
    scope = (
        "since the last digest" if m.since_last_digest else f"in the last {fmt_span(m.window_seconds or 0)}"
    )
    return f"• {code(m.target)} {esc(m.family)} {code(m.reason)}: +{fmt_count(m.count)} {scope}"


def _moved_blocks(moved: Sequence[ReasonMove]) -> list[Block]:
    if not moved:
        return []
    return [section_lines(["*Proxy-fault reasons that moved*", *_top([_move_line(m) for m in moved])])]


def _context(d: Digest, notes: Sequence[str]) -> Block:
    items = [f"{counted(len(d.cluster_seconds), 'client cluster')} read {fmt_time(from_epoch(d.at))}"]
    ok = [p for p in d.probes if p.ok]
    if ok:
        oldest = fmt_span(max(p.last_success_age or 0.0 for p in ok))
        items.append(f"probe CronJobs succeeding: {len(ok)} of {len(d.probes)} (oldest success {oldest} ago)")
    items += [esc(item) for item in _versions_item(d)]
    if d.previous_at is None:
        items.append("first digest: no earlier one to compare with")
    return context([*items, *(esc(n) for n in notes)])


def _absent_blocks(charts: Sequence[Chart]) -> list[Block]:
    """What the charts not posted would have shown, said instead."""
    said = [esc(chart.absent) for chart in charts if chart.absent is not None]
    return [section_lines(said)] if said else []


def digest_message(d: Digest, notes: Sequence[str] = (), charts: Sequence[Chart] = ()) -> Message:
    """The digest for Slack: worst first; a quiet digest is only its header and a context line (and the
    words of `charts` that have nothing to show)."""
    title = f"{_mark(d)} {headline(d)}"
    if d.quiet:
        calm = [header(title), *_firing_blocks(d), *oncall_blocks(d.oncall), *_absent_blocks(charts)]
        return message(title, calm, [_context(d, notes)])
    body: list[Block] = [header(title), *_verdict_tally(d), *_firing_blocks(d), *oncall_blocks(d.oncall)]
    body += _shared_blocks(d)
    body += _degraded_blocks(d.of(Health.DEGRADED))
    body += _unreachable_blocks(d.of(Health.UNREACHABLE))
    body += _changes_blocks(d)
    body += _probe_blocks(d.probes)
    body += _triage_blocks(d)
    body += _moved_blocks(d.moved)
    body += _absent_blocks(charts)
    return message(title, body, [_context(d, notes)])


# -- charts ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChartPng:
    """One rendered chart, ready for `files_upload_v2`."""

    filename: str
    title: str
    png: bytes


def chart_pngs(charts: Sequence[Chart]) -> list[ChartPng]:
    """Each chart with something to show as a PNG (matplotlib, no display), named after the chart; the
    others are said in the message (`digest_message`'s `charts`)."""
    return [
        ChartPng(f"digest-{chart.key}.png", chart.title, draw(chart))
        for chart in charts
        if chart.absent is None
    ]
