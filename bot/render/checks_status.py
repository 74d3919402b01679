"""`status`, `peers` and `reasons` as Slack messages (the CLI shows the same messages in the terminal).

Status reuses the alert renderer's findings layout, so a command's answer reads like an alert's live
state; the peer caches per group/version go first, in the notes.
"""

from __future__ import annotations

from datetime import UTC, datetime

from bot.domain.diagnosis_readings import describe_peers, fmt_count, fmt_duration
from bot.domain.messages import FindingsReport, LiveRead
from bot.domain.reasons import ReasonKind
from bot.domain.status_result import (
    REPLICA_UNKNOWN,
    GroupVersionState,
    ReasonCount,
    ReasonsResult,
    StatusResult,
    TargetStatus,
)
from bot.render.blocks import Block, Message, code, context, esc, header, message, section, section_lines
from bot.render.slack import BLAST_MARK, findings_message, live_line
from bot.render.verdict import verdict_lines

# Whose side each kind of reason is, in the words of the breakdown.
KIND_WORDS = {
    ReasonKind.PROXY_FAULT: "fault: proxy path",
    ReasonKind.TARGET_SIDE: "target side",
    ReasonKind.CALLER_SIDE: "caller side, not a proxy fault",
    ReasonKind.ISOLATION: "isolation working as intended",
    ReasonKind.UNKNOWN: "unknown reason",
}


def _cache_line(target: str, g: GroupVersionState) -> str:
    peers = describe_peers(g.peers) if g.peers is not None else "no peer gauge"
    synced = {True: "synced", False: "NOT synced", None: "sync not reported"}[g.cache_synced]
    age = "" if g.peer_list_age is None else f", list published {fmt_duration(g.peer_list_age)} ago"
    return f"{target} {g.group_version}: {peers}; cache {synced}{age}"


def _target_notes(t: TargetStatus, shared: set[str]) -> list[str]:
    name = _reading(t, shared)
    return [_cache_line(name, g) for g in t.group_versions]


def _live(result: StatusResult) -> LiveRead:
    ok = [r for r in result.reads if r.unavailable is None]
    if not ok:
        why = "; ".join(r.unavailable or "" for r in result.reads) or "nothing read"
        return LiveRead.missing(why)
    latest = max(ok, key=lambda r: r.read_at)
    return LiveRead.read(datetime.fromtimestamp(latest.read_at, UTC), latest.replica)


def _lead(result: StatusResult) -> list[str]:
    """Who is hit, for each target several clients use, then the quick-triage verdict of every target (each
    client's and replica's reading apart), first."""
    lines = [f"{BLAST_MARK} {esc(b.sentence())}" for b in result.blast]
    shared = _shared(result)
    for t in result.targets:
        if t.verdict is not None:
            lines += verdict_lines(_reading(t, shared), t.verdict)
    return lines


def _shared(result: StatusResult) -> set[str]:
    return {b.target for b in result.blast}


def _reading(t: TargetStatus, shared: set[str]) -> str:
    """Which reading of the target: its replica's when addressable, else its client's when the target has
    more than one (a shared target)."""
    if t.replica is not None:
        return f"{t.target} on replica {t.replica}"
    return f"{t.target} from {t.cluster}" if t.target in shared else t.target


def _triage_notes(result: StatusResult) -> list[str]:
    """The proxy's APIServices and the vCluster versions of every cluster read."""
    lines = []
    for triage in result.triage:
        lines += [f"{triage.cluster}: {line}" for line in triage.apiservices.lines()]
        versions = ", ".join(f"{v.role.value} {v.name} {v.shown()}" for v in triage.versions())
        lines.append(f"vCluster versions: {versions}")
    return lines


def status_message(result: StatusResult, now: datetime) -> Message:
    """The verdict per target, then the peer caches, the findings, the proxy objects and versions, and
    when and where state was read."""
    names = [t.target for t in result.targets]
    shared = _shared(result)
    notes = [line for t in result.targets for line in _target_notes(t, shared)]
    notes += _triage_notes(result)
    notes += [f"replica of {r.cluster}: {r.replica or REPLICA_UNKNOWN}" for r in result.reads]
    clusters = sorted({t.cluster for t in result.targets})
    report = FindingsReport(
        title=f"Status of {names[0]}" if len(names) == 1 else f"Status of {len(names)} targets",
        findings=(*(f for t in result.targets for f in t.findings), *result.triage_findings),
        live=_live(result),
        cluster=clusters[0] if len(clusters) == 1 else None,
        notes=tuple(notes),
        lead=tuple(_lead(result)),
    )
    return findings_message(report, now)


def peers_message(result: StatusResult, now: datetime) -> Message:
    """`peers TARGET`: the verdict, then each group/version's peer cache per replica read, and when and
    where it was read; the findings are `status`'s."""
    names = [t.target for t in result.targets]
    lines = [*_lead(result)]
    for t in result.targets:
        where = "" if t.replica is None else f" on replica {t.replica}"
        if t.unavailable is not None:
            lines.append(f"{esc(t.target)}{where}: not read ({esc(t.unavailable)})")
        lines += [_peer_line(g, where) for g in t.group_versions]
    live = live_line(_live(result), now)
    title = f"Peers of {names[0]}" if len(names) == 1 else f"Peers of {len(names)} targets"
    return message(title, [header(title), section_lines(lines or ["no target read"])], [context([live])])


def _peer_line(g: GroupVersionState, where: str) -> str:
    counts = "no peer gauge" if g.peers is None else describe_peers(g.peers).removeprefix("peers: ")
    synced = {True: "cache synced", False: "cache not synced", None: "cache synced unknown"}[g.cache_synced]
    # The list's age grows on a quiet healthy cluster (the guide): shown, never judged.
    age = "" if g.peer_list_age is None else f" · peer list {fmt_duration(g.peer_list_age)} old"
    return f"• {code(g.group_version)}{where}: {counts} · {synced}{age}"


def _reason_lines(c: ReasonCount) -> list[str]:
    mark = "🔴" if c.is_fault else "•"
    return [
        f"{mark} *{esc(c.family)}* {code(c.reason)}: {fmt_count(c.count)} — _{KIND_WORDS[c.info.kind]}_",
        f"    {esc(c.info.meaning)}",
    ]


def reasons_message(result: ReasonsResult) -> Message:
    """The breakdown per counter family and reason, each with its meaning and whose side it is."""
    if result.unavailable is not None:
        verdict = "unknown"
    else:
        verdict = f"{len(result.faults)} proxy-fault reasons" if result.faults else "no proxy faults"
    body: list[Block] = [header(f"Outcome reasons of {result.target} {result.scope}: {verdict}")]
    if result.unavailable is not None:
        body.append(section(f"⚠️ live state unavailable: {esc(result.unavailable)}"))
    elif not result.counts:
        body.append(section(f"No reason was counted {esc(result.scope)} (a missing counter means zero)."))
    else:
        body.append(section_lines([line for c in result.counts for line in _reason_lines(c)]))
    faults = list(dict.fromkeys(c.reason for c in result.faults))
    for reason in faults[:3]:
        step = next(c.info.next_step for c in result.faults if c.reason == reason)
        body.append(section(f"*Next step for {code(reason)}:* {esc(step)}"))
    notes = [esc(n) for n in result.notes]
    tail = [context([f"cluster {code(result.cluster)}", f"counts {esc(result.scope)}", *notes])]
    return message(f"Outcome reasons of {esc(result.target)} {esc(result.scope)}: {verdict}", body, tail)
