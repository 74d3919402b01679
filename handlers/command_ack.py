"""`/proxy ack TARGET` and `/proxy unack TARGET`: the *Acknowledge* buttons, from a command.

They act on the firing alert messages about TARGET (the alerts' `target` label) posted in the channel the
command is typed in: a target the configuration does not list can still be acknowledged where its
alerts are posted. A configured target needs a grant for its cluster from that channel, as the buttons do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from bot.domain.alerts import AlertStatus
from bot.domain.messages import valid_target
from bot.domain.silences import group_labels_from_key
from bot.errors import InputError, Refused
from bot.render.blocks import Message, code, text_message
from bot.store.models import AlertGroupState
from config.settings import Settings
from handlers.acknowledge import Acknowledger, carrier_of, may_acknowledge, still_firing
from handlers.command_access import Asker, target_for
from handlers.command_args import Invocation

Work = Callable[[], Awaitable[Message]]


def plan_ack(
    settings: Settings, acks: Acknowledger | None, inv: Invocation, asker: Asker, press: str
) -> Work:
    """The work of `ack`/`unack TARGET`, validated and authorized; `press` tells this command apart."""
    target = valid_target(inv.arg(0))
    if target is None:
        raise InputError(f"{inv.sub}: TARGET must be `<project>/<name>`, as the alerts' `target` label")
    if acks is None:
        raise Refused("proxybot cannot acknowledge here: it runs without a delivery outbox.")
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
