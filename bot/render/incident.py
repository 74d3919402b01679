"""Incidents and flapping in words: the lines an incident's message carries, and its thread notes.

`incident_lines` is what the compact message (`bot.render.alert_message`) adds for a group's `IncidentView`,
as many "also firing" lines as its budget leaves room for: "3 alert rules, one cause:
...", one "also firing" line per group that joined (turning resolved with it), and the flap count. The
thread: `join_lines` head a joining group's details reply (`bot.render.alert_details.member_details_reply`),
`flapping_reply` is the note at most once an hour for a flapping group.
Values from outside (alert names, targets, group/versions) enter through `esc`/`code`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from bot.domain.incident import FLAPPING_AT, Cause, IncidentLine, IncidentView, leading_member
from bot.domain.messages import AlertGroupView, GroupStatus
from bot.render.blocks import (
    Message,
    code,
    esc,
    fmt_ago,
    fmt_span,
    message,
    section_lines,
    utc,
)
from bot.render.slack import RESOLVED_MARK, SEVERITY_MARK
from bot.render.words import counted

SHOWN_MEMBERS = 8  # "also firing" lines before "+N more"
FLAP_MARK = "🔁"

CAUSE_WORDS = {
    Cause.PEER_FEED: "the client holds no current peer list (its peer feed from the platform: "
    "connectivity, license, the peer watch)",
    Cause.ENDPOINTS: "no healthy peer: the target's endpoints are down or unreachable",
    Cause.TARGET_ANSWERS: "the target answers with errors while its peers are healthy",
    Cause.SLOW_TARGET: "the target answers too slowly (requests run into the 60 s deadline)",
}


# On the incident's message, where the likely cause and next step are already spelled out above it.
CAUSE_SHORT = {
    Cause.PEER_FEED: "the client's peer feed (no current peer list)",
    Cause.ENDPOINTS: "the target's endpoints (no healthy peer)",
    Cause.TARGET_ANSWERS: "the target answering with errors",
    Cause.SLOW_TARGET: "a slow target (requests run into the 60 s deadline)",
}


def cause_words(cause: Cause | None) -> str:
    return "one cause" if cause is None else CAUSE_WORDS[cause]


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def flap_words(count: int) -> str:
    return f"flapping: {_times(count)} in the last hour"


def _where(target: str | None, group_versions: Sequence[str]) -> str:
    place = f" on {code(target)}" if target else ""
    if group_versions:
        shown = ", ".join(code(gv) for gv in group_versions[:3])
        more = f" +{len(group_versions) - 3} more" if len(group_versions) > 3 else ""
        place += f" ({shown}{more})"
    return place


def _member_line(m: IncidentLine, now: datetime) -> str:
    names = ", ".join(f"*{esc(n)}*" for n in m.names) or "*alert*"
    where = _where(m.target, m.group_versions)
    if m.cluster is not None:
        where += f" from {code(m.cluster)}"
    if m.cronjob is not None and m.target is None:
        where += f" (CronJob {code(m.cronjob)})"
    if not m.firing:
        took = ""
        if m.since is not None and m.resolved_at is not None:
            took = f" after {fmt_span((utc(m.resolved_at) - utc(m.since)).total_seconds())}"
        line = f"↳ {RESOLVED_MARK} {names}{where}: resolved{took}"
    else:
        since = f", since {fmt_ago(m.since, now)}" if m.since is not None else ""
        line = f"↳ also firing: {SEVERITY_MARK[m.severity]} {names}{where}{since}"
    return line + (f" · {FLAP_MARK} {flap_words(m.flaps)}" if m.flaps >= FLAPPING_AT else "")


def incident_lines(
    incident: IncidentView | None,
    now: datetime,
    members_shown: int = SHOWN_MEMBERS,
    own: IncidentLine | None = None,
) -> list[str]:
    """The incident's lines for its message (none when there is nothing beyond the group's own), with at
    most `members_shown` "also firing" lines and "+N more" for the rest. With `own` (the message's own
    alerts), a member that pages harder leads the headline (`leading_member`), and `own` takes its line."""
    if incident is None or not incident.shown:
        return []
    lines = []
    if incident.members:
        short = "" if incident.cause is None else f" {CAUSE_SHORT[incident.cause]}"
        lines.append(f"*{counted(len(incident.names), 'alert rule')}, one cause:*{short}")
        lead = None if own is None else leading_member(own.severity, incident)
        members = incident.members
        if own is not None and lead is not None:
            members = (own, *(m for m in members if m is not lead))
        shown = members[:members_shown]
        lines += [_member_line(m, now) for m in shown]
        if len(members) > len(shown):
            lines.append(f"… +{len(members) - len(shown)} more in the thread")
    if incident.flapping:
        lines.append(f"{FLAP_MARK} *{flap_words(incident.flaps).capitalize()}* (fired again after resolving)")
    return lines


def own_line(view: AlertGroupView) -> IncidentLine:
    """The message's own firing alerts as one incident line (when a member leads its headline)."""
    targets = sorted({a.target for a in view.alerts if a.target})
    gvs = tuple(sorted({a.group_version for a in view.alerts if a.group_version}))
    target = targets[0] if len(targets) == 1 else None
    own = IncidentLine(tuple(view.names()), target, gvs, view.severity, True, view.started_at)
    return replace(own, alerts=max(len(view.firing), 1))


def _group_where(view: AlertGroupView) -> str:
    targets = sorted({a.target for a in view.alerts if a.target})
    gvs = sorted({a.group_version for a in view.alerts if a.group_version})
    where = _where(targets[0] if len(targets) == 1 else None, gvs)
    cronjobs = [a.labels for a in view.alerts if a.labels.get("cronjob")]
    probes = sorted({f"{labels.get('namespace', '')}/{labels['cronjob']}" for labels in cronjobs})
    if not targets and len(probes) == 1:
        where += f" (CronJob {code(probes[0])})"
    return where


def join_lines(
    view: AlertGroupView, cause: Cause | None, now: datetime, *, heads: bool = False, whose: str | None = None
) -> list[str]:
    """What a group that joined an incident is, for the top of its details reply in the incident's
    thread: what fires (or that it resolved), since when, the shared cause, how it is silenced; `heads`:
    it joined and, paging hardest, heads the message now; `whose`: its client, another than the message's
    (a target they share)."""
    names = ", ".join(f"*{esc(n)}*" for n in view.names()) or "*alert*"
    where = _group_where(view) + (f" from {code(whose)}" if whose else "")
    if view.status is GroupStatus.FIRING:
        since = fmt_ago(view.started_at, now)
        state = f"{SEVERITY_MARK[view.severity]} {names}{where}, since {since}"
    else:
        ended = view.resolved_at or now
        took = fmt_span((utc(ended) - utc(view.started_at)).total_seconds())
        state = f"{RESOLVED_MARK} {names}{where}: resolved after {took}"
    joined = "Joined this incident and heads it (it pages hardest)" if heads else "Joined this incident"
    return [
        f"↳ {joined}: {state}",
        f"*Same cause:* {cause_words(cause)}",
        "_Silence… on the incident's message silences it too; it resolves on its own line there._",
    ]


def flapping_reply(view: AlertGroupView, count: int) -> Message:
    """The hourly thread note about a flapping group (instead of one reply per transition)."""
    names = ", ".join(f"*{esc(n)}*" for n in view.names()) or "*alert*"
    state = "firing again" if view.status is GroupStatus.FIRING else "resolved for now"
    lines = [
        f"{FLAP_MARK} {names}{_group_where(view)} is flapping: it fired again {_times(count)} in the "
        f"last hour, {state}.",
        "_The message keeps the count; no reply per change while it flaps (at most one note an hour)._",
    ]
    return message(f"flapping: {_fallback_names(view)}", [section_lines(lines)])


def _fallback_names(view: AlertGroupView) -> str:
    return ", ".join(esc(n) for n in view.names()[:3]) or "alert"
