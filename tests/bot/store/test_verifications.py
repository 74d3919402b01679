"""Verifications after resolve on both backends: scheduled once per episode, listed when due, closed once."""

from __future__ import annotations

import asyncio

from bot.domain.verification import Verification, VerificationOutcome
from bot.store import Store

CHANNEL, GROUP = "C1", '{}:{alertname="ResourceProxyNoHealthyPeers"}'


async def test_a_resolved_episode_keeps_its_first_due_time(store: Store) -> None:
    first = await store.schedule_verification(Verification(CHANNEL, GROUP, 100.0, 400.0))
    assert first == Verification(CHANNEL, GROUP, 100.0, 400.0)
    # Scheduled again (a restart, another leader): the first due time stands.
    assert await store.schedule_verification(Verification(CHANNEL, GROUP, 100.0, 900.0)) == first
    # The group's next episode has a verification of its own.
    assert await store.schedule_verification(Verification(CHANNEL, GROUP, 2000.0, 2300.0)) != first
    assert await store.verification(CHANNEL, GROUP, 100.0) == first
    assert await store.verification(CHANNEL, GROUP, 5.0) is None


async def test_only_pending_verifications_that_are_due_are_listed_earliest_first(store: Store) -> None:
    late = await store.schedule_verification(Verification(CHANNEL, "late", 1.0, 800.0))
    early = await store.schedule_verification(Verification(CHANNEL, "early", 1.0, 600.0))
    await store.schedule_verification(Verification(CHANNEL, "later", 1.0, 5000.0))
    assert await store.due_verifications(500.0) == []
    assert await store.due_verifications(800.0) == [early, late]
    assert await store.due_verifications(800.0, limit=1) == [early]
    assert await store.close_verification(early, VerificationOutcome.VERIFIED)
    assert await store.due_verifications(800.0) == [late]


async def test_a_verification_is_closed_once_whoever_closes_it(store: Store) -> None:
    pending = await store.schedule_verification(Verification(CHANNEL, GROUP, 100.0, 400.0))
    closed = await asyncio.gather(
        store.close_verification(pending, VerificationOutcome.UNVERIFIED),
        store.close_verification(pending, VerificationOutcome.FLAPPING),
    )
    assert sorted(closed) == [False, True]
    stored = await store.verification(CHANNEL, GROUP, 100.0)
    assert stored is not None
    assert stored.outcome in (VerificationOutcome.UNVERIFIED, VerificationOutcome.FLAPPING)
    assert stored.closed_at is not None
    unknown = Verification(CHANNEL, "unknown", 1.0, 1.0)
    assert not await store.close_verification(unknown, VerificationOutcome.VERIFIED)
