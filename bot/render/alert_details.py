"""The details reply of an alert group: everything its compact message leaves out, in one thread reply
posted with the first message and edited in place as the group changes (never a reply per update). A group
that joined an incident has its own, in the incident message's thread (`member_details_reply`), headed by
what joined and the shared cause.

In order: the peer caches as read, per replica; each alert of the group (HA replicas firing the same
alert on the same cache explained once): the verdict with what it rests on, how it stands now and the
evidence (live readings, Prometheus' reason counts and quantiles, the control plane's log lines, each
line once), the likely cause and next step; what each alert name means and every trap; every finding in
full; and the meaning of every outcome reason named above.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from bot.domain.alert_summary import PeerReading
from bot.domain.diagnosis_readings import fmt_count
from bot.domain.findings import Finding, sort_worst_first
from bot.domain.incident import Cause
from bot.domain.messages import AlertGroupView, AlertView, GroupStatus
from bot.domain.reasons import REASONS
from bot.render.alert_message import title
from bot.render.blocks import Block, Message, code, context, esc, fmt_clock, message, section_lines
from bot.render.incident import join_lines
from bot.render.slack import (
    RESOLVED_MARK,
    SEVERITY_MARK,
    STANDING_WORDS,
    alert_subject,
    finding_lines,
    live_line,
)
from bot.render.verdict import verdict_short

DETAILED = 8  # alerts of a group explained in full; the rest listed one line each
_WORD = re.compile(r"[a-z]+(?:_[a-z]+)+")  # reason-like words (`stale_peers`): plain words are English
_BREAKDOWN = re.compile(r"by reason \([^)]*\): (.*)")  # Prometheus' "Requests by reason (...): a 3, b 1"
_COUNTED = re.compile(r"\b([a-z_]+) [0-9]")


def member_details_reply(view: AlertGroupView, cause: Cause | None, now: datetime) -> Message:
    """The details reply of a group that joined an incident, in the incident message's thread: what
    joined and the shared cause, then its details as `details_reply` gives them (its only reply there)."""
    return details_reply(view, now, intro=join_lines(view, cause, now))


def details_reply(view: AlertGroupView, now: datetime, *, intro: Sequence[str] = ()) -> Message:
    """The group's details reply: every finding, reading and piece of evidence, as of `now`; `intro`
    lines (written by the caller, outside text escaped) right under its header."""
    alerts = _distinct(sorted(view.alerts, key=lambda a: (a.status is not GroupStatus.FIRING, -a.severity)))
    head = [
        f"*Details:* {esc(title(view))}",
        f"{live_line(view.live, now)} · updated {fmt_clock(now)} · edited in place as the group changes",
    ]
    body: list[Block] = [section_lines(head)]
    if intro:
        body.append(section_lines(list(intro)))
    if view.peers:
        body.append(section_lines(["*Peer caches read*", *(_peer_line(r) for r in view.peers)]))
    shown: set[str] = set()
    for alert in alerts[:DETAILED]:
        body.append(section_lines(_alert_lines(alert, shown)))
    if len(alerts) > DETAILED:
        rest = [_alert_head(a) for a in alerts[DETAILED:]]
        body.append(section_lines([f"*{len(rest)} more alerts*", *rest]))
    body.extend(_meanings(alerts))
    findings = _findings(view)
    body.extend(section_lines(finding_lines(f)) for f in findings)
    reasons = _reasons(view, findings)
    if reasons:
        body.append(section_lines(["*Outcome reasons named here*", *reasons]))
    fallback = f"Details: {view.status.value} {', '.join(esc(n) for n in view.names()[:3])}"
    return message(fallback, body, [context([f"updated {fmt_clock(now)}"])])


def _distinct(alerts: Sequence[AlertView]) -> list[AlertView]:
    """One alert per (name, target, group/version, status): HA replicas firing alike explain it once."""
    seen: dict[tuple[str, str | None, str | None, GroupStatus], AlertView] = {}
    for a in alerts:
        seen.setdefault((a.name, a.target, a.group_version, a.status), a)
    return list(seen.values())


def _peer_line(r: PeerReading) -> str:
    synced = {True: "synced", False: "*not synced*", None: "synced unknown"}[r.synced]
    replica = f" replica {code(r.replica)}" if r.replica else ""
    return (
        f"• {code(r.target)} {code(r.group_version)}{replica}: healthy {fmt_count(r.healthy)}, "
        f"quarantined {fmt_count(r.quarantined)}, half_open {fmt_count(r.half_open)}, {synced}"
    )


def _alert_head(a: AlertView) -> str:
    mark = RESOLVED_MARK if a.status is GroupStatus.RESOLVED else SEVERITY_MARK[a.severity]
    where = alert_subject(a)
    gv = f" {code(a.group_version)}" if a.group_version else ""
    pod = f" · pod {code(a.pod)}" if a.pod else ""
    return f"{mark} *{esc(a.name)}* on {where}{gv}{pod} · {a.status.value}"


def _alert_lines(a: AlertView, shown: set[str]) -> list[str]:
    """One alert in full; evidence, causes and steps already written above (`shown`) are not repeated."""
    lines = [_alert_head(a)]
    d = a.diagnosis
    if d is None:
        return lines
    if d.verdict is not None:
        # What it rests on is an evidence line below.
        verdict = [
            f"*Verdict:* {esc(verdict_short(d.verdict))}",
            f"*Verdict's next step:* {esc(d.verdict.next_step)}",
        ]
        lines.extend(_once(shown, verdict))
    lines.append(f"*Now:* {STANDING_WORDS[d.standing]}: {esc(d.now)}")
    lines.extend(_once(shown, [f"• {esc(e)}" for e in d.now_evidence]))
    lines.extend(_once(shown, [f"*Likely cause:* {esc(d.cause)}", f"*Next step:* {esc(d.next_step)}"]))
    if not d.known:
        notes = [f"*{key.capitalize()}:* {esc(v)}" for key, v in sorted(a.annotations.items())]
        labels = [f"{esc(k)}: {esc(v)}" for k, v in sorted(a.labels.items()) if k != "alertname"]
        lines.extend([*notes, *([f"*Labels:* {' · '.join(labels)}"] if labels else [])])
    return lines


def _once(shown: set[str], lines: list[str]) -> list[str]:
    fresh = [line for line in lines if line not in shown]
    shown.update(fresh)
    return fresh


def _meanings(alerts: Sequence[AlertView]) -> list[Block]:
    """What each guide alert of the group means, with every trap, once per alert name."""
    blocks: list[Block] = []
    done: set[str] = set()
    for a in alerts:
        d = a.diagnosis
        if d is None or not d.known or a.name in done:
            continue
        done.add(a.name)
        lines = [f"*{esc(a.name)}:* {esc(d.meaning)}"]
        lines.extend(f"⚠️ *Watch out:* {esc(t)}" for t in d.traps)
        if d.guide_section:
            lines.append(f"*Guide:* _{esc(d.guide_section)}_")
        blocks.append(section_lines(lines))
    return blocks


def _findings(view: AlertGroupView) -> list[Finding]:
    found = {f.key: f for a in view.alerts if a.diagnosis for f in a.diagnosis.findings}
    return sort_worst_first(list(found.values()))


def _reasons(view: AlertGroupView, findings: Sequence[Finding]) -> list[str]:
    """Every outcome reason the findings or the evidence name, with its meaning (the guide's table)."""
    named = {f.reason for f in findings if f.reason}
    texts = [e for a in view.alerts if a.diagnosis for e in a.diagnosis.now_evidence]
    texts += [t for f in findings for t in (f.title, *f.evidence)]
    for text in texts:
        named.update(w for w in _WORD.findall(text) if w in REASONS)
        breakdown = _BREAKDOWN.search(text)
        if breakdown is not None:
            named.update(w for w in _COUNTED.findall(breakdown.group(1)) if w in REASONS)
    return [f"• {code(r)}: {esc(REASONS[r].meaning)}" for r in sorted(named) if r in REASONS]
