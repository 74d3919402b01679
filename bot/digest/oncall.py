"""The digest's on-call figures: the episodes that resolved in the period (their records in `oncall_events`,
and their verifications' outcomes), the groups firing now (with their acknowledgement and escalation, if
any), and the silences active now (from the silence watch's copy of Alertmanager's list, never a read on
the digest's way)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable
from typing import Protocol

from bot.domain.escalation import EscalationOutcome
from bot.domain.oncall_figures import ActiveSilence, OncallFigures, OpenEpisode, figures
from bot.domain.resolution import EpisodeRecord, EventKind, OncallEvent
from bot.domain.silences import Silence
from bot.domain.verification import Verdict, VerificationOutcome
from bot.ports import SilenceList
from bot.store.base import EscalationStore, GroupStore
from bot.store.models import AlertGroupState

log = logging.getLogger(__name__)


class OncallStore(GroupStore, EscalationStore, Protocol):
    """What the figures read of the store: the events, the groups firing now, their acks and escalations."""


async def oncall_figures(
    store: OncallStore, silences: SilenceList | None, *, since: float, now: float
) -> OncallFigures:
    """The period's figures, from `since` to `now`."""
    records = [r for e in await store.events_since(EventKind.RESOLVED, since) if (r := _record(e))]
    posts = [g for g in await store.firing_posts() if g.facts.incident is None]
    firing = await asyncio.gather(*(_open(store, g) for g in posts))
    active = [] if silences is None else _active(silences.silences)
    verified = [o for e in await store.events_since(EventKind.VERIFICATION, since) if (o := _outcome(e))]
    return figures(records, firing, active, since=since, now=now, verifications=verified)


def _outcome(event: OncallEvent) -> VerificationOutcome | None:
    verdict = Verdict.of_detail(event.detail)
    if verdict is None:
        log.warning("verification %s not read: %r", event.key, event.detail)
    return None if verdict is None else verdict.outcome


def _record(event: OncallEvent) -> EpisodeRecord | None:
    try:
        return EpisodeRecord.from_json(json.loads(event.detail))
    except (ValueError, TypeError, AttributeError) as error:
        log.warning("on-call record %s not read: %s", event.key, error)
        return None


async def _open(store: OncallStore, group: AlertGroupState) -> OpenEpisode:
    targets = tuple(sorted({t for labels in group.facts.firing_labels if (t := labels.get("target"))}))
    since = group.first_firing_at or 0.0
    ack = await store.acknowledgement(group.channel, group.group_key)  # of the current episode only
    escalation = await store.escalation(group.channel, group.group_key, since)
    sent = escalation is not None and escalation.outcome is EscalationOutcome.SENT
    return OpenEpisode(targets, since, None if ack is None else max(0.0, ack.at - since), sent)


def _active(silences: Iterable[Silence]) -> list[ActiveSilence]:
    return [
        ActiveSilence(s.created_by, s.ends_at, s.comment, tuple(str(m) for m in s.matchers))
        for s in silences
        if s.state == "active"
    ]
