"""Group commit: notifications accepted concurrently are committed together and each gets its own answer."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from bot.domain.alerts import parse_webhook
from bot.store import Accepted, Store, StoreError
from bot.store.arrivals import MAX_BATCH
from tests.bot.domain import alertmanager_samples as samples


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
    # Ids follow submission order, and pending returns exactly what was sent, oldest first.
    assert [outcome.id for outcome in outcomes] == sorted(outcome.id for outcome in outcomes)
    assert [stored.raw for stored in await store.pending()] == bodies


async def test_ha_peers_delivering_at_the_same_moment_store_one_row(store: Store) -> None:
    copy = samples.ha_peer_copy(samples.FIRING)
    first, second, third = await accept_all(store, [samples.FIRING, copy, samples.FIRING])
    assert first.duplicate is False
    assert (second, third) == (Accepted(first.id, True), Accepted(first.id, True))
    assert await store.pending_count() == 1


async def test_a_failed_commit_fails_every_arrival_of_its_batch(store: Store, db_path: Path) -> None:
    # The table vanishing behind the store's back makes every insert fail inside sqlite.
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute("DROP TABLE notifications")
    results = await asyncio.gather(
        *(store.accept(body, parse_webhook(body), 1.0) for body in (samples.FIRING, samples.ALL_RESOLVED)),
        return_exceptions=True,
    )
    assert all(isinstance(result, StoreError) for result in results)
    with pytest.raises(StoreError, match="no such table"):
        await store.accept(samples.ONE_RESOLVED, parse_webhook(samples.ONE_RESOLVED), 1.0)
