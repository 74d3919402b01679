"""Several processes on one store: leases, digest claims, and posts in flight (both backends)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.store import DigestClaim, OutboxKind, Store, open_store
from tests.bot.store.conftest import FakeClock


@pytest.fixture
async def other(store_url: str, clock: FakeClock, store: Store) -> AsyncIterator[Store]:
    """A second process on the same database (opened after `store`, so the schema is there)."""
    opened = await open_store(store_url, clock=clock, owner="replica-b")
    yield opened
    await opened.close()


async def test_a_lease_is_held_by_one_process_until_it_expires(
    store: Store, other: Store, clock: FakeClock
) -> None:
    assert store.owner != other.owner
    assert await store.hold_lease("leader", ttl=15) == clock.now + 15
    assert await other.hold_lease("leader", ttl=15) is None
    clock.advance(10)
    assert await store.hold_lease("leader", ttl=15) == clock.now + 15  # renewed by its holder
    clock.advance(14.9)
    assert await other.hold_lease("leader", ttl=15) is None  # still live
    clock.advance(0.2)
    assert await other.hold_lease("leader", ttl=15) == clock.now + 15  # expired: taken over
    assert await store.hold_lease("leader", ttl=15) is None


async def test_a_released_lease_is_free_at_once_and_only_its_holder_releases_it(
    store: Store, other: Store
) -> None:
    assert await store.hold_lease("leader", ttl=15) is not None
    await other.release_lease("leader")  # not its lease: nothing happens
    assert await other.hold_lease("leader", ttl=15) is None
    await store.release_lease("leader")
    assert await other.hold_lease("leader", ttl=15) is not None


async def test_leases_are_independent_by_name(store: Store, other: Store) -> None:
    assert await store.hold_lease("a", ttl=15) is not None
    assert await other.hold_lease("b", ttl=15) is not None


async def test_a_digest_period_is_claimed_once_and_posted_once(
    store: Store, other: Store, clock: FakeClock
) -> None:
    assert await store.claim_digest("2026-12-01T08:00", ttl=30) == (DigestClaim.CLAIMED, clock.now + 30)
    assert await other.claim_digest("2026-12-01T08:00", ttl=30) == (DigestClaim.BUSY, clock.now + 30)
    clock.advance(20)
    assert await store.renew_digest("2026-12-01T08:00", ttl=30)
    assert not await other.renew_digest("2026-12-01T08:00", ttl=30)  # not its claim
    clock.advance(20)
    assert (await other.claim_digest("2026-12-01T08:00", ttl=30))[0] is DigestClaim.BUSY  # renewed: live
    await store.finish_digest("2026-12-01T08:00", {"targets": 3})
    assert await other.claim_digest("2026-12-01T08:00", ttl=30) == (DigestClaim.POSTED, None)
    assert await store.claim_digest("2026-12-01T08:00", ttl=30) == (DigestClaim.POSTED, None)
    assert not await store.renew_digest("2026-12-01T08:00", ttl=30)


async def test_a_claim_that_lapsed_unposted_is_taken_over(
    store: Store, other: Store, clock: FakeClock
) -> None:
    assert (await store.claim_digest("p", ttl=30))[0] is DigestClaim.CLAIMED
    clock.advance(31)  # its process died while building
    assert (await other.claim_digest("p", ttl=30))[0] is DigestClaim.CLAIMED
    assert (await store.claim_digest("p", ttl=30))[0] is DigestClaim.BUSY
    # A process may claim its own period again (a retry after a failed build).
    assert (await other.claim_digest("p", ttl=30))[0] is DigestClaim.CLAIMED


async def test_a_post_in_flight_is_marked_until_slack_answers(store: Store, clock: FakeClock) -> None:
    enqueued = await store.enqueue("post:#a:g", "#a", OutboxKind.POST, {"text": "x", "blocks": []})
    [item] = await store.due(clock.now)
    assert item.sent_at is None
    assert await store.mark_sending(enqueued.id, clock.now)
    [item] = await store.due(clock.now)
    assert item.sent_at == clock.now
    assert await store.mark_sending(enqueued.id, None)  # Slack refused it: no message was made
    [item] = await store.due(clock.now)
    assert item.sent_at is None
    await store.complete(enqueued.id, {"ts": "1.2"})
    assert not await store.mark_sending(enqueued.id, clock.now)  # only a pending row is marked


async def test_the_oldest_pending_operation_is_known(store: Store, clock: FakeClock) -> None:
    assert await store.oldest_pending_at() is None
    first = await store.enqueue("k1", "#a", OutboxKind.POST, {"text": "x"})
    start = clock.now
    clock.advance(5)
    await store.enqueue("k2", "#a", OutboxKind.POST, {"text": "y"})
    assert await store.oldest_pending_at() == start
    await store.complete(first.id)
    assert await store.oldest_pending_at() == start + 5


async def test_two_processes_enqueueing_one_key_make_one_row(store: Store, other: Store) -> None:
    first = await store.enqueue("digest:p", "#a", OutboxKind.POST, {"text": "one"})
    second = await other.enqueue("digest:p", "#a", OutboxKind.POST, {"text": "two"})
    assert (second.id, second.duplicate) == (first.id, True)
    item = await store.outbox_item("digest:p")
    assert item is not None
    assert item.payload == {"text": "one"}


async def test_a_post_is_marked_in_flight_only_by_the_lease_holder(
    store: Store, other: Store, clock: FakeClock
) -> None:
    row = await store.enqueue("post:#a:g", "#a", OutboxKind.POST, {"text": "x"})
    assert await store.hold_lease("leader", ttl=20) is not None
    assert await store.mark_sending(row.id, clock.now, fence="leader")
    assert not await other.mark_sending(row.id, clock.now, fence="leader")  # not its lease
    clock.advance(21)  # the holder stopped renewing; nobody holds it now
    assert not await store.mark_sending(row.id, clock.now, fence="leader")
    assert await other.hold_lease("leader", ttl=20) is not None
    assert await other.mark_sending(row.id, clock.now, fence="leader")


async def test_the_first_recorded_address_of_a_message_stays(store: Store) -> None:
    await store.record_post("#a", "g", "1.000001", "C0AAAAAA1")
    await store.record_post("#a", "g", "2.000002", "C0AAAAAA1")  # a late write from a lapsed leader
    group = await store.get_group("#a", "g")
    assert group is not None
    assert group.ts == "1.000001"
