"""The details reply of an alert group: the evidence behind its compact message, in one thread reply posted
with the first message and edited in place as the group changes (never a reply per update). A group that
joined an incident has its own, in the incident message's thread (`member_details_reply`), headed by what
joined and the shared cause.

Short enough to read at 3 a.m.: at most `MAX_LINES` lines and `MAX_CHARS` characters as shown. In order of
what is kept when room runs out: the one judgement (the verdict, what it rests on, its next step; without a
verdict the lead alert's standing, cause and step), the evidence that decided it (each line clipped: log
lines counted, not quoted at length), the group's alerts one line each, the peer caches as read per
replica (HA replicas each keep their own), the findings by title, worst first, and what the lead alert
means. Everything else is one
`proxybot status TARGET` / `proxybot logs TARGET` away, which its last line names.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.domain.alert_summary import PeerReading
from bot.domain.diagnosis import AlertDiagnosis
from bot.domain.diagnosis_readings import fmt_count
from bot.domain.findings import Finding, sort_worst_first
from bot.domain.incident import Cause
from bot.domain.messages import AlertGroupView, AlertView, GroupStatus
from bot.render.alert_message import clip, lines_of, title
from bot.render.blocks import (
    Block,
    Message,
    block_texts,
    block_units,
    code,
    context,
    esc,
    fmt_clock,
    message,
    section_lines,
    units,
)
from bot.render.changes import change_details
from bot.render.incident import join_lines
from bot.render.slack import (
    RESOLVED_MARK,
    SEVERITY_MARK,
    STANDING_WORDS,
    alert_subject,
    live_line,
)
from bot.render.verdict import verdict_short
from bot.render.words import counted

MAX_LINES = 25  # lines of the reply as shown (the terminal's width), its head and last line included
MAX_CHARS = 2000  # characters as Slack counts them
LISTED = 4  # lines of a list (alerts, peers, evidence, findings) before "+N more"
LINE_CHARS = 400  # one evidence line at most (the logs counted): the rest is `proxybot logs`
CHANGES_ROOM = 420  # characters of what changed before it, its diff included: the evidence keeps its room


def member_details_reply(
    view: AlertGroupView, cause: Cause | None, now: datetime, *, heads: bool = False, whose: str | None = None
) -> Message:
    """The details reply of a group that joined an incident, in the incident message's thread: what
    joined (or, `heads`, that it now heads the message; `whose`, its client when another than the
    message's) and the shared cause, then its details as `details_reply` gives them (its only reply there)."""
    return details_reply(view, now, intro=join_lines(view, cause, now, heads=heads, whose=whose))


def details_reply(view: AlertGroupView, now: datetime, *, intro: Sequence[str] = ()) -> Message:
    """The group's details reply as of `now`, within `MAX_LINES` and `MAX_CHARS`; `intro` lines (written by
    the caller, outside text escaped) right under its head."""
    alerts = _distinct(sorted(view.alerts, key=lambda a: (a.status is not GroupStatus.FIRING, -a.severity)))
    lead = alerts[0].diagnosis if alerts else None
    head = [f"*Details:* {esc(title(view))}", f"{live_line(view.live, now)} · updated {fmt_clock(now)}"]
    kept = [head, *([list(intro)] if intro else []), [*_judgement(lead), *_other_verdicts(alerts)]]
    evidence = [e for e in (lead.now_evidence if lead else ()) if not e.startswith("Verdict rests on")]
    optional = [
        # What changed on its ends before it fired, the diff with it (a fleet from the platform): what
        # the message cannot show, first.
        _changes(view),
        _listed("Evidence", [f"• {esc(clip(e, LINE_CHARS))}" for e in evidence]),
        *_clients(view),
        _listed(counted(len(alerts), "alert"), [_alert_line(a) for a in alerts]),
        # What the alert means before the lists that mostly repeat the evidence: when the budget cuts,
        # the reader keeps the guide's words on it.
        _meaning(alerts[0] if alerts else None),
        _listed("Peer caches read", [_peer_line(r) for r in view.peers]),  # which replica said what
        _listed("Findings, worst first", [_finding_line(f) for f in _findings(view)]),
    ]
    tail = [context([_more(view)])]
    sections = _fit(kept, [o for o in optional if o], tail)
    fallback = f"Details: {view.status.value} {', '.join(esc(n) for n in view.names()[:3])}"
    return message(fallback, [section_lines(lines) for lines in sections], tail)


def _changes(view: AlertGroupView) -> list[str]:
    """What changed before it: the message says it in a line, so here the diff, headed, else that line."""
    if view.changes is None:
        return []
    found = change_details(view.changes, room=CHANGES_ROOM)
    return found if len(found) == 1 else ["*What changed before it, the diff:*", *found[1:]]


def _clients(view: AlertGroupView) -> list[list[str]]:
    """Who else is hit, per shared target: each client behind it and what it lost, as read now."""
    found = []
    for radius in (r for r in view.blast if r.shown):
        heading = f"Clients of {code(radius.target)}, {len(radius.hit)} of {len(radius.clients)} cut off"
        found.append(_listed(heading, [f"• {code(c.client)}: {esc(c.words())}" for c in radius.clients]))
    return found


def _judgement(d: AlertDiagnosis | None) -> list[str]:
    """The one judgement every line of the message follows: the verdict, else the lead alert's standing."""
    if d is None:
        return []
    if d.verdict is not None:
        v = d.verdict
        rests = f"*Rests on:* {esc('; '.join(v.inputs))}" if v.inputs else ""
        return [
            f"*Verdict:* {esc(verdict_short(v))}",
            *([rests] if rests else []),
            f"*Next step:* {esc(d.next_step)}",
        ]
    lines = [f"*Now:* {STANDING_WORDS[d.standing]}: {esc(d.now)}", f"*Likely cause:* {esc(d.cause)}"]
    return [*lines, f"*Next step:* {esc(d.next_step)}"]


def _other_verdicts(alerts: Sequence[AlertView]) -> list[str]:
    """A group about several targets: each other target's verdict in one line (the lead's is above)."""
    lead = alerts[0].target if alerts else None
    seen: dict[str, str] = {}
    for a in alerts[1:]:
        d = a.diagnosis
        if a.target and a.target != lead and d is not None and d.verdict is not None:
            seen.setdefault(a.target, f"*Verdict for* {code(a.target)}: {esc(verdict_short(d.verdict))}")
    return list(seen.values())[:LISTED]


def _listed(heading: str, items: Sequence[str]) -> list[str]:
    """A heading and at most `LISTED` items, the rest counted; nothing when there are none."""
    if not items:
        return []
    more = [f"… +{len(items) - LISTED} more"] if len(items) > LISTED else []
    return [f"*{heading}*", *items[:LISTED], *more]


def _alert_line(a: AlertView) -> str:
    line = _alert_head(a)
    if a.diagnosis is not None and not a.diagnosis.known:  # not the guide's: its own words and labels
        notes = " · ".join(f"*{key.capitalize()}:* {esc(v)}" for key, v in sorted(a.annotations.items()))
        labels = " · ".join(f"{esc(k)}: {esc(v)}" for k, v in sorted(a.labels.items()) if k != "alertname")
        line += "".join(f"\n    {part}" for part in (notes, f"*Labels:* {labels}" if labels else "") if part)
    return line


def _finding_line(f: Finding) -> str:
    return f"{SEVERITY_MARK[f.severity]} {esc(clip(f.title, LINE_CHARS))}"


def _meaning(a: AlertView | None) -> list[str]:
    d = None if a is None else a.diagnosis
    if a is None or d is None or not d.known:
        return []
    guide = f" _Guide: {esc(d.guide_section)}_" if d.guide_section else ""
    return [f"*{esc(a.name)}:* {esc(clip(d.meaning, LINE_CHARS))}{guide}"]


def _more(view: AlertGroupView) -> str:
    """Where the rest is: the checks that read it whole."""
    targets = sorted({a.target for a in view.alerts if a.target})
    if len(targets) != 1:
        return "More: `proxybot status` (every target) · `proxybot logs TARGET`"
    target = targets[0]
    commands = (f"proxybot status {target}", f"proxybot logs {target}", f"/proxy status {target}")
    return "More: " + " · ".join(code(c) for c in commands)


def _fit(kept: list[list[str]], optional: list[list[str]], tail: Sequence[Block]) -> list[list[str]]:
    """`kept` and as many of `optional` (in order) as the reply's lines and characters leave room for."""
    sections = [s for s in kept if s]
    budget_lines = MAX_LINES - sum(lines_of(t) for b in tail for t in block_texts(b))
    budget_chars = MAX_CHARS - sum(block_units(b) for b in tail)
    for section in optional:
        trial = [*sections, section]
        if _shown_lines(trial) <= budget_lines and _shown_chars(trial) <= budget_chars:
            sections = trial
    return sections


def _shown_lines(sections: Sequence[Sequence[str]]) -> int:
    return sum(lines_of(line) for section in sections for text in section for line in text.split("\n"))


def _shown_chars(sections: Sequence[Sequence[str]]) -> int:
    return sum(units(text) + 1 for section in sections for text in section)


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


def _findings(view: AlertGroupView) -> list[Finding]:
    found = {f.key: f for a in view.alerts if a.diagnosis for f in a.diagnosis.findings}
    return sort_worst_first(list(found.values()))
