"""The alert groups firing now that have a message of their own: the digest's "Firing now" section.

Each links to its message in Slack's archive URL form, `https://<workspace>/archives/<channel ID>/p<ts
without the dot>`, which costs no Slack call per message: the workspace URL is auth.test's, asked once per
process (`SlackClient.workspace_url`); the channel ID and the ts are the group's row. Without either, the
group is mentioned without a link.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from bot.domain.digest import FiringAlert
from bot.domain.findings import Severity
from bot.store import AlertGroupState, Store

# The workspace's URL (`https://acme.slack.com/`), validated; None when it is not known.
WorkspaceUrl = Callable[[], Awaitable[str | None]]

# A public, private or direct channel's ID; a message's ts (seconds, a dot, microseconds).
_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{2,}")
_TS = re.compile(r"[0-9]{1,12}\.[0-9]{1,9}")


def archive_link(workspace: str | None, channel_id: str | None, ts: str | None) -> str | None:
    """The message's archive URL, or None unless the workspace URL, channel ID and ts are all known."""
    if workspace is None or channel_id is None or ts is None:
        return None
    if not (_CHANNEL_ID.fullmatch(channel_id) and _TS.fullmatch(ts)):
        return None
    return f"{workspace}archives/{channel_id}/p{ts.replace('.', '')}"


async def firing_alerts(store: Store, workspace: WorkspaceUrl | None) -> tuple[FiringAlert, ...]:
    """Every firing group with a message of its own, worst first, then oldest first.

    A group that joined another's incident is left out: that incident's message is its message."""
    groups = [g for g in await store.firing_posts() if g.facts.incident is None]
    base = await workspace() if groups and workspace is not None else None
    found = [_firing(g, base) for g in groups]  # the store answers oldest first: a stable sort keeps it
    return tuple(sorted(found, key=lambda a: -a.severity))


def _firing(group: AlertGroupState, workspace: str | None) -> FiringAlert:
    labels = group.facts.firing_labels[0] if group.facts.firing_labels else {}
    channel_id = group.channel_id
    if channel_id is None and _CHANNEL_ID.fullmatch(group.channel):
        channel_id = group.channel  # configured by its ID: the ID the message is in
    # The worst the incident got, else the alert's `severity` label (as its message says).
    worst = group.facts.worst_seen
    severity = Severity.from_label(labels.get("severity", "")) or Severity.WARNING
    return FiringAlert(
        name=labels.get("alertname") or "alert group",
        target=labels.get("target"),
        alerts=max(1, len(group.firing_fingerprints)),
        severity=severity if worst is None else worst.severity,
        since=group.first_firing_at or 0.0,
        link=archive_link(workspace, channel_id, group.ts),
    )
