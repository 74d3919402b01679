"""Escalation: the leader's loop that pages the on-call handle for a firing message nobody took.

Every `every` seconds, on the replica holding the leader lease, `EscalationWatch.tick`:
1. gives each firing message (a group's, an incident's, a storm summary's) whose alerts escalate
   (`escalation.severities`) and whose current episode has been posted its deadline in the store, once per
   episode (`Store.schedule_escalation`: the first deadline stored is kept);
2. settles each deadline that is due (`Store.due_escalations`): acknowledged (the store) or silenced
   (Alertmanager's silences as `SilenceWatch` keeps them, read again before a reply) closes it quietly;
   otherwise one reply is queued in the message's thread, broadcast to the channel, mentioning
   `escalation.mention`, and the deadline is closed as sent.

The reply's outbox revision is the episode, so a leader that died between queueing it and closing the
deadline leaves a row the next leader finds (`Delivery.reply_queued`) and closes as sent: never a second
reply. The outbox sends it exactly once like every post (`bot.delivery.send`'s in-flight mark).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from bot.alerts.outbox import Outbox
from bot.delivery.send import Sleep
from bot.domain.alerts import AlertStatus
from bot.domain.escalation import Escalation, EscalationOutcome, deadline, escalates, outcome_at_deadline
from bot.domain.messages import group_id
from bot.lease import Lease, on_the_leader
from bot.ports import Clock, FreshSilences
from bot.render.escalation import escalation_reply
from bot.store.base import EscalationStore, GroupStore
from bot.store.models import AlertGroupState, StormRecord
from config.escalation import EscalationSettings
from config.settings import Settings

log = logging.getLogger(__name__)

TICK = 1.0  # seconds between looks: a deadline is kept to within about this


class EscalationReads(GroupStore, EscalationStore, Protocol):
    """The store's side (`bot.store.Store` is one): the groups, their acknowledgements, the deadlines."""


@dataclass(frozen=True)
class Carrier:
    """A firing message that may escalate: its row and the alerts it shows (an incident's members' and a
    storm's groups' count as its own)."""

    group: AlertGroupState
    label_sets: tuple[Mapping[str, str], ...]

    @property
    def episode(self) -> float:
        assert self.group.first_firing_at is not None
        return self.group.first_firing_at


def carries_itself(group: AlertGroupState) -> bool:
    """Whether a posted firing row escalates as its own message: not a member shown by an incident's or a
    storm's, nor a group posted before its storm was recognised (its alerts count in the storm, whose
    summary escalates once for all of them: one page per outage, not one per early group)."""
    facts = group.facts
    return group.first_firing_at is not None and not (
        facts.incident or facts.storm_thread or facts.storm_share
    )


def in_storm(group: AlertGroupState, storm_key: str) -> bool:
    """Whether the storm's summary carries the group: folded into it, or posted before it was recognised."""
    share = group.facts.storm_share
    return group.facts.storm_thread == storm_key or (share is not None and share.storm == storm_key)


def storm_alerts(storm: StormRecord) -> tuple[Mapping[str, str], ...]:
    """A storm's firing alerts as its record counts them (its groups' rows are read only when due)."""
    return tuple(
        {"alertname": e.alertname, "severity": e.severity.label, "target": e.target or ""}
        for entries in storm.entries.values()
        for e in entries
        if e.ended is None
    )


def configured(settings: Settings) -> bool:
    """Whether any alert can escalate (at the top level or for some cluster): else the watch is not run."""
    names = [None, *(c.name for c in settings.clusters)]
    return any(settings.escalation_for(name).enabled for name in names)


def revision(episode: float) -> str:
    """The escalation reply's outbox revision: one per firing episode."""
    return f"escalation:{episode!r}"


@dataclass
class EscalationWatch:
    """Deadlines of firing messages, kept in the store and settled on the leader."""

    settings: Settings
    store: EscalationReads
    outbox: Outbox
    clock: Clock
    silences: FreshSilences | None = None
    lease: Lease | None = None
    every: float = TICK
    sleep: Sleep = asyncio.sleep
    observe: Callable[[EscalationOutcome], None] = lambda outcome: None
    _scheduled: set[tuple[str, str, float]] = field(default_factory=set)

    async def run(self) -> None:
        await on_the_leader(self.lease, self.tick, every=self.every, what="escalations", sleep=self.sleep)

    def policy(self, carrier: Carrier) -> EscalationSettings:
        """The escalation of the message's cluster (the top level's when its alerts span clusters)."""
        found = (self.settings.cluster_for_alert(labels) for labels in carrier.label_sets)
        names = {None if c is None else c.name for c in found}
        return self.settings.escalation_for(names.pop() if len(names) == 1 else None)

    def _escalating(self, carrier: Carrier) -> EscalationSettings | None:
        policy = self.policy(carrier)
        if policy.enabled and escalates(carrier.label_sets, policy.severities):
            return policy
        return None

    async def tick(self) -> None:
        """Schedule the deadlines of newly posted episodes, then settle those that are due."""
        now = self.clock()
        rows = {(g.channel, g.group_key): g for g in await self.store.firing_messages() if carries_itself(g)}
        current: set[tuple[str, str, float]] = set()
        for (channel, key), row in rows.items():
            ident = (channel, key, row.first_firing_at or 0.0)
            if ident in self._scheduled:
                current.add(ident)
                continue
            carrier = await self.carrier(row)
            policy = self._escalating(carrier)
            if policy is None:  # looked at again next tick: a joining alert may escalate it
                continue
            await self.store.schedule_escalation(
                Escalation(channel, key, carrier.episode, deadline(now, policy.after))
            )
            current.add(ident)
        self._scheduled = current
        for pending in await self.store.due_escalations(now):
            message = rows.get((pending.channel, pending.group_key))
            shown = None if message is None else await self.carrier(message, due=True)
            await self.settle(pending, shown, now)

    async def carrier(self, row: AlertGroupState, *, due: bool = False) -> Carrier:
        """The message of `row` with the alerts it shows; `due`: a storm's read from its groups' rows,
        whose labels a silence is matched against (once per storm, at its deadline)."""
        if row.storm is not None and not due:
            return Carrier(row, storm_alerts(row.storm))
        members: list[AlertGroupState] = []
        if row.storm is not None:
            listed = await self.store.groups(row.channel, AlertStatus.FIRING)
            members = [g for g in listed if in_storm(g, row.group_key)]
        for key in row.facts.members:
            member = await self.store.get_group(row.channel, key)
            if member is not None and member.facts.incident == row.group_key:
                members.append(member)
        shown = [
            labels for g in members if g.status is AlertStatus.FIRING for labels in g.facts.firing_labels
        ]
        return Carrier(row, (*row.facts.firing_labels, *shown))

    async def settle(self, pending: Escalation, carrier: Carrier | None, now: float) -> EscalationOutcome:
        """Close one due deadline: its reply queued when nobody has the message; how it ended."""
        where, rev = (pending.channel, pending.group_key), revision(pending.episode)
        if await self.outbox.reply_queued(*where, rev):  # queued before a crash: it was sent
            return await self._close(pending, EscalationOutcome.SENT)
        policy = None if carrier is None else self._escalating(carrier)
        outcome = outcome_at_deadline(
            same_episode=carrier is not None and carrier.episode == pending.episode,
            still_escalates=policy is not None,
            acknowledged=await self.store.acknowledgement(*where) is not None,
            silenced=carrier is not None and self._silenced(carrier),
        )
        if outcome is EscalationOutcome.SENT and carrier is not None and await self._silenced_now(carrier):
            outcome = EscalationOutcome.SILENCED
        if outcome is EscalationOutcome.SENT and policy is not None:
            await self.outbox.reply(*where, escalation_reply(policy.mention, policy.after, now), rev)
            log.info(
                "group %s in %s escalated to %s", group_id(pending.group_key), pending.channel, policy.mention
            )
        return await self._close(pending, outcome)

    async def _silenced_now(self, carrier: Carrier) -> bool:
        """Silenced by what Alertmanager says now: a silence made elsewhere since the watch's last read
        (up to `alertmanager.poll_interval` ago) spares the on-call too."""
        if self.silences is None:
            return False
        await self.silences.refresh()
        return self._silenced(carrier)

    def _silenced(self, carrier: Carrier) -> bool:
        return self.silences is not None and self.silences.shown_for(carrier.label_sets) is not None

    async def _close(self, pending: Escalation, outcome: EscalationOutcome) -> EscalationOutcome:
        if await self.store.close_escalation(pending, outcome):
            self.observe(outcome)
        return outcome
