"""Acknowledge ("I have it"): the *Acknowledge* / *Unacknowledge* buttons and `/proxy ack|unack TARGET`.

The acknowledgement is a row of the store (`Store.acknowledge`), of the firing episode of the message that
carries the group: an incident's first group for its members, the storm summary for the groups in its
thread. The store keeps the first press of an episode: a second person is told who has it, ephemerally.
Then the message is edited through the delivery outbox (shown again as it is when sent: its newest
content then, `Enqueuer.show_again`; the delivery worker lays the store's acknowledgement over every post
and edit, `bot.render.acknowledge`, so an edit queued by any replica shows it) and one line goes in its
thread. Keys are made of the press (`action_ts`), so a redelivered press queues nothing new. A group that
resolves and fires again starts a new episode, which nobody has acknowledged.

Who may: a person who may query the message's cluster from that channel (`access`); a message tied to no
one configured cluster (a storm summary, a group spanning clusters), anyone in a channel that may query
a configured cluster.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bot.alerts.incident import members_of
from bot.alerts.outbox import Outbox
from bot.domain.acknowledgement import Acknowledgement
from bot.domain.alerts import AlertStatus
from bot.domain.messages import group_id
from bot.domain.silences import group_labels_from_key
from bot.errors import Refused
from bot.render.acknowledge import acked_reply, taken_already, unacked_reply
from bot.render.blocks import code
from bot.store.base import GroupStore
from bot.store.models import AlertGroupState
from config.settings import Requester, Settings

log = logging.getLogger(__name__)

NOT_TRACKED = "This alert is no longer tracked by proxybot (it was cleaned up): nothing to acknowledge."


@dataclass(frozen=True)
class Acknowledger:
    """Acknowledges and unacknowledges the message carrying a group, and says so in Slack."""

    store: GroupStore
    outbox: Outbox
    clock: Callable[[], float] = time.time

    async def acknowledge(self, carrier: AlertGroupState, user: str, name: str, press: str) -> str:
        """Take the carrier's episode for `user`; the sentence for the person who pressed (Refused when
        someone else has it)."""
        episode = _episode(carrier)
        held = await self.store.acknowledge(
            Acknowledgement(carrier.channel, carrier.group_key, episode, user, name, self.clock())
        )
        if held.user != user:
            raise Refused(taken_already(held))
        revision = f"ack:{user}:{press}"
        await self._edit(carrier, revision)
        await self.outbox.reply(carrier.channel, carrier.group_key, acked_reply(held), revision)
        log.info("group %s in %s acknowledged by %s", group_id(carrier.group_key), carrier.channel, user)
        return f"You have this alert ({_subject(carrier)}): acknowledged, shown on its message."

    async def unacknowledge(self, carrier: AlertGroupState, user: str, press: str) -> str:
        """Drop the carrier's acknowledgement, whoever has it (a hand-over); Refused when nobody has."""
        held = await self.store.acknowledgement(carrier.channel, carrier.group_key)
        if held is None or not await self.store.unacknowledge(
            carrier.channel, carrier.group_key, held.episode
        ):
            raise Refused(f"Nobody has acknowledged this alert ({_subject(carrier)}): nothing to undo.")
        revision = f"unack:{user}:{press}"
        await self._edit(carrier, revision)
        await self.outbox.reply(
            carrier.channel, carrier.group_key, unacked_reply(held, user, self.clock()), revision
        )
        log.info("group %s in %s unacknowledged by %s", group_id(carrier.group_key), carrier.channel, user)
        return f"Acknowledgement removed ({_subject(carrier)}): nobody has this alert now."

    async def _edit(self, carrier: AlertGroupState, revision: str) -> None:
        await self.outbox.show_again(carrier.channel, carrier.group_key, revision)


def _episode(carrier: AlertGroupState) -> float:
    if carrier.first_firing_at is None:
        raise Refused(NOT_TRACKED)
    return carrier.first_firing_at


def _subject(group: AlertGroupState) -> str:
    if group.storm is not None:
        return "the storm summary"
    labels = group_labels_from_key(group.group_key)
    name = labels.get("alertname")
    return code(name) if name else "its message"


# -- which message carries a group, and whether it still fires ----------------------------------------


def carrier_of(group: AlertGroupState, known: Iterable[AlertGroupState]) -> AlertGroupState:
    """The group whose message shows `group`: the incident it joined, the storm whose thread has it,
    else itself."""
    by_key = {g.group_key: g for g in known if g.channel == group.channel}
    for key in (group.facts.incident, group.facts.storm_thread):
        if key is not None and key in by_key:
            return by_key[key]
    return group


def still_firing(carrier: AlertGroupState, known: list[AlertGroupState]) -> bool:
    """Whether the carrier's message shows a firing alert: its own, or an incident member's."""
    if carrier.status is AlertStatus.FIRING:
        return True
    return any(m.status is AlertStatus.FIRING for m in members_of(carrier, known))


def firing_carrier(group: AlertGroupState | None, known: list[AlertGroupState]) -> AlertGroupState:
    if group is None:
        raise Refused(NOT_TRACKED)
    carrier = carrier_of(group, known)
    if not still_firing(carrier, known):
        raise Refused("This alert has resolved: there is nothing to acknowledge any more.")
    return carrier


def may_acknowledge(settings: Settings, cluster: str | None, who: Requester) -> None:
    """Refused, naming the rule, unless `who` may query the message's cluster from where they are."""
    if cluster is not None:
        if not settings.may_query(cluster, who):
            raise Refused(
                f"You may not acknowledge alerts of cluster {code(cluster)} from here: only people who may "
                "query it from this channel may (see `access` in proxybot's configuration)."
            )
        return
    if not any(settings.may_query(c.name, who) for c in settings.clusters):
        raise Refused(
            "You may not acknowledge alerts from here: this channel may query no configured cluster "
            "(see `access` in proxybot's configuration)."
        )
