"""Group commit: notifications accepted concurrently are committed together and each gets its own answer."""

from __future__ import annotations

import asyncio

import pytest

from bot.domain.alerts import parse_webhook
from bot.store import Accepted, Store, StoreError
from bot.store.arrivals import MAX_BATCH
from tests.bot.domain import alertmanager_samples as samples
from tests.bot.store.conftest import Raw


def body_for_group(n: int) -> bytes:
    payload = samples.as_dict(samples.FIRING)
    payload["groupKey"] = f'{{}}:{{target="team-{n}/x"}}'
    return samples.encode(payload)


async def accept_all(store: Store, bodies: list[bytes]) -> list[Accepted]:
    return list(await asyncio.gather(*(store.accept(body, parse_webhook(body), 1.0) for body in bodies)))


async def test_a_burst_larger_than_one_batch_is_stored_whole(store: Store) -> None:
    bodies = [body_for_group(n) for n in range(MAX_BATCH * 2 + 7)]
    outcomes = await accept_all(store, bodies)
    assert not any(outcome.duplicate for outcome in outcomes)
    assert len({outcome.id for outcome in outcomes}) == len(bodies)
    pending = await store.pending()
    assert [stored.id for stored in pending] == sorted(outcome.id for outcome in outcomes)
    assert sorted(stored.raw for stored in pending) == sorted(bodies)
    if store.backend == "sqlite":
        # One connection, one queue: ids follow submission order. (PostgreSQL takes concurrent requests on
        # several connections; Alertmanager sends a group's notifications one after another anyway.)
        assert [stored.raw for stored in pending] == bodies


async def test_ha_peers_delivering_at_the_same_moment_store_one_row(store: Store) -> None:
    copy = samples.ha_peer_copy(samples.FIRING)
    first, second, third = await accept_all(store, [samples.FIRING, copy, samples.FIRING])
    assert first.duplicate is False
    assert (second, third) == (Accepted(first.id, True), Accepted(first.id, True))
    assert await store.pending_count() == 1


async def test_a_failed_commit_fails_every_arrival_of_its_batch(store: Store, raw: Raw) -> None:
    # The table vanishing behind the store's back makes every insert fail inside the database.
    await raw("DROP TABLE notifications")
    results = await asyncio.gather(
        *(store.accept(body, parse_webhook(body), 1.0) for body in (samples.FIRING, samples.ALL_RESOLVED)),
        return_exceptions=True,
    )
    assert all(isinstance(result, StoreError) for result in results)
    with pytest.raises(StoreError, match=r'no such table|relation "notifications" does not exist'):
        await store.accept(samples.ONE_RESOLVED, parse_webhook(samples.ONE_RESOLVED), 1.0)
