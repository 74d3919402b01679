"""Verified after resolve: the leader's loop that probes a resolved group's targets again.

Every `every` seconds, on the replica holding the leader lease, `VerificationWatch.tick`:
1. gives each episode that resolved lately (its `resolved` record in `oncall_events`, written by
   `bot.alerts.resolution`) a verification in the store, due `resolution.verify_after` after the leader
   first saw the record, once per episode (`Store.schedule_verification`: the first due time is kept);
   storm summaries and groups without a configured target are not verified;
2. settles each verification that is due (`Store.due_verifications`): a group that fired again since is
   `flapping`; else each affected client probes the target again (`bot.checks.recheck`: the probe *Probe
   now* runs, and the path check), and one reply in the message's thread says `verified` or `unverified`.
   The reply reopens nothing; the outcome is recorded as an on-call event, which the digest counts.

The reply's outbox revision is the episode, and the outcome is recorded before the reply is queued, so a
leader that died between queueing it and closing the row leaves both for the next leader to find: never a
second reply, nor a second probe.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from bot.alerts.outbox import Outbox
from bot.delivery.send import Sleep
from bot.domain.alerts import AlertStatus
from bot.domain.messages import group_id
from bot.domain.resolution import EventKind, OncallEvent
from bot.domain.verification import (
    MAX_RECHECKS,
    Recheck,
    Verdict,
    Verification,
    VerificationOutcome,
    flapping,
    judged,
)
from bot.lease import Lease, on_the_leader
from bot.ports import Clock
from bot.render.verification import verification_reply
from bot.store.base import GroupStore, VerificationStore
from bot.store.models import AlertGroupState
from config.clusters import ClusterSettings, TargetSettings
from config.settings import Settings

log = logging.getLogger(__name__)

TICK = 1.0  # seconds between looks: a verification is due to within about this
# How far back resolved records are looked at (by their resolve time): a leader down for longer does not
# verify what resolved before, long after it could say anything of the resolve.
HORIZON = 3600.0

Rechecker = Callable[[ClusterSettings, TargetSettings], Awaitable[Recheck]]


class VerificationReads(GroupStore, VerificationStore, Protocol):
    """The store's side (`bot.store.Store` is one): the groups, their on-call events, the verifications."""


def revision(episode: float) -> str:
    """The verification reply's outbox revision: one per resolved episode."""
    return f"verification:{episode!r}"


def event_key(v: Verification) -> str:
    return f"verification:{v.channel}:{v.group_key}:{v.episode!r}"


def verifies(row: AlertGroupState | None) -> bool:
    """Whether a resolved row's message is verified: a group's or an incident's own, not a storm's (its
    hundreds of targets) nor a member shown by another's message."""
    if row is None or row.storm is not None:
        return False
    facts = row.facts
    return not (facts.incident or facts.storm_thread or facts.storm_share)


def fired_again(row: AlertGroupState | None, episode: float) -> bool:
    """Whether the group fires again, or fired since `episode` resolved (a later episode began)."""
    if row is None:
        return False
    return row.status is AlertStatus.FIRING or (row.first_firing_at or episode) != episode


@dataclass
class VerificationWatch:
    """Verifications of resolved episodes, kept in the store and settled on the leader."""

    settings: Settings
    store: VerificationReads
    outbox: Outbox
    recheck: Rechecker
    clock: Clock  # the time messages show (the resolve times of the records)
    pacing: Clock  # due times
    lease: Lease | None = None
    every: float = TICK
    sleep: Sleep = asyncio.sleep
    observe: Callable[[VerificationOutcome], None] = lambda outcome: None
    _seen: set[str] = field(default_factory=set)

    async def run(self) -> None:
        await on_the_leader(self.lease, self.tick, every=self.every, what="verifications", sleep=self.sleep)

    async def tick(self) -> None:
        """Schedule the verifications of newly resolved episodes, then settle those that are due."""
        after = self.settings.resolution.verify_after
        if after <= 0:
            return
        await self.schedule(after)
        for pending in await self.store.due_verifications(self.pacing()):
            await self.settle(pending)

    async def schedule(self, after: float) -> None:
        due_at = self.pacing() + after
        seen: set[str] = set()
        for event in await self.store.events_since(EventKind.RESOLVED, self.clock() - HORIZON):
            seen.add(event.key)
            if event.key in self._seen:
                continue
            row = await self.store.get_group(event.channel, event.group_key)
            if row is None or not verifies(row) or not await self.pairs(row):
                continue
            await self.store.schedule_verification(
                Verification(event.channel, event.group_key, event.episode, due_at)
            )
        self._seen = seen

    async def pairs(self, row: AlertGroupState) -> list[tuple[ClusterSettings, TargetSettings]]:
        """The (client, target) pairs the message's alerts name, its incident's members' included."""
        label_sets = list(row.facts.firing_labels)
        for key in row.facts.members:
            member = await self.store.get_group(row.channel, key)
            if member is not None and member.facts.incident == row.group_key:
                label_sets += member.facts.firing_labels
        return _configured(self.settings, label_sets)[:MAX_RECHECKS]

    async def settle(self, pending: Verification) -> VerificationOutcome:
        """Close one due verification: its outcome recorded, its reply queued, each once."""
        where, rev = (pending.channel, pending.group_key), revision(pending.episode)
        recorded = await self._recorded(pending)
        if recorded is not None and await self.outbox.reply_queued(*where, rev):  # before a crash
            await self.outbox.show_again(*where, rev)  # once: keyed by the episode as the reply is
            return await self._close(pending, recorded)
        row = await self.store.get_group(*where)
        if fired_again(row, pending.episode):
            verdict = flapping(self.clock())
        else:
            pairs = [] if row is None else await self.pairs(row)
            rechecks = await asyncio.gather(*(self.recheck(c, t) for c, t in pairs))
            verdict = judged(rechecks, self.clock())
        await self._record(pending, verdict)
        await self.outbox.reply(*where, verification_reply(verdict), rev)
        # The resolved message shows it too, laid over its newest content as it is sent (still resolved).
        await self.outbox.show_again(*where, rev)
        log.info("group %s in %s %s", group_id(pending.group_key), pending.channel, verdict.sentence)
        return await self._close(pending, verdict.outcome)

    async def _recorded(self, pending: Verification) -> VerificationOutcome | None:
        events = await self.store.episode_events(pending.channel, pending.group_key, pending.episode)
        key = event_key(pending)
        kept = (Verdict.of_detail(e.detail) for e in events if e.key == key)
        return next((v.outcome for v in kept if v is not None), None)

    async def _record(self, pending: Verification, verdict: Verdict) -> None:
        await self.store.record_event(
            OncallEvent(
                event_key(pending),
                pending.channel,
                pending.group_key,
                pending.episode,
                EventKind.VERIFICATION,
                self.clock(),
                "",
                verdict.detail,  # the resolved message shows its sentence (`bot.delivery.send`)
            )
        )

    async def _close(self, pending: Verification, outcome: VerificationOutcome) -> VerificationOutcome:
        if await self.store.close_verification(pending, outcome):
            self.observe(outcome)
        return outcome


def _configured(
    settings: Settings, label_sets: Iterable[Mapping[str, str]]
) -> list[tuple[ClusterSettings, TargetSettings]]:
    found: dict[tuple[str, str], tuple[ClusterSettings, TargetSettings]] = {}
    for labels in label_sets:
        cluster = settings.cluster_for_alert(labels)
        target = None if cluster is None else cluster.target(labels.get("target", ""))
        if cluster is not None and target is not None:
            found.setdefault((cluster.name, target.name), (cluster, target))
    return [found[k] for k in sorted(found)]


def configured(settings: Settings) -> bool:
    """Whether resolves are verified: else the watch is not run."""
    return settings.resolution.verify_after > 0
