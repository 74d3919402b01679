"""The alert groups firing now that have a message of their own: the digest's "Firing now" section.

Each links to its message in Slack's archive URL form, `https://<workspace>/archives/<channel ID>/p<ts
without the dot>`, which costs no Slack call per message: the workspace URL is auth.test's, asked once per
process (`SlackClient.workspace_url`); the channel ID and the ts are the group's row. Without either, the
group is mentioned without a link.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping

from bot.domain.alerts import AlertStatus
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
    """Every firing group with a message of its own, worst first, then oldest first, each headed as its
    message is: by its most severe firing alert, its own or a member's (what pages leads).

    A group that joined another's incident is left out: that incident's message is its message."""
    groups = [g for g in await store.firing_posts() if g.facts.incident is None]
    base = await workspace() if groups and workspace is not None else None
    found = [_firing(g, await _firing_members(store, g), base) for g in groups]
    return tuple(sorted(found, key=lambda a: -a.severity))  # the store answers oldest first: stable


async def _firing_members(store: Store, group: AlertGroupState) -> list[AlertGroupState]:
    members = [await store.get_group(group.channel, key) for key in group.facts.members]
    return [m for m in members if m is not None and m.status is AlertStatus.FIRING]


def _headline(labels: Mapping[str, str]) -> tuple[Severity, str]:
    return Severity.from_label(labels.get("severity", "")) or Severity.WARNING, labels.get("alertname", "")


def _firing(group: AlertGroupState, members: list[AlertGroupState], workspace: str | None) -> FiringAlert:
    labels = group.facts.firing_labels[0] if group.facts.firing_labels else {}
    channel_id = group.channel_id
    if channel_id is None and _CHANNEL_ID.fullmatch(group.channel):
        channel_id = group.channel  # configured by its ID: the ID the message is in
    # The alert severity its message's header shows: its own alert's, unless a member pages harder.
    severity, name = _headline(labels)
    for member in members:
        for member_labels in member.facts.firing_labels:
            more, member_name = _headline(member_labels)
            if more > severity:
                severity, name = more, member_name
    return FiringAlert(
        name=name or "alert group",
        target=labels.get("target"),
        alerts=max(1, len(group.firing_fingerprints)),
        severity=severity,
        since=group.first_firing_at or 0.0,
        link=archive_link(workspace, channel_id, group.ts),
    )
