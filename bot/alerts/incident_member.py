"""A member's share of its incident's thread: one details reply of its own, edited in place, and only the
other replies a group's own thread would get.

A group that joined an incident (`bot.alerts.incident`) has no message of its own, so its details reply
(`member_details_reply`: what joined and the shared cause, then every finding, the reason counts with their
meanings, the per-replica readings and the quantiles) goes into the incident message's thread, named after
the member (`member_reply`): posted when it joins, edited in place by each later notification of the member
(never a new reply per update), its header turning resolved when the member resolves. Besides it, the
thread gets what a group's own thread would (`worth_a_reply`): alerts added, the incident resolved with
the member's last alert, the member firing again; while it flaps, one note an hour instead.

Crash safety: the reply's outbox key is one per incident message and member, its edits one per
notification (`bot.delivery.keys`), so a re-run after a crash queues nothing new; a reply whose post Slack
took but whose answer was lost is found in the thread by its metadata (`bot/delivery/send.py`), not posted
again.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from bot.alerts.outbox import DETAILS_DEFER, DETAILS_REPLY, Outbox
from bot.alerts.state import ChannelGroup, change_since, worth_a_reply
from bot.domain.incident import Cause, Flaps
from bot.domain.messages import AlertGroupView, group_id
from bot.domain.moments import from_epoch
from bot.ports import Clock
from bot.render.alert_details import member_details_reply
from bot.render.incident import flapping_reply
from bot.render.slack import change_reply
from bot.store.models import AlertGroupState


def member_reply(member_key: str) -> str:
    """The name of a member group's details reply in its incident message's thread (one per member)."""
    return f"{DETAILS_REPLY}:{group_id(member_key)}"


class MemberThread:
    """Queues a member group's replies in its incident message's thread."""

    def __init__(self, outbox: Outbox, clock: Clock) -> None:
        self._outbox = outbox
        self._clock = clock

    async def details(
        self, identity: str, channel: str, incident: str, view: AlertGroupView, cause: Cause | None
    ) -> None:
        """The member's details reply in the thread of message `incident` (its first group's key):
        posted the first time, edited in place (once per notification `identity`) after."""
        body = member_details_reply(view, cause, self._now())
        await self._outbox.reply_in_place(
            channel,
            incident,
            body,
            reply=member_reply(view.group_key),
            revision=identity,
            defer=DETAILS_DEFER,
        )

    async def changes(
        self,
        identity: str,
        group: ChannelGroup,
        view: AlertGroupView,
        prev: AlertGroupState,
        flaps: Flaps,
        incident: AlertGroupView,
    ) -> Flaps:
        """A member's later notification, beyond its details: a reply when it is worth one, or, while it
        flaps, a note at most once an hour. The flaps as they are to be saved."""
        now, where = self._clock(), incident.group_key
        if flaps.flapping(now):
            if flaps.note_due(now):
                note = flapping_reply(view, flaps.count(now))
                await self._outbox.reply(group.channel, where, note, f"flapping:{identity}")
                return flaps.noted(now)
            return flaps
        # As the incident stands: "all resolved" only when its last group resolves, and a member resolving
        # while the incident fires is left to the edits (its line, its details reply's header).
        change = change_since(group, view, prev, self._now())
        change = replace(change, group_status=incident.status, started_at=incident.started_at)
        if worth_a_reply(change, prev):
            reply = change_reply(change, self._now())
            await self._outbox.reply(group.channel, where, reply, f"member:{identity}")
        return flaps

    def _now(self) -> datetime:
        return from_epoch(self._clock())
