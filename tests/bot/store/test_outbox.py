"""The Slack outbox: one row per logical operation, due in order, retried when told, never resurrected."""

from __future__ import annotations

from bot.store import OutboxKind, OutboxState, Store
from tests.bot.store.conftest import FakeClock

POST = {"channel": "C0ALERTS", "text": "ResourceProxyNoHealthyPeers firing", "blocks": []}


async def test_an_enqueued_operation_is_due_at_once(store: Store, clock: FakeClock) -> None:
    enqueued = await store.enqueue("post:C0ALERTS:g1", "C0ALERTS", OutboxKind.POST, POST)
    assert not enqueued.duplicate
    [item] = await store.due(clock.now)
    assert item.id == enqueued.id
    assert (item.key, item.channel, item.kind, item.state) == (
        "post:C0ALERTS:g1",
        "C0ALERTS",
        OutboxKind.POST,
        OutboxState.PENDING,
    )
    assert item.payload == POST
    assert (item.attempts, item.next_attempt_at, item.created_at) == (0, clock.now, clock.now)
    assert await store.depth() == 1


async def test_the_same_operation_enqueued_twice_is_one_row(store: Store, clock: FakeClock) -> None:
    first = await store.enqueue("post:C0ALERTS:g1", "C0ALERTS", OutboxKind.POST, POST)
    again = await store.enqueue("post:C0ALERTS:g1", "C0ALERTS", OutboxKind.POST, {**POST, "text": "other"})
    assert (again.id, again.duplicate, again.replaced) == (first.id, True, False)
    [item] = await store.due(clock.now)
    assert item.payload == POST
    assert await store.depth() == 1


async def test_a_pending_edit_can_be_replaced_by_newer_content(store: Store, clock: FakeClock) -> None:
    first = await store.enqueue("update:C0ALERTS:g1", "C0ALERTS", OutboxKind.UPDATE, {"text": "v1"})
    newer = await store.enqueue(
        "update:C0ALERTS:g1", "C0ALERTS", OutboxKind.UPDATE, {"text": "v2"}, replace_pending=True
    )
    assert (newer.id, newer.duplicate, newer.replaced) == (first.id, True, True)
    [item] = await store.due(clock.now)
    assert item.payload == {"text": "v2"}


async def test_a_delivered_operation_is_not_replaced_or_requeued(store: Store, clock: FakeClock) -> None:
    first = await store.enqueue("post:C0ALERTS:g1", "C0ALERTS", OutboxKind.POST, POST)
    assert await store.complete(first.id, {"ok": True, "ts": "1700000000.000100"})
    again = await store.enqueue("post:C0ALERTS:g1", "C0ALERTS", OutboxKind.POST, POST, replace_pending=True)
    assert (again.duplicate, again.replaced) == (True, False)
    assert await store.due(clock.now) == []
    item = await store.outbox_item("post:C0ALERTS:g1")
    assert item is not None
    assert item.state is OutboxState.DONE
    assert item.result == {"ok": True, "ts": "1700000000.000100"}
    assert await store.depth() == 0


async def test_a_failed_try_is_scheduled_again_and_counted(store: Store, clock: FakeClock) -> None:
    enqueued = await store.enqueue("post:C0ALERTS:g1", "C0ALERTS", OutboxKind.POST, POST)
    assert await store.retry_later(enqueued.id, at=clock.now + 30, error="ratelimited: Retry-After 30")
    assert await store.due(clock.now) == []
    assert await store.due(clock.now + 29.9) == []
    assert await store.next_attempt_at() == clock.now + 30
    [item] = await store.due(clock.now + 30)
    assert (item.attempts, item.last_error) == (1, "ratelimited: Retry-After 30")
    assert await store.retry_later(item.id, at=clock.now + 90, error="HTTP 503")
    [item] = await store.due(clock.now + 90)
    assert (item.attempts, item.last_error) == (2, "HTTP 503")
    assert await store.depth() == 1


async def test_a_long_error_is_cut(store: Store, clock: FakeClock) -> None:
    enqueued = await store.enqueue("post:C0ALERTS:g1", "C0ALERTS", OutboxKind.POST, POST)
    await store.retry_later(enqueued.id, at=clock.now, error="x" * 10_000)
    [item] = await store.due(clock.now)
    assert item.last_error == "x" * 2000


async def test_due_is_earliest_first_then_enqueue_order_and_bounded(store: Store, clock: FakeClock) -> None:
    ids = [(await store.enqueue(f"reply:{n}", "C0ALERTS", OutboxKind.REPLY, {"n": n})).id for n in range(4)]
    await store.retry_later(ids[0], at=clock.now + 10, error="timeout")
    assert [item.id for item in await store.due(clock.now)] == ids[1:]
    assert [item.id for item in await store.due(clock.now + 10)] == [*ids[1:], ids[0]]
    assert [item.id for item in await store.due(clock.now + 10, limit=2)] == ids[1:3]


async def test_an_operation_can_wait_until_a_given_time(store: Store, clock: FakeClock) -> None:
    await store.enqueue("update:g1", "C0ALERTS", OutboxKind.UPDATE, {}, not_before=clock.now + 2)
    assert await store.due(clock.now) == []
    assert len(await store.due(clock.now + 2)) == 1


async def test_late_outcomes_do_not_resurrect_a_finished_operation(store: Store, clock: FakeClock) -> None:
    enqueued = await store.enqueue("upload:g1", "C0ALERTS", OutboxKind.UPLOAD, {"file": "chart.png"})
    assert await store.complete(enqueued.id)
    assert not await store.retry_later(enqueued.id, at=clock.now, error="late timeout")
    assert not await store.give_up(enqueued.id, "late")
    assert not await store.complete(enqueued.id)
    item = await store.outbox_item("upload:g1")
    assert item is not None
    assert (item.state, item.attempts, item.result) == (OutboxState.DONE, 0, None)


async def test_an_operation_slack_refuses_for_good_is_kept_as_failed(store: Store, clock: FakeClock) -> None:
    enqueued = await store.enqueue("post:g1", "C0ALERTS", OutboxKind.POST, POST)
    assert await store.give_up(enqueued.id, "invalid_blocks")
    assert await store.due(clock.now + 3600) == []
    assert await store.depth() == 0
    assert await store.next_attempt_at() is None
    item = await store.outbox_item("post:g1")
    assert item is not None
    assert (item.state, item.attempts, item.last_error) == (OutboxState.FAILED, 1, "invalid_blocks")


async def test_prune_forgets_finished_operations_only(store: Store, clock: FakeClock) -> None:
    done = await store.enqueue("post:old", "C0ALERTS", OutboxKind.POST, POST)
    await store.complete(done.id)
    await store.enqueue("post:waiting", "C0ALERTS", OutboxKind.POST, POST)
    clock.advance(3600)
    assert await store.prune(before=clock.now - 60) == 1
    assert await store.outbox_item("post:old") is None
    assert await store.outbox_item("post:waiting") is not None
