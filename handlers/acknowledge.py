"""Acknowledge ("I have it"): the `Acknowledger`, the *Acknowledge* / *Unacknowledge* buttons and
`/proxy ack|unack TARGET`.

The acknowledgement is a row of the store (`Store.acknowledge`), of the firing episode of the message that
carries the group: an incident's first group for its members, the storm summary for the groups in its
thread. The store keeps the first press of an episode: a second person is told who has it, ephemerally.
Then the message is edited through the outbox (shown again as it is when sent: its newest
content then, `Enqueuer.show_again`; the delivery worker lays the store's acknowledgement over every post
and edit, `bot.render.acknowledge`, so an edit queued by any replica shows it) and one line goes in its
thread. Keys are made of the press (`action_ts`), so a redelivered press queues nothing new. A group that
resolves and fires again starts a new episode, which nobody has acknowledged.

Who may: a person who may query the message's cluster from that channel (`access`); a message tied to no
one configured cluster (a storm summary, a group spanning clusters), anyone in a channel that may query
a configured cluster.

`/proxy ack|unack TARGET` act on the firing alert messages about TARGET (the alerts' `target` label) posted
in the channel the command is typed in: a target the configuration does not list can still be acknowledged
where its alerts are posted. A configured target needs a grant for its cluster from that channel, as the
buttons do.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncRespond

from bot.alerts.incident import members_of
from bot.alerts.outbox import Outbox
from bot.domain.acknowledgement import Acknowledgement
from bot.domain.alerts import AlertStatus
from bot.domain.messages import group_id, valid_target
from bot.domain.silences import group_labels_from_key
from bot.errors import InputError, Refused
from bot.render.acknowledge import acked_reply, taken_already, unacked_reply
from bot.render.blocks import Message, code, text_message
from bot.render.slack import ACTION_ACK, ACTION_UNACK
from bot.store.base import GroupStore
from bot.store.models import AlertGroupState
from config.settings import Requester, Settings
from handlers.command_access import Asker, target_for
from handlers.command_args import Invocation
from handlers.pressed import Pressed, answer_press, answer_slack, drawn_group

log = logging.getLogger(__name__)

NOT_TRACKED = "This alert is no longer tracked by proxybot (it was cleaned up): nothing to acknowledge."
Work = Callable[[], Awaitable[Message]]


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


# -- the buttons ------------------------------------------------------------------------------------------


def register(app: AsyncApp, settings: Settings, groups: GroupStore, acks: Acknowledger) -> None:
    """Add *Acknowledge* and *Unacknowledge* to `app`; `groups` is where a press finds its group."""
    for action_id, take in ((ACTION_ACK, True), (ACTION_UNACK, False)):
        listener = _button_listener(settings, groups, acks, take=take)
        app.action(action_id)(ack=answer_slack, lazy=[listener])


def _button_listener(
    settings: Settings, groups: GroupStore, acks: Acknowledger, *, take: bool
) -> Callable[..., Awaitable[None]]:
    async def acknowledge_alert(body: dict[str, Any], respond: AsyncRespond) -> None:
        async def run(pressed: Pressed) -> None:
            may_acknowledge(settings, pressed.ref.cluster, pressed.who)
            known = await groups.groups()
            carrier = firing_carrier(drawn_group(known, pressed.ref.group, pressed.who), known)
            # The message's edit and its thread line say it; the person who pressed is told only of a refusal.
            if take:
                await acks.acknowledge(carrier, pressed.who.user, pressed.user_name, pressed.press)
            else:
                await acks.unacknowledge(carrier, pressed.who.user, pressed.press)

        await answer_press(respond, "acknowledgement", run, body, log)

    return acknowledge_alert


# -- /proxy ack|unack TARGET ------------------------------------------------------------------------------


def plan_ack(
    settings: Settings, acks: Acknowledger | None, inv: Invocation, asker: Asker, press: str
) -> Work:
    """The work of `ack`/`unack TARGET`, validated and authorized; `press` tells this command apart."""
    target = valid_target(inv.arg(0))
    if target is None:
        raise InputError(f"{inv.sub}: TARGET must be `<project>/<name>`, as the alerts' `target` label")
    if acks is None:
        raise Refused("proxybot cannot acknowledge here: it runs without an outbox.")
    configured = any(c.target(target) is not None for c in settings.clusters)
    if configured:
        may_acknowledge(settings, target_for(settings, asker, target).cluster.name, asker.who)

    async def work() -> Message:
        known = await acks.store.groups()
        carriers = _carriers(_about(target, asker, known), known)
        if not carriers:
            return text_message(f"No firing alert about {code(target)} is posted in {asker.place}.")
        said = []
        for carrier in carriers:
            try:
                if inv.sub == "ack":
                    said.append(await acks.acknowledge(carrier, asker.who.user, asker.user_name, press))
                else:
                    said.append(await acks.unacknowledge(carrier, asker.who.user, press))
            except Refused as refusal:
                said.append(str(refusal))
        return text_message("\n".join(said))

    return work


def _about(target: str, asker: Asker, known: Iterable[AlertGroupState]) -> list[AlertGroupState]:
    """The firing groups about `target` whose messages are in the asker's channel."""
    refs = asker.who.channel_refs()
    return [
        g
        for g in known
        if (g.channel in refs or g.channel_id in refs)
        and g.status is AlertStatus.FIRING
        and g.storm is None
        and _names(g, target)
    ]


def _names(group: AlertGroupState, target: str) -> bool:
    """Whether the group's alerts are about `target`; a row that is no alert group (a digest's) is not."""
    labels = group.facts.firing_labels
    if not labels:
        try:
            labels = (group_labels_from_key(group.group_key),)
        except InputError:
            return False
    return any(one.get("target") == target for one in labels)


def _carriers(groups: list[AlertGroupState], known: list[AlertGroupState]) -> list[AlertGroupState]:
    """The messages showing `groups` (an incident's, a storm's once for all of theirs), still firing."""
    found: dict[tuple[str, str], AlertGroupState] = {}
    for group in groups:
        carrier = carrier_of(group, known)
        if still_firing(carrier, known):
            found.setdefault((carrier.channel, carrier.group_key), carrier)
    return list(found.values())
