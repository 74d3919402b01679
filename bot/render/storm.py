"""A storm -> Slack: the summary edited in place, and the table of every target in its thread.

The summary says how big the storm is, every target's live state grouped per client cluster, the
alerts worst first and the common cause, with its evidence when the live state shows one. The table has
one row per target (cluster, target, alerts, state now, since), worst first within each cluster: up to
`TABLE_BLOCK_TARGETS` targets it is a reply holding Slack's own `table` block (`storm_table_reply`: one
table per message, at most 100 rows with its header, 20 columns, each cell raw text), read on a phone as
well; beyond, a plain text file of aligned rows (`storm_table`). Every value from outside goes through
`one_line`, so no name can forge a row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.domain.diagnosis_readings import fmt_count, fmt_seconds
from bot.domain.messages import Tally
from bot.domain.moments import from_epoch
from bot.domain.storm import (
    SIGNATURE_TALLIES,
    ClusterStates,
    CommonCause,
    StormCause,
    StormRow,
    StormView,
    TargetState,
)
from bot.render.acknowledge import ack_button
from bot.render.blocks import (
    Message,
    actions,
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
    section_lines,
    truncate,
    utc,
)
from bot.render.slack import ACTIONS_BLOCK_ID, SEVERITY_MARK
from bot.render.words import counted

CLUSTER_LINES = 8  # client clusters listed in the summary before "+N more"
DOWN_NAMED = 5  # targets down on their own named in the cause before "and N more"
TABLE_FILENAME = "storm-targets.txt"
# Slack's `table` block: at most 100 rows, the header one of them; a cell this long at most (Slack
# publishes no number for a cell: 2 000 is what Block Kit's other long texts, fields, context, allow).
TABLE_BLOCK_ROWS = 100
TABLE_BLOCK_TARGETS = TABLE_BLOCK_ROWS - 1
TABLE_CELL_CHARS = 2000
# Wrapped: the long columns (alerts, state now) read whole on a narrow screen instead of being cut.
TABLE_COLUMN_SETTINGS = tuple(
    {"align": "left", "is_wrapped": wrapped} for wrapped in (False, False, True, True, False)
)
# Columns are padded to the longest value up to these widths; a longer value is kept whole, never cut.
COLUMN_WIDTHS = (32, 60, 64, 100, 19)
COLUMNS = ("CLUSTER", "TARGET", "ALERTS", "STATE NOW", "SINCE (UTC)")

STATE_WORDS = {
    TargetState.NO_HEALTHY_QUARANTINED: "no healthy peers, all quarantined",
    TargetState.NO_HEALTHY_HALF_OPEN: "no healthy peers, one trial dial pending",
    TargetState.NO_PEERS: "no peers published",
    TargetState.CACHE_UNSYNCED: "peer cache unsynced (peers from a stale list)",
    TargetState.SLOW_DIALS: "dial p99 near the 5 s timeout",
    TargetState.NO_SERIES: "no series on the proxy",
    TargetState.NOT_READ: "live state not read",
    TargetState.NO_TARGET: "without a target label",
    TargetState.HEALTHY: "healthy now",
}
SUSPECTED = {
    CommonCause.PLATFORM_PATH: "many targets of several client clusters are failing together, which points "
    "at the shared platform path: relayed proxy traffic all runs through the vCluster Platform, making it "
    "one failure domain for otherwise independent clusters. Check the platform pods, their network and "
    "the license first, then whether clients fell back to the relay.",
    CommonCause.CLIENT_CLUSTER: "many targets of one client cluster are failing together: suspect that "
    "client's control plane and its link to the platform (peer watch, license, egress NetworkPolicy) "
    "before the targets themselves.",
    CommonCause.ONE_TARGET: "every alert is about one target: start with that target's control plane pods.",
    CommonCause.HEALTHY_NOW: "every target still firing reads healthy now: the alerts should resolve on "
    "their next evaluations; if they do not, compare the rules with the live state.",
    CommonCause.UNCLEAR: "no shared cause stands out; work through the table in the thread, worst first.",
}


# -- the summary -----------------------------------------------------------------------------------


def storm_message(storm: StormView, now: datetime, *, ack: str | None = None) -> Message:
    """The storm summary, edited in place: states per cluster, alerts worst first, the common cause;
    while the storm lasts, an *Acknowledge* button carrying `ack` (its reference) when given."""
    scale = (
        f"{counted(storm.alerts, 'alert')} in {counted(storm.groups, 'group')}"
        f" on {counted(storm.targets, 'target')} across {counted(storm.clusters, 'cluster')}"
    )
    title, when = _title_and_when(storm, now)
    cause = storm.common_cause()
    label = "Common cause" if cause.evidence else "Likely common cause"
    body = [
        header(f"{title}: {counted(storm.targets, 'target')}, {counted(storm.alerts, 'alert')}"),
        section_lines([f"*{scale}*", when]),
    ]
    if storm.rows:
        body.append(section_lines(["*Now, per client cluster*", *_cluster_lines(storm.by_cluster())]))
    body += [
        section_lines(["*By alert, worst first*", *_tally_lines(storm)]),
        section(f"*{label}:* {cause_words(cause)}"),
    ]
    table = "Every target with its state now: the table in this thread"
    items = [table if storm.rows else "Live state not read", f"updated {fmt_clock(now)}"]
    fallback = f"{title}: {scale}. {label}: {cause_words(cause)}"
    tail = [context(items)]
    if ack is not None and storm.ended_at is None:
        tail.append(actions([ack_button(ack)], ACTIONS_BLOCK_ID))
    return message(fallback, body, tail)


def _title_and_when(storm: StormView, now: datetime) -> tuple[str, str]:
    if storm.ended_at is None:
        return "🌩️ Alert storm", f"*Since:* {fmt_since(storm.started_at, now)}"
    took = fmt_span((utc(storm.ended_at) - utc(storm.started_at)).total_seconds())
    if storm.resolved:
        span = f"{fmt_time(storm.started_at)} → {fmt_time(storm.ended_at)}"
        return "✅ Alert storm resolved", f"*Resolved after {took}* ({span})"
    firing = storm.counts.firing
    return "🌤️ Alert storm over", (
        f"*Lasted:* {took}, ended {fmt_since(storm.ended_at, now)} (no new groups since);"
        f" {counted(firing, 'alert')} still firing"
    )


def _cluster_lines(clusters: Sequence[ClusterStates]) -> list[str]:
    lines = [_cluster_line(c) for c in clusters[:CLUSTER_LINES]]
    if len(clusters) > CLUSTER_LINES:
        lines.append(f"… +{len(clusters) - CLUSTER_LINES} more clusters: see the table")
    return lines


def _cluster_line(c: ClusterStates) -> str:
    where = code(c.cluster) if c.cluster else "no configured cluster"
    parts = [f"{n} {STATE_WORDS[state]}" for state, n in c.states if state is not TargetState.NO_TARGET]
    if c.resolved:
        parts.append(f"{c.resolved} resolved")
    line = f"{where} · {counted(c.targets, 'target')}" + (": " + " · ".join(parts) if parts else "")
    # A control-plane alert (the probe CronJob's) names no target: said apart, not counted as one.
    untargeted = sum(n for state, n in c.states if state is TargetState.NO_TARGET)
    return line + (f"; and {counted(untargeted, 'alert')} naming no target" if untargeted else "")


def _tally_lines(storm: StormView) -> list[str]:
    """The first tallies and "+N more": only the lines shown are ranked and rendered."""
    total = storm.counts.alert_names
    shown = min(total, SIGNATURE_TALLIES)
    lines = [_tally_line(t) for t in storm.by_alert(shown)]
    return lines + ([f"… +{total - shown} more"] if total > shown else [])


def _tally_line(t: Tally) -> str:
    where = f" on {counted(t.targets, 'target')}" if t.targets else ", no target label"
    return f"{SEVERITY_MARK[t.worst]} *{esc(t.name)}*: {counted(t.count, 'alert')}{where}"


def cause_words(cause: StormCause) -> str:
    """The cause in words: what it is, the evidence it rests on, the next step."""
    if not cause.evidence:
        return SUSPECTED.get(cause.kind, SUSPECTED[CommonCause.UNCLEAR])
    if cause.kind is CommonCause.PEER_FEED:
        helps = "" if cause.down else ", so no fix on a target helps"
        return (
            f"{code(cause.cluster)}'s peer feed: `peer_cache_synced` is 0 on every one of the "
            f"{counted(cause.judged, 'failing target')} read behind it{_unjudged(cause)}: the client is not "
            f"getting current peer lists from the platform{helps}. Restore the client's peer feed first: "
            "its control plane's connection to the platform (the peer watch), the license, the platform "
            f"itself.{_down_words(cause)}"
        )
    if cause.kind is CommonCause.NETWORK_PATH:
        low, high = cause.dial_p99 or (0.0, 0.0)
        spread = fmt_seconds(low) if low == high else f"{fmt_seconds(low)} to {fmt_seconds(high)}"
        return (
            f"{code(cause.cluster)}'s network path: peer dial p99 {spread} on every one of the "
            f"{counted(cause.judged, 'failing target')} read behind it{_unjudged(cause)}, against the 5 s "
            "dial timeout: the client cannot reach its targets' endpoints. Run the path check for one of "
            "them, then check the client's egress NetworkPolicy, its UDP peer rules and the relay."
        )
    if cause.kind is CommonCause.ONE_TARGET:
        return (
            f"the target {code(cause.target)}: it fails from all {counted(cause.clusters, 'client cluster')} "
            "that proxy to it. Start with that target's control plane pods."
        )
    return _platform_words(cause)


def _platform_words(cause: StormCause) -> str:
    what = (
        "`peer_cache_synced` is 0 on every failing target read"
        if cause.via is CommonCause.PEER_FEED
        else "peer dials run into the 5 s timeout on every failing target read"
    )
    return (
        f"the platform, which every client shares: {what}, behind all "
        f"{counted(cause.clusters, 'client cluster')} ({counted(cause.judged, 'target')}). Check the "
        f"platform pods, their network and the license first.{_down_words(cause)}"
    )


def _down_words(cause: StormCause) -> str:
    """The targets also down on their own behind a peer feed: a restored feed will not heal them."""
    if not cause.down:
        return ""
    one = len(cause.down) == 1
    names = ", ".join(code(t) for t in cause.down[:DOWN_NAMED])
    more = f" and {len(cause.down) - DOWN_NAMED} more" if len(cause.down) > DOWN_NAMED else ""
    return (
        f" Besides, {counted(len(cause.down), 'target')} {'is' if one else 'are'} also down on "
        f"{'its' if one else 'their'} own ({names}{more}: no listed peer answers): restoring the peer "
        f"feed will not heal {'it' if one else 'them'}; start with {'its' if one else 'their'} control "
        "plane pods."
    )


def _unjudged(cause: StormCause) -> str:
    rest = cause.failing - cause.judged
    return f" ({rest} more with no series or not read: not counted)" if rest else ""


# -- the table -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TableFile:
    """The storm's table as a file to upload."""

    filename: str
    title: str
    content: bytes


def storm_table(storm: StormView, now: datetime, channel: str) -> TableFile:
    """Every target of the storm, one aligned row each, worst state first within each cluster."""
    lines = [
        f"Alert storm in {one_line(channel)} since {fmt_time(storm.started_at)}: "
        f"{counted(storm.targets, 'target')}, {counted(storm.alerts, 'alert')}; state now as read "
        f"{utc(now):%Y-%m-%d %H:%M:%S} UTC",
        "",
        *_aligned([COLUMNS, *(_cells(row) for row in storm.rows)]),
    ]
    title = f"Every target of the storm, state at {fmt_clock(now)}"
    return TableFile(TABLE_FILENAME, title, ("\n".join(lines) + "\n").encode())


def storm_table_reply(storm: StormView, now: datetime) -> Message:
    """Every target of the storm as a reply holding one `table` block (at most `TABLE_BLOCK_TARGETS`
    rows), worst state first within each cluster."""
    title = f"Every target of the storm, state at {fmt_clock(now)}"
    rows = [[_bold_cell(c) for c in COLUMNS], *([_raw_cell(c) for c in _cells(r)] for r in storm.rows)]
    table = {"type": "table", "column_settings": list(TABLE_COLUMN_SETTINGS), "rows": rows}
    fallback = f"{title}: {counted(storm.targets, 'target')}, {counted(storm.alerts, 'alert')}"
    return Message(fallback, (context([f"*{title}*"]), table))


def _raw_cell(text: str) -> dict[str, str]:
    return {"type": "raw_text", "text": _cell_text(text)}


def _bold_cell(text: str) -> dict[str, object]:
    words = {"type": "text", "text": _cell_text(text), "style": {"bold": True}}
    return {"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [words]}]}


def _cell_text(text: str) -> str:
    """Never empty (Slack refuses an empty cell), never longer than a cell may be."""
    return truncate(text, TABLE_CELL_CHARS) if text else "-"


def _cells(row: StormRow) -> tuple[str, ...]:
    alerts = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in row.alerts)
    since = "" if row.since is None else from_epoch(row.since).strftime("%Y-%m-%d %H:%M:%S")
    return (
        one_line(row.cluster or "-"),
        one_line(row.target or "-"),
        one_line(alerts) + (" (resolved)" if row.resolved else ""),
        state_cell(row),
        since,
    )


def state_cell(row: StormRow) -> str:
    """A target's state now in the table's words, with the numbers behind it."""
    live = row.live
    words = STATE_WORDS[live.state]
    if live.state is TargetState.NOT_READ:
        return f"{words}: {one_line(row.unread or 'not read')}"
    extra = []
    if live.state in (
        TargetState.NO_HEALTHY_QUARANTINED,
        TargetState.NO_HEALTHY_HALF_OPEN,
        TargetState.NO_PEERS,
    ):
        extra.append(
            f"healthy {fmt_count(live.healthy)}, quarantined {fmt_count(live.quarantined)}, "
            f"half_open {fmt_count(live.half_open)}"
        )
    if live.synced is False and live.state is not TargetState.CACHE_UNSYNCED:
        extra.append("cache unsynced")
    if live.dial_p99 is not None and live.state is not TargetState.HEALTHY:
        extra.append(f"dial p99 {fmt_seconds(live.dial_p99)}")
    return words + (f": {'; '.join(extra)}" if extra else "")


def _aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [min(cap, max(len(r[i]) for r in rows)) for i, cap in enumerate(COLUMN_WIDTHS)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
