"""Escalation deadlines on both backends: scheduled once per episode, listed when due, closed once."""

from __future__ import annotations

import asyncio

from bot.domain.escalation import Escalation, EscalationOutcome
from bot.store import Store

CHANNEL, GROUP = "C1", '{}:{alertname="ResourceProxyNoHealthyPeers"}'


async def test_an_episode_keeps_its_first_deadline(store: Store) -> None:
    first = await store.schedule_escalation(Escalation(CHANNEL, GROUP, 100.0, 700.0))
    assert first == Escalation(CHANNEL, GROUP, 100.0, 700.0)
    # Scheduled again (a restart, another leader): the first deadline stands.
    assert await store.schedule_escalation(Escalation(CHANNEL, GROUP, 100.0, 900.0)) == first
    # A new firing episode of the same group has a deadline of its own.
    assert await store.schedule_escalation(Escalation(CHANNEL, GROUP, 2000.0, 2600.0)) != first
    assert await store.escalation(CHANNEL, GROUP, 100.0) == first


async def test_only_pending_deadlines_that_are_due_are_listed_earliest_first(store: Store) -> None:
    late = await store.schedule_escalation(Escalation(CHANNEL, "late", 1.0, 800.0))
    early = await store.schedule_escalation(Escalation(CHANNEL, "early", 1.0, 600.0))
    await store.schedule_escalation(Escalation(CHANNEL, "later", 1.0, 5000.0))
    assert await store.due_escalations(500.0) == []
    assert await store.due_escalations(800.0) == [early, late]
    assert await store.due_escalations(800.0, limit=1) == [early]
    assert await store.close_escalation(early, EscalationOutcome.ACKNOWLEDGED)
    assert await store.due_escalations(800.0) == [late]


async def test_a_deadline_is_closed_once_whoever_closes_it(store: Store) -> None:
    pending = await store.schedule_escalation(Escalation(CHANNEL, GROUP, 100.0, 700.0))
    closed = await asyncio.gather(
        store.close_escalation(pending, EscalationOutcome.SENT),
        store.close_escalation(pending, EscalationOutcome.SILENCED),
    )
    assert sorted(closed) == [False, True]
    stored = await store.escalation(CHANNEL, GROUP, 100.0)
    assert stored is not None
    assert stored.outcome in (EscalationOutcome.SENT, EscalationOutcome.SILENCED)
    assert stored.closed_at is not None
    assert not await store.close_escalation(Escalation(CHANNEL, "unknown", 1.0, 1.0), EscalationOutcome.SENT)
