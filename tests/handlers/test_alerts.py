"""The alert worker: drains on start and on wake, retries then sets aside failures, ends storms, stops."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.alerts.storm import StormPolicy
from bot.delivery.worker import Delivery
from bot.domain.alerts import AlertmanagerWebhook
from bot.live import ClusterRead
from bot.store import OutboxItem, OutboxKind, Store, StoredNotification, open_store
from handlers.alerts import AlertWorker, register
from tests.fakes.alert_pipeline import Clock, FakeLive, NoSlack, alert, settings, webhook


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def store(tmp_path: Path, clock: Clock) -> AsyncIterator[Store]:
    opened = await open_store(f"sqlite:///{tmp_path / 'proxybot.db'}", clock=clock)
    yield opened
    await opened.close()


async def accept(store: Store, raw: bytes) -> None:
    await store.accept(raw, AlertmanagerWebhook.model_validate_json(raw), 0.0)


def group(n: int) -> bytes:
    return webhook([alert(f"f{n}", target=f"team-{n}/db")], group=f"{{}}:{{n={n}}}")


async def outbox(store: Store) -> list[OutboxItem]:
    return await store.due(1e12, limit=1000)


class WatchedStore:
    """The real store, announcing every call that returned, so a test can wait for the worker's task."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.changed = asyncio.Event()
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            result = await method(*args, **kwargs)
            self.calls.append(name)
            self.changed.set()
            return result

        return call

    async def until(self, condition: Callable[[], Awaitable[bool]]) -> None:
        # The timeout guards against a hang; it is not a timing assertion.
        async with asyncio.timeout(10):
            while True:
                self.changed.clear()
                if await condition():
                    return
                await self.changed.wait()


async def until_drained(store: WatchedStore) -> None:
    async def drained() -> bool:
        count: int = await store.pending_count()
        return count == 0

    await store.until(drained)


async def test_the_worker_drains_what_was_accepted_before_it_started(store: Store, clock: Clock) -> None:
    await accept(store, group(1))
    await accept(store, group(2))
    watched = WatchedStore(store)
    worker = register(settings(), watched, Delivery(store, NoSlack(), clock=clock), FakeLive(), clock=clock)
    worker.start()
    try:
        await until_drained(watched)
    finally:
        await worker.stop()
    posts = [i.payload["group_key"] for i in await outbox(store) if i.kind is OutboxKind.POST]
    assert posts == ["{}:{n=1}", "{}:{n=2}"]  # oldest first


async def test_the_intakes_wake_event_makes_the_worker_process_a_new_notification(
    store: Store, clock: Clock
) -> None:
    wake = asyncio.Event()
    delivery = Delivery(store, NoSlack(), clock=clock)
    watched = WatchedStore(store)
    worker = register(settings(), watched, delivery, FakeLive(), wake=wake, clock=clock)
    task = asyncio.create_task(worker.run())
    try:

        async def idle() -> bool:
            return "pending" in watched.calls

        await watched.until(idle)  # the first drain found nothing; the worker now waits for the event
        await accept(store, group(1))
        for _ in range(20):
            await asyncio.sleep(0)  # turns for nothing to happen: without the event the worker stays asleep
        assert await store.pending_count() == 1  # not polled: only the event wakes the worker
        wake.set()  # what the intake's on_accepted does
        await until_drained(watched)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert [i.kind for i in await outbox(store)] == [OutboxKind.POST, OutboxKind.REPLY]  # and its details


class FlakyPipeline:
    """Processes notifications by closing them, except those of one group, which always fail."""

    def __init__(self, store: Store, failing_group: str) -> None:
        self.store = store
        self.failing_group = failing_group
        self.seen: list[int] = []
        self.settled: list[int] = []
        self.closed = False

    async def restore(self) -> None:
        return None

    async def process(self, notification: StoredNotification, *, settle: bool = False) -> bool:
        self.seen.append(notification.id)
        if settle:
            self.settled.append(notification.id)
        if notification.webhook.group_key == self.failing_group:
            raise RuntimeError("rendering bug")
        await self.store.mark_processed(notification.id)
        return True

    async def expire_storms(self) -> list[str]:
        return []

    def next_deadline(self) -> float | None:
        return None

    async def aclose(self) -> None:
        self.closed = True


async def test_a_failing_notification_is_retried_then_set_aside_without_blocking_others(store: Store) -> None:
    await accept(store, group(1))
    await accept(store, group(2))
    pipeline = FlakyPipeline(store, "{}:{n=1}")
    worker = AlertWorker(store, pipeline, max_failures=2)
    assert await worker.drain() is True  # something needs another try
    assert pipeline.seen == [1, 2]  # the failure did not hold up the next one
    assert [n.id for n in await store.pending()] == [1]
    assert await worker.drain() is False  # second failure: set aside
    assert pipeline.seen == [1, 2, 1]
    assert await store.pending_count() == 0


async def test_the_notification_that_empties_the_queue_settles_the_storm_summaries(store: Store) -> None:
    for n in range(5):
        await accept(store, group(n))
    pipeline = FlakyPipeline(store, "none")
    worker = AlertWorker(store, pipeline, batch=2)
    assert await worker.drain() is False
    assert pipeline.seen == [1, 2, 3, 4, 5]
    # Full batches may be followed by more; only the last of the short batch is known to be last.
    assert pipeline.settled == [5]


class HoldingPipeline(FlakyPipeline):
    """Holds the first notifications open (applied, closed later with their storm's row), as the pipeline
    does with the one that empties the queue while its storm's row lags."""

    def __init__(self, store: Store, holds: int) -> None:
        super().__init__(store, "none")
        self.holds = holds

    async def process(self, notification: StoredNotification, *, settle: bool = False) -> bool:
        if notification.id <= self.holds:
            self.seen.append(notification.id)
            return False
        return await super().process(notification, settle=settle)


async def test_notifications_held_open_do_not_hide_the_ones_behind_them(store: Store) -> None:
    """More held than a batch: the drain still reaches the rest (it stopped there, until the storm's row
    was saved, as if the queue were empty)."""
    for n in range(30):
        await accept(store, group(n))
    pipeline = HoldingPipeline(store, holds=25)
    worker = AlertWorker(store, pipeline, batch=10)
    assert await worker.drain() is False
    assert sorted(set(pipeline.seen)) == list(range(1, 31))
    assert [n.id for n in await store.pending()] == list(range(1, 26))


async def test_the_worker_pauses_between_notifications_so_requests_go_first(store: Store) -> None:
    for n in range(3):
        await accept(store, group(n))
    pipeline = FlakyPipeline(store, "none")
    pauses: list[list[int]] = []

    async def pause() -> None:
        pauses.append(list(pipeline.seen))

    assert await AlertWorker(store, pipeline, pause=pause).drain() is False
    assert pauses == [[1], [1, 2], [1, 2, 3]]


async def test_the_worker_ends_a_quiet_storm(store: Store, clock: Clock) -> None:
    wake = asyncio.Event()
    delivery = Delivery(store, NoSlack(), clock=clock)
    policy = StormPolicy(groups=1, quiet_seconds=120, gather_seconds=0.0)  # the summary at once
    watched = WatchedStore(store)
    worker = register(settings(), watched, delivery, FakeLive(), wake=wake, storm=policy, clock=clock)
    task = asyncio.create_task(worker.run())
    try:
        for n in range(3):
            await accept(store, group(n))
        wake.set()

        async def summary_queued() -> bool:
            return any(i.payload.get("group_key", "").startswith("storm:") for i in await outbox(store))

        await watched.until(summary_queued)
        # The last notification stays open until the storm's row counts it, which the worker's
        # deadline loop saves once `settle_seconds` have passed on its clock.
        clock.now += policy.settle_seconds
        await until_drained(watched)
        clock.now += 120
        wake.set()

        async def storm_over() -> bool:
            return any("storm over" in i.payload.get("text", "") for i in await outbox(store))

        await watched.until(storm_over)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


class HangingLive(FakeLive):
    """A cluster read that never answers; records being cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.cancelled = False

    async def read(self, cluster: str) -> ClusterRead:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        raise AssertionError("unreachable")


async def test_stopping_the_worker_cancels_reads_left_running_past_the_budget(
    store: Store, clock: Clock
) -> None:
    live = HangingLive()
    delivery = Delivery(store, NoSlack(), clock=clock)
    watched = WatchedStore(store)
    worker = register(settings(timeout=0.01), watched, delivery, live, clock=clock)
    await accept(store, group(1))
    worker.start()
    await until_drained(watched)
    assert "enrichment took longer than 0.01s" in str((await outbox(store))[0].payload)
    assert live.cancelled is False  # late, but left running for LiveState's cache
    await worker.stop()
    assert live.cancelled is True
