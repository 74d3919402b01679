"""The resolution summary: when a group's message resolves, one thread reply (and one line in the resolved
message) says how long it fired, who took it and when, its silences and escalations, what it cost, and the
checks run from its thread.

The cost is Prometheus' `increase()` over the firing window when `prometheus.url` is set and it answers
within the enrichment budget; else the bot's own readings of the group's targets, taken with each of its
notifications and folded into the group's facts (`bot.domain.impact.ImpactTally`, resets counted as
`increase()` counts them). The reply is queued once per episode (its revision names the episode), and the
episode's record is written to `oncall_events` for the digest (keyed once, like the reply).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.alerts.outbox import Outbox
from bot.alerts.prom_enrich import PromQueries
from bot.alerts.silences import covering
from bot.alerts.state import ChannelGroup
from bot.domain.escalation import EscalationOutcome
from bot.domain.impact import Impact, ImpactSource, ImpactTally
from bot.domain.messages import AlertGroupView, GroupStatus
from bot.domain.resolution import EventKind, OncallEvent, Resolution, SilenceNote, of_kinds
from bot.errors import UpstreamError
from bot.ports import SilenceList
from bot.prom_queries import impact_failed, impact_queries, peak
from bot.render.blocks import Message
from bot.render.resolution import summary_reply
from bot.store.base import AlertStore
from bot.store.models import AlertGroupState
from config.settings import Settings

log = logging.getLogger(__name__)

INCIDENT_READINGS = "an incident's groups are counted from the readings taken with their alerts"
STORM_READINGS = "a storm's targets are counted from the readings taken with their alerts"


def tally(prev: AlertGroupState | None, group: ChannelGroup) -> ImpactTally:
    """The episode's readings with this notification's: a new episode (first post, firing again) starts
    afresh; a resolved group's last notification still counts (its readings end the window)."""
    kept = None if prev is None or prev.status.value == GroupStatus.RESOLVED.value else prev.facts.impact
    folded = kept or ImpactTally()
    for s in group.impact:
        folded = folded.fold(s)
    return folded


def targets_of(view: AlertGroupView) -> tuple[str, ...]:
    return tuple(sorted({a.target for a in view.alerts if a.target}))


@dataclass
class ResolutionDesk:
    """Builds and queues the summary of each resolved episode of a group's own message."""

    settings: Settings
    store: AlertStore  # the groups' rows, their acknowledgements, escalations and on-call events
    outbox: Outbox
    prometheus: PromQueries | None = None
    silences: SilenceList | None = None

    async def resolve(
        self,
        prev: AlertGroupState,
        view: AlertGroupView,
        readings: ImpactTally,
        *,
        extra: Sequence[ImpactTally] = (),
    ) -> Resolution | None:
        """The episode's resolution (None when the group's start is not known); `extra`: other groups'
        readings counted with it (an incident's members)."""
        if prev.first_firing_at is None:
            return None
        episode = prev.first_firing_at
        started = datetime.fromtimestamp(episode, UTC)
        resolved = view.resolved_at or started
        events = await self.store.episode_events(prev.channel, prev.group_key, episode)
        paged = await self._escalations(prev.channel, prev.group_key, episode, view.cluster)
        return Resolution(
            channel=prev.channel,
            group_key=prev.group_key,
            targets=targets_of(view),
            started_at=started,
            resolved_at=max(resolved, started),
            ack=await self.store.acknowledgement(prev.channel, prev.group_key),
            silences=self._silences(prev.facts.firing_labels, started, resolved),
            escalations=paged,
            checks=of_kinds(events, EventKind.PROBE, EventKind.PATH_CHECK),
            impact=await self._impact(view, started, resolved, readings, extra),
            severity=next((a.labels.get("severity") for a in view.alerts if a.labels.get("severity")), None),
        )

    async def post(self, resolution: Resolution, at: datetime, change: Message | None = None) -> None:
        """Queue the summary reply (after `change`, what the resolving notification changed) and record
        the episode, each once."""
        await self.outbox.reply(
            resolution.channel,
            resolution.group_key,
            summary_reply(resolution, at, change),
            f"summary:{resolution.episode!r}",
        )
        await self.record(resolution)

    async def record(self, resolution: Resolution) -> None:
        """The episode's record for the digest (once: keyed by the episode)."""
        key = f"resolved:{resolution.channel}:{resolution.group_key}:{resolution.episode!r}"
        record = json.dumps(resolution.record().to_json(), sort_keys=True)
        event = OncallEvent(
            key,
            resolution.channel,
            resolution.group_key,
            resolution.episode,
            EventKind.RESOLVED,
            resolution.resolved_at.timestamp(),
            "",
            record,
        )
        await self.store.record_event(event)

    async def storm_resolved(self, channel: str, key: str, started_at: float, ended_at: float) -> None:
        """A storm's summary resolved: its reply, from its groups' own readings (each group's tally; a
        storm's hundreds of targets are not asked of Prometheus one by one)."""
        groups = [
            (g, share)
            for g in await self.store.groups(channel=channel)
            if (share := g.facts.storm_share) is not None and share.storm == key
        ]
        tallies = [t for g, _ in groups if (t := g.facts.impact) is not None and t.readings]
        why = None if self.prometheus is None else STORM_READINGS
        started = datetime.fromtimestamp(started_at, UTC)
        resolved = max(started, datetime.fromtimestamp(ended_at, UTC))
        events = await self.store.episode_events(channel, key, started_at)
        paged = await self._escalations(channel, key, started_at, None)
        labels = [dict(labels) for g, _ in groups for labels in g.facts.firing_labels]
        resolution = Resolution(
            channel=channel,
            group_key=key,
            targets=tuple(sorted({name for _, share in groups for e in share.entries if (name := e.target)})),
            started_at=started,
            resolved_at=resolved,
            ack=await self.store.acknowledgement(channel, key),
            silences=self._silences(labels, started, resolved),
            escalations=paged,
            checks=of_kinds(events, EventKind.PROBE, EventKind.PATH_CHECK),
            impact=summed(tallies, why) if tallies else None,
        )
        await self.post(resolution, resolved)

    async def _escalations(
        self, channel: str, group_key: str, episode: float, cluster: str | None
    ) -> tuple[OncallEvent, ...]:
        """The episode's escalation when it was sent (the escalation side's row), as an on-call event."""
        found = await self.store.escalation(channel, group_key, episode)
        if found is None or found.outcome is not EscalationOutcome.SENT:
            return ()
        at = found.due_at if found.closed_at is None else found.closed_at
        mention = self.settings.escalation_for(cluster).mention
        key = f"escalated:{channel}:{group_key}:{episode!r}"
        return (OncallEvent(key, channel, group_key, episode, EventKind.ESCALATED, at, mention, ""),)

    def _silences(
        self, label_sets: Sequence[Mapping[str, str]], started: datetime, resolved: datetime
    ) -> tuple[SilenceNote, ...]:
        if self.silences is None:
            return ()
        during = [s for s in covering(self.silences.silences, label_sets) if s.starts_at < resolved]
        during = [s for s in during if s.ends_at > started]
        return tuple(
            SilenceNote(s.created_by, s.comment, s.starts_at, s.ends_at)
            for s in sorted(during, key=lambda s: s.starts_at)
        )

    async def _impact(
        self,
        view: AlertGroupView,
        started: datetime,
        resolved: datetime,
        readings: ImpactTally,
        extra: Sequence[ImpactTally] = (),
    ) -> Impact | None:
        cluster = None if view.cluster is None else self.settings.cluster(view.cluster)
        targets = targets_of(view)
        counted = [t for t in (readings, *extra) if t.readings]
        if self.prometheus is None or cluster is None or not targets or extra:
            why = None if self.prometheus is None or not extra else INCIDENT_READINGS
            return summed(counted, why) if counted else None
        try:
            async with asyncio.timeout(self.settings.enrichment.timeout_seconds):
                return await prometheus_impact(
                    self.prometheus,
                    cluster.match,
                    targets,
                    resolved.timestamp(),
                    (resolved - started).total_seconds(),
                    self.settings.enrichment.timeout_seconds,
                )
        except (UpstreamError, TimeoutError) as error:
            why = "it did not answer in time" if isinstance(error, TimeoutError) else str(error)
            log.warning("resolution summary: Prometheus not used: %s", why)
            return summed(counted, why) if counted else readings.impact(fallback=why)


def summed(tallies: Sequence[ImpactTally], fallback: str | None) -> Impact:
    """Several groups' readings as one impact (a storm's): counts and peaks added up."""
    failed: dict[tuple[str, str], float] = {}
    for t in tallies:
        for k, n in t.failed.items():
            failed[k] = failed.get(k, 0.0) + n
    return Impact(
        ImpactSource.READINGS,
        failed,
        sum(t.peak_quarantined for t in tallies),
        sum(t.peak_unsynced for t in tallies),
        sum(t.resets for t in tallies),
        sum(t.readings for t in tallies),
        fallback,
    )


async def prometheus_impact(
    client: PromQueries,
    match: Mapping[str, str],
    targets: Iterable[str],
    at: float,
    seconds: float,
    timeout: float,
) -> Impact:
    """The window's impact as Prometheus counts it, summed over `targets`."""
    failed: dict[tuple[str, str], float] = {}
    quarantined = unsynced = 0.0
    for target in targets:
        queries = impact_queries({**match, "target": target}, seconds)
        found = await asyncio.gather(*(client.query(q, at=at, timeout=timeout) for q in queries))
        for key, n in impact_failed(found[0]).items():
            failed[key] = failed.get(key, 0.0) + n
        quarantined += peak(found[1])
        unsynced += peak(found[2])
    return Impact(ImpactSource.PROMETHEUS, failed, quarantined, int(unsynced))
