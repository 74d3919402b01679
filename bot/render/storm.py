"""A storm summary -> Slack Block Kit: the summary edited in place, and a group's line in its thread.

Moved out of `bot.render.slack`, whose small pieces (marks, counts, alert lines) it uses.
"""

from __future__ import annotations

from datetime import datetime

from bot.domain.messages import AlertGroupView, Tally
from bot.domain.storm_summary import CommonCause, StormView
from bot.render.blocks import (
    Message,
    code,
    context,
    esc,
    fmt_clock,
    fmt_since,
    fmt_span,
    header,
    message,
    section,
    section_lines,
)
from bot.render.slack import LIST_LINES, SEVERITY_MARK, _alert_line, _n, _seconds

CAUSE_WORDS = {
    CommonCause.PLATFORM_PATH: "many targets of several client clusters are failing together, which points "
    "at the shared platform path: relayed proxy traffic all runs through the vCluster Platform, making it "
    "one failure domain for otherwise independent clusters. Check the platform pods, their network and "
    "the license first, then whether clients fell back to the relay.",
    CommonCause.CLIENT_CLUSTER: "many targets of one client cluster are failing together: suspect that "
    "client's control plane and its link to the platform (peer watch, license, egress NetworkPolicy) "
    "before the targets themselves.",
    CommonCause.ONE_TARGET: "every alert is about one target: start with that target's control plane pods.",
    CommonCause.UNCLEAR: "no shared cause stands out; work through the groups in the thread, worst first.",
}


def storm_message(storm: StormView, now: datetime) -> Message:
    """The storm summary, edited in place: counts per alert and per target, worst first, likely cause."""
    alerts, groups = storm.alerts, storm.groups
    scale = (
        f"{_n(alerts, 'alert')} in {_n(groups, 'group')} on {_n(storm.targets, 'target')}"
        f" across {_n(storm.clusters, 'cluster')}"
    )
    if storm.ended_at is None:
        title, when = "🌩️ Alert storm", f"*Since:* {fmt_since(storm.started_at, now)}"
    else:
        took = fmt_span(_seconds(storm.started_at, storm.ended_at))
        title, when = "🌤️ Alert storm over", f"*Lasted:* {took}, ended {fmt_since(storm.ended_at, now)}"
    cause = CAUSE_WORDS[storm.common_cause()]
    body = [
        header(f"{title}: {_n(alerts, 'alert')}"),
        section_lines([f"*{scale}*", when]),
        section_lines(["*By alert, worst first*", *_tally_lines(storm, is_target=False)]),
        section_lines(["*By target, worst first*", *_tally_lines(storm, is_target=True)]),
        section(f"*Likely common cause:* {cause}"),
    ]
    items = ["Each group is one line in this thread", f"updated {fmt_clock(now)}"]
    return message(f"{title}: {scale}. Likely common cause: {cause}", body, [context(items)])


def _tally_lines(storm: StormView, *, is_target: bool) -> list[str]:
    """The first LIST_LINES tallies and "+N more": only the lines shown are ranked and rendered."""
    total = storm.targets if is_target else storm.counts.alert_names
    shown = min(total, LIST_LINES)
    tallies = storm.by_target(shown) if is_target else storm.by_alert(shown)
    lines = [_tally_line(t, is_target) for t in tallies]
    return lines + ([f"… +{total - shown} more"] if total > shown else [])


def _tally_line(t: Tally, is_target: bool) -> str:
    name = code(t.name) if is_target else f"*{esc(t.name)}*"
    spread = "" if is_target else f" on {_n(t.targets, 'target')}"
    return f"{SEVERITY_MARK[t.worst]} {name}: {_n(t.count, 'alert')}{spread}"


def storm_group_line(view: AlertGroupView, now: datetime) -> Message:
    """One group of a storm as a compact thread line."""
    first = sorted(view.alerts, key=lambda a: (-a.severity, a.name))[:1]
    line = _alert_line(first[0], now) if first else "empty group"
    more = f" (+{_n(len(view.alerts) - 1, 'more alert')})" if len(view.alerts) > 1 else ""
    cluster = f" · {code(view.cluster)}" if view.cluster else ""
    return message(f"{line}{more}{cluster}", [])
