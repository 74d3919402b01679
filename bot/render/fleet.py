"""The fleet as a message: a line per client, its targets and problems (`proxybot fleet`, `/proxy fleet`)."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.domain.fleet import FleetHealth, FleetReport, FleetRow
from bot.render.blocks import Block, Message, code, context, esc, fmt_time, header, message, section
from bot.render.words import counted


def _row(row: FleetRow) -> Block:
    mark = "🔴" if row.problems else "✅"
    where = f"{row.origin}" + (f", project {row.project}" if row.project else "")
    text = f"{mark} *{esc(row.name)}* ({esc(where)})"
    if row.control_plane:
        text += f" · control plane {code(row.control_plane)}"
    text += f" · alerts to {esc(row.channel or 'the default channel')}"
    for target in row.targets:
        text += f"\n   → {code(target.name)}: {esc(', '.join(target.group_versions))}"
    text += "".join(f"\n   ⚠️ {esc(problem)}" for problem in row.problems)
    return section(text)


def fleet_message(report: FleetReport) -> Message:
    """What the bot reads: every client with its targets, the clients that cannot be read and why."""
    source = f"the platform {report.platform}" if report.platform else "the configuration"
    if report.error is not None:
        title = "🔴 Fleet: cannot be read"
        failed = [header(title), section(esc(report.error))]
        return message(f"Fleet: cannot be read from {source}", failed, [context([f"Source: {esc(source)}"])])
    targets = sum(len(row.targets) for row in report.rows)
    with_problems = sum(1 for row in report.rows if row.problems)
    clients = f"{len(report.rows)} client" + ("" if len(report.rows) == 1 else "s")
    title = f"{'✅' if report.sound else '🔴'} Fleet: {clients}, {targets} target" + (
        "" if targets == 1 else "s"
    )
    body: list[Block] = [header(title), *(_row(row) for row in report.rows)]
    if report.problems:
        body.append(section("*The fleet's reading:*\n" + "\n".join(f"• {esc(p)}" for p in report.problems)))
    notes = [
        f"Source: {esc(source)}"
        + (f", {report.instances} VirtualClusterInstances" if report.platform else "")
    ]
    if with_problems:
        notes.append(f"{with_problems} with problems: not watched until they are fixed")
    if report.hidden:
        notes.append(f"{report.hidden} more you may not query from here")
    return message(title.removeprefix("✅ ").removeprefix("🔴 "), body, [context(notes)])


def fleet_note(health: FleetHealth | None) -> str | None:
    """The digest's line on the platform: how many clients it gave, and while it fails, since when and how
    old the fleet kept is (None: the fleet is the configuration's)."""
    if health is None:
        return None
    note = f"fleet from the platform: {counted(health.clients, 'client')}"
    if health.unread:
        more = f"{health.unread} more it lists whose proxy section has problems"
        note += f", and {more}: not watched (`/proxy fleet`)"
    if health.failing_since is None:
        return note
    since = fmt_time(datetime.fromtimestamp(health.failing_since, UTC))
    read = "never" if health.read_at is None else fmt_time(datetime.fromtimestamp(health.read_at, UTC))
    return f"{note}, as read {read}; the platform unreachable since {since}: that fleet is kept"
