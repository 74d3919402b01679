"""An alert group's one message, compact: read in five seconds on a phone at 3 a.m.

Top level, in this order: status and alert (the header), target and cluster and since when, how bad it
is now (peers per state per group/version, one line), the likely cause, the next step, at most
`MAX_FINDINGS` findings worst first (the same finding on several group/versions, replicas or targets is
one line naming them), "+N more", at most one "watch out" (the one that applies now), the live read, and
the buttons with the Prometheus graph and Alertmanager's silence page as link buttons. It never exceeds
`MAX_LINES` lines as the terminal shows them nor `MAX_VISIBLE` characters of text: findings that do not
fit are counted in "+N more". Everything else is in the details reply (`bot.render.alert_details`).

To fit, its lines are counted as the terminal shows them, outside text is clipped at a word (before it is
escaped with `esc`/`code`, so an escape is never cut), and a few names are shown or counted.

The "now" line says how bad the group is now: the lead alert's standing (and verdict when it fits), then
the peers per state per group/version, folded to one segment when every cache agrees, the caches of each
state named by what sets them apart (a replica, a target, group/versions) when they do not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime

from bot.domain.alert_standing import Standing
from bot.domain.alert_summary import FoldedFinding, PeerCacheState, PeerReading, current_trap, fold_peers
from bot.domain.diagnosis_readings import fmt_count
from bot.domain.findings import Severity
from bot.domain.incident import leading_member
from bot.domain.messages import AlertGroupView, AlertView, GroupStatus
from bot.render.acknowledge import ACK_CHARS, ACK_LINES, ack_button
from bot.render.blocks import (
    Block,
    Button,
    Message,
    actions,
    block_units,
    code,
    context,
    esc,
    fmt_clock,
    fmt_since,
    fmt_span,
    fmt_time,
    header,
    message,
    one_line,
    section,
    units,
    utc,
)
from bot.render.changes import change_line
from bot.render.incident import SHOWN_MEMBERS, incident_lines, own_line
from bot.render.layout import WIDTH, lines_shown
from bot.render.slack import (
    ACTION_GRAPH,
    ACTION_PATH,
    ACTION_PROBE,
    ACTION_SILENCE,
    ACTION_SILENCE_PAGE,
    ACTIONS_BLOCK_ID,
    BLAST_MARK,
    RESOLVED_MARK,
    SEVERITY_MARK,
    STANDING_WORDS,
    live_line,
)
from bot.render.verdict import VERDICT_MARK
from bot.render.words import counted

NAME_SHOWN = 60  # characters of a name from outside (target, cluster, group/version) at the top level


def lines_of(text: str) -> int:
    """Terminal lines of one mrkdwn text, as the terminal renderer lays it out."""
    return lines_shown(text, WIDTH)


def clip(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def clip_words(text: str, limit: int) -> str:
    """`text` within `limit` characters: cut at its first clause ("; ") when that fits, else at a word."""
    text = one_line(text)
    if len(text) <= limit:
        return text
    clause = text.split("; ", 1)[0]
    if len(clause) < limit:
        return clause + " …"
    head = text[: limit - 1].rsplit(" ", 1)[0] if " " in text[: limit - 1] else text[: limit - 1]
    return head.rstrip(" ,;:") + "…"


def fitted(prefix: str, text: str, max_lines: int) -> str:
    """`prefix` + `text` escaped, the text cut at a word with "…" until it takes at most `max_lines`."""
    plain = clip(text, max_lines * WIDTH)
    while True:
        line = prefix + esc(plain)
        if lines_of(line) <= max_lines or not plain:
            return line
        cut = plain.rstrip("…").rsplit(" ", 1)[0] if " " in plain else plain[:-8]
        plain = cut.rstrip(" ,;:") + "…" if cut else ""


def whole(prefix: str, text: str, max_lines: int) -> str:
    """`prefix` + `text` escaped, shortened to whole sentences (else whole clauses, ended as a sentence)
    until it takes at most `max_lines`: a line that never ends mid-sentence, its whole text one details
    reply away. Only when not even the first clause fits is it cut at a word (`fitted`)."""
    for candidate in _shorter(one_line(text)):
        line = prefix + esc(candidate)
        if lines_of(line) <= max_lines:
            return line
    return fitted(prefix, text, max_lines)


def _shorter(text: str) -> list[str]:
    """`text`, then its heads ending at a sentence's end or a clause's ("; ", " - "), longest first."""
    ends = {m.start() + 1 for m in re.finditer(r"[.!?] ", text)}
    clauses = {m.start() for m in re.finditer(r"; | - ", text)}
    heads = [text[:at] for at in sorted(ends, reverse=True)]
    heads += [text[:at].rstrip(",") + "." for at in sorted(clauses, reverse=True)]
    return [text, *sorted(heads, key=len, reverse=True)]


def name(value: str) -> str:
    """A name from outside as inline code, clipped."""
    return code(clip(value, NAME_SHOWN))


def names(values: Sequence[str], word: str, shown: int = 2) -> str:
    """`a`, `b` for a few names, else "N words"."""
    if len(values) <= shown:
        return ", ".join(name(v) for v in values)
    return counted(len(values), word)


def now_line(view: AlertGroupView, lead: AlertView) -> str:
    """How bad it is now, one line: standing (and verdict when it fits), then the peers per state per
    group/version, folded to one segment when they all agree."""
    d = lead.diagnosis
    assert d is not None
    standing = STANDING_WORDS[d.standing]
    verdict = "" if d.verdict is None else f"{VERDICT_MARK[d.verdict.verdict]} {d.verdict.verdict.value} · "
    states = fold_peers(view.peers)
    if not states:
        return fitted(f"*Now:* {standing} · {verdict}", d.now, 1)
    candidates = []
    for words in (True, False):
        segments = state_segments(states, view.peers, words=words)
        for shown in range(len(segments), 0, -1):
            more = len(segments) - shown
            peers = " · ".join(segments[:shown]) + (f" · +{more} more" if more else "")
            candidates += [f"*Now:* {standing} · {verdict}{peers}", f"*Now:* {standing} · {peers}"]
    return next((c for c in candidates if lines_of(c) <= 1), fitted(f"*Now:* {standing} · ", d.now, 1))


def state_segments(
    states: list[PeerCacheState], readings: Sequence[PeerReading], *, words: bool
) -> list[str]:
    """One segment per peer state (`words`: spelled out when there is only one state)."""
    if len(states) == 1:
        return [f"{_counts(states[0], words=words)} on {_all_caches(readings)}"]
    # The legend once, then the caches of each state and their `h/q/o`.
    return [
        ("healthy/quarantined/half_open: " if i == 0 else "") + f"{_which(s.caches, readings)} {_counts(s)}"
        for i, s in enumerate(states)
    ]


def _counts(s: PeerCacheState, *, words: bool = False) -> str:
    synced = " unsynced" if s.synced is False else ""
    h, q, o = fmt_count(s.healthy), fmt_count(s.quarantined), fmt_count(s.half_open)
    if words:
        return f"healthy {h}, quarantined {q}, half_open {o}" + ("," + synced if synced else "")
    return f"{h}/{q}/{o}{synced}"


def _all_caches(readings: Sequence[PeerReading]) -> str:
    gvs = {r.group_version for r in readings}
    targets = {r.target for r in readings}
    replicas = {r.replica for r in readings if r.replica}
    if len(targets) > 1:
        where = f"all {len(readings)} peer caches of {len(targets)} targets"
    elif len(gvs) == 1:
        where = name(next(iter(gvs)))
    else:
        where = "both group/versions" if len(gvs) == 2 else f"all {len(gvs)} group/versions"
    return where + (f" of {len(replicas)} replicas" if len(replicas) > 1 else "")


def _which(caches: Sequence[PeerReading], readings: Sequence[PeerReading]) -> str:
    """The caches of one state, named by what sets them apart: whole replicas, whole targets, or else
    their group/versions."""
    mine = set(caches)
    keys: tuple[tuple[str, Callable[[PeerReading], str]], ...] = (
        ("replica", lambda r: r.replica or ""),
        ("target", lambda r: r.target),
    )
    for word, key in keys:
        values = sorted({key(r) for r in caches})
        if len({key(r) for r in readings}) > 1 and {r for r in readings if key(r) in values} == mine:
            return names(values, word)
    return names(sorted({r.group_version for r in caches}), "group/version")


MAX_FINDINGS = 5
MAX_LINES = 15  # as the terminal shows the message (bot.render.layout.WIDTH columns)
MAX_VISIBLE = 1500  # characters of text shown, in Slack's units


def _header_lines(head: Block) -> int:
    """The header as the terminal shows it: its text's lines (a long alert name wraps), then its underline."""
    return lines_of(str(head["text"]["text"])) + 1


ACTIONS_LINES = 1


# -- the firing message --------------------------------------------------------------------------------


def alert_group_message(view: AlertGroupView, now: datetime) -> Message:
    """The one message of an alert group: compact firing form with buttons, or its resolved form."""
    if view.status is GroupStatus.RESOLVED:
        return resolved_message(view, now)
    lead = _lead(view)
    must = [_place_line(view, now), *blast_lines(view), *_explained(view, lead)]
    tail = [context(_context_items(view, now)), actions(_buttons(view, firing=True), ACTIONS_BLOCK_ID)]
    head = header(title(view))
    used = _header_lines(head) + _lines(must) + 1 + _tail_lines(tail)
    if used > MAX_LINES and (lead.diagnosis is None or not lead.diagnosis.known):
        # An unknown alert's annotations from outside, long everywhere: one line each.
        must = [_place_line(view, now), *_plain_lines(lead, 1)]
        used = _header_lines(head) + _lines(must) + 1 + _tail_lines(tail)
    chars = block_units(head) + _chars(must) + sum(block_units(b) for b in tail)
    # The incident's lines come before findings: the other alerts of one cause are what the engineer
    # must not miss; a finding left out is in the details reply.
    must += _incident_fit(view, now, MAX_LINES - used, MAX_VISIBLE - chars)
    # Room is kept for the acknowledgement's or the silence's line, laid over the message as it is sent,
    # out of the findings' share (they are in the details reply), not the incident's.
    used = _header_lines(head) + _lines(must) + 1 + _tail_lines(tail) + ACK_LINES
    chars = block_units(head) + _chars(must) + sum(block_units(b) for b in tail) + ACK_CHARS
    trap = current_trap(lead.diagnosis) if lead.diagnosis is not None and lead.diagnosis.known else None
    rest = _findings_and_trap(view, trap, MAX_LINES - used, MAX_VISIBLE - chars)
    return message(fallback(view), [head, section("\n".join([*must, *rest]))], tail)


BLAST_LINES = 2  # terminal lines of one target's blast radius on the message (its clients in the details)


def blast_lines(view: AlertGroupView) -> list[str]:
    """Who else is hit: one line per shared target of the group, its clients by name, what they lost
    once when they all lost the same (each client's own loss in the details reply)."""
    return [
        whole(f"{BLAST_MARK} ", radius.sentence(each=False), BLAST_LINES)
        for radius in view.blast
        if radius.shown
    ]


def _lines(lines: Sequence[str]) -> int:
    return sum(lines_of(line) for line in lines)


def _chars(lines: Sequence[str]) -> int:
    """Visible characters of `lines` joined, each counting its newline too."""
    return sum(units(line) + 1 for line in lines)


def _incident_fit(view: AlertGroupView, now: datetime, room: int, chars: int) -> list[str]:
    """The incident's lines with as many "also firing" lines as fit (the rest counted), else none."""
    incident = view.incident
    if incident is None:
        return []
    own = own_line(view)
    for shown in range(min(len(incident.members), SHOWN_MEMBERS), -1, -1):
        lines = incident_lines(incident, now, shown, own)
        if _lines(lines) <= room and _chars(lines) <= chars:
            return lines
    return []


_STANDING_FIRST = {
    Standing.STILL_BROKEN: 0,
    Standing.UNKNOWN: 1,
    Standing.RECOVERING: 2,
    Standing.RECOVERED: 3,
}


def _lead(view: AlertGroupView) -> AlertView:
    """The alert the message explains: the worst firing one, still broken before healed (of an HA pair,
    the replica that still fails)."""

    def rank(a: AlertView) -> tuple[int, int, str, str, str]:
        standing = _STANDING_FIRST[a.diagnosis.standing] if a.diagnosis is not None else 1
        return (-a.severity, standing, a.name, a.target or "", a.pod or "")

    return min(view.firing or view.alerts, key=rank)


def _tail_lines(tail: Sequence[Block]) -> int:
    ctx = " · ".join(str(e["text"]) for e in tail[0]["elements"])
    return lines_of(ctx) + ACTIONS_LINES


def _place_line(view: AlertGroupView, now: datetime) -> str:
    where = _subject(view)
    members = view.incident.members if view.incident is not None else ()
    # Its clients: the message's own, then those of members on a shared target.
    clients = [c for c in dict.fromkeys([view.cluster, *(m.cluster for m in members)]) if c]
    cluster = names(clients, "clients", shown=3) if clients else "no configured cluster matched"
    # The incident's firing alerts, its own and each member's: the one count the message gives.
    firing = len(view.firing) + sum(m.alerts for m in members if m.firing)
    resolved = len(view.alerts) - len(view.firing)
    count = f"{counted(firing, 'alert')} firing" + (f", {resolved} resolved" if resolved else "")
    return f"{where} on {cluster} · since {fmt_since(view.started_at, now)} · {count}"


def _subject(view: AlertGroupView) -> str:
    """What the alerts are about: their targets, else the probe CronJob (ProbeFailing names no target)."""
    targets = sorted({a.target for a in view.alerts if a.target})
    if targets:
        return names(targets, "target")
    jobs = sorted({f"{a.labels['namespace']}/{a.labels['cronjob']}" for a in view.alerts if _is_job(a)})
    return f"CronJob {names(jobs, 'CronJob')}" if jobs else "no target label"


def _is_job(a: AlertView) -> bool:
    return bool(a.labels.get("namespace") and a.labels.get("cronjob"))


def _explained(view: AlertGroupView, lead: AlertView) -> list[str]:
    d = lead.diagnosis
    if d is None or not d.known:
        return _plain_lines(lead)
    return [
        now_line(view, lead),
        whole("*Likely cause:* ", d.cause, 2),
        whole("*Next step:* ", d.next_step, 2),
    ]


def _plain_lines(alert: AlertView, each: int = 2) -> list[str]:
    """An alert the catalogue does not know: what Alertmanager said of it, never dropped (each annotation
    in at most `each` lines)."""
    lines = [f"*{esc(clip(alert.name, NAME_SHOWN))}* is not one of the guide's proxy alerts: shown as sent"]
    for key in ("summary", "description"):
        if alert.annotations.get(key):
            lines.append(fitted(f"*{key.capitalize()}:* ", alert.annotations[key], each))
    if alert.diagnosis is not None:
        lines.append(fitted("*Live:* ", alert.diagnosis.now, 1))
    return lines


def _findings_and_trap(view: AlertGroupView, trap: str | None, room: int, chars: int) -> list[str]:
    """As many findings (at most MAX_FINDINGS) as fit, "+N more", and the watch-out when it leaves room
    for two findings at least."""
    folded = view.folded_findings()
    lines = [_finding_line(f, view) for f in folded if f.severity >= Severity.INFO]
    warn = [] if trap is None else [whole("⚠️ *Watch out:* ", trap, 2)]
    tries = [(shown, warn) for shown in range(min(len(lines), MAX_FINDINGS), min(len(lines), 2) - 1, -1)]
    tries += [(shown, []) for shown in range(min(len(lines), MAX_FINDINGS), -1, -1)]
    for shown, extra in tries:
        more = [_more_line(view, len(lines) - shown)] if shown < len(lines) else []
        picked = [*lines[:shown], *more, *extra]
        if sum(lines_of(x) for x in picked) <= room and sum(units(x) + 1 for x in picked) <= chars:
            return picked
    return []


def _finding_line(f: FoldedFinding, view: AlertGroupView) -> str:
    where = _finding_places(f, view)
    suffix = f" · {where}" if where else ""
    mark = f"{SEVERITY_MARK[f.severity]} "
    # One terminal line each: the title is cut, its full words are in the details reply.
    room = WIDTH - len(mark) - units(suffix) - 2
    return mark + esc(clip_words(f.title, max(room, 20))) + suffix


def _finding_places(f: FoldedFinding, view: AlertGroupView) -> str:
    gvs = {r.group_version for r in view.peers} | {a.group_version for a in view.alerts if a.group_version}
    replicas = {a.pod for a in view.alerts if a.pod} | {r.replica for r in view.peers if r.replica}
    targets = {a.target for a in view.alerts if a.target}
    parts = []
    if len(f.targets) > 1 or (f.targets and len(targets) > 1):
        parts.append(names(f.targets, "target", 1))
    if f.group_versions and len(gvs) > 1:
        parts.append(names(f.group_versions, "group/version", 1))
    if f.replicas and len(replicas) > 1:
        parts.append(names(f.replicas, "replica", 1))
    return " · ".join(parts)


def _more_line(view: AlertGroupView, hidden: int) -> str:
    targets = sorted({a.target for a in view.alerts if a.target})
    if len(targets) == 1:  # the details reply lists what room leaves; `/proxy status` lists them all
        return (
            f"… +{counted(hidden, 'more finding')}: {code('/proxy status ' + clip(targets[0], NAME_SHOWN))}"
        )
    return f"… +{counted(hidden, 'more finding')} in the details reply"


def _context_items(view: AlertGroupView, now: datetime) -> list[str]:
    items = [_live_item(view, now), f"updated {fmt_clock(now)}"]
    if view.truncated_alerts > 0:
        items.append(f"Alertmanager left {counted(view.truncated_alerts, 'more alert')} out")
    if view.changes is not None:
        items.append(
            change_line(view.changes)
        )  # what changed on its ends before it fired (the diff: details)
    return items


def _live_item(view: AlertGroupView, now: datetime) -> str:
    if not view.live.ok:
        return f"⚠️ live state unavailable: {esc(clip(view.live.unavailable or 'not read', 80))}"
    line = live_line(view.live, now)
    pods = {a.pod for a in view.alerts if a.pod}
    if view.live.replica and pods and view.live.replica not in pods:
        line += " (not the alerting pod)"
    return line


def _buttons(view: AlertGroupView, *, firing: bool) -> list[Button]:
    value = view.action_ref().encode()
    found = [Button("Probe now", ACTION_PROBE, value), Button("Path check", ACTION_PATH, value)]
    if firing:
        found.append(ack_button(value))
        found.append(Button("Silence…", ACTION_SILENCE, value))
    graph = view.graph_link()
    if graph is not None:
        found.append(Button("Prometheus graph", ACTION_GRAPH, url=graph))
    silences = view.silence_link() if firing else None
    if silences is not None:
        found.append(Button("Alertmanager silence", ACTION_SILENCE_PAGE, url=silences))
    return found


def title(view: AlertGroupView) -> str:
    names = view.names() or ["alert"]
    more = f" +{len(names) - 1} more" if len(names) > 1 else ""
    targets = {a.target for a in view.alerts if a.target}
    where = f" · {targets.pop()}" if len(targets) == 1 else ""
    if view.status is GroupStatus.RESOLVED:
        return f"{RESOLVED_MARK} RESOLVED: {names[0]}{more}{where}"
    lead = leading_member(view.severity, view.incident)
    if lead is not None:  # what pages leads: a member of the incident more severe than its own alerts
        place = f" · {lead.target}" if lead.target else ""
        return f"{SEVERITY_MARK[lead.severity]} FIRING: {(lead.names or ('alert',))[0]}{place}"
    return f"{SEVERITY_MARK[view.severity]} FIRING: {names[0]}{more}{where}"


def fallback(view: AlertGroupView) -> str:
    names = ", ".join(esc(n) for n in view.names()[:3]) or "alert"
    targets = sorted({a.target for a in view.alerts if a.target})
    where = f" on {esc(targets[0])}" if targets else ""
    where += f" +{len(targets) - 1} more" if len(targets) > 1 else ""
    cluster = f" ({esc(view.cluster)})" if view.cluster else ""
    return f"{view.status.value.upper()}: {names}{where}{cluster}"


# -- the resolved message ------------------------------------------------------------------------------


def resolved_message(view: AlertGroupView, now: datetime) -> Message:
    """The group's message once every alert resolved: one line of account (how long, the worst state
    seen, what recovered), where it was, the live read."""
    ended = view.ended_at(now)
    took = fmt_span((utc(ended) - utc(view.started_at)).total_seconds())
    account = f"*Resolved after {took}* ({_span_words(view.started_at, ended)})"
    worst = view.worst_now()
    if worst is not None:
        account += f" · worst: {SEVERITY_MARK[worst.severity]} {esc(clip(worst.what, 160))}"
    recovered = _recovered(view)
    if recovered:
        account += f" · now: {recovered}"
    where = _subject(view)
    cluster = name(view.cluster) if view.cluster else "no configured cluster matched"
    place = f"{where} on {cluster} · {counted(len(view.alerts), 'alert')} resolved"
    tail = [context(_context_items(view, now)), actions(_buttons(view, firing=False), ACTIONS_BLOCK_ID)]
    head = header(title(view))
    used = _header_lines(head) + _lines([account, place]) + 1 + _tail_lines(tail)
    chars = block_units(head) + _chars([account, place]) + sum(block_units(b) for b in tail)
    lines = [account, place, *_incident_fit(view, now, MAX_LINES - used, MAX_VISIBLE - chars)]
    return message(f"{fallback(view)} after {took}", [head, section("\n".join(lines))], tail)


def _span_words(start: datetime, end: datetime) -> str:
    if utc(start).date() == utc(end).date():
        return f"{fmt_time(start)} → {utc(end).strftime('%H:%M UTC')}"
    return f"{fmt_time(start)} → {fmt_time(end)}"


def _recovered(view: AlertGroupView) -> str:
    """What the last live reading shows: the peer states, else the last diagnosis' words."""
    states = fold_peers(view.peers)
    if states:
        segments = state_segments(states, view.peers, words=True)
        more = f" · +{len(segments) - 3} more" if len(segments) > 3 else ""
        return " · ".join(segments[:3]) + more
    last = next((a.diagnosis for a in view.alerts if a.diagnosis and a.diagnosis.live), None)
    return esc(clip(last.now, 160)) if last is not None else ""
