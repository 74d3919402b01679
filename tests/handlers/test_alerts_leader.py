"""Several replicas on one store: only the leader runs the alert pipeline; another takes over when it dies."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Set as AbstractSet
from pathlib import Path

from bot.domain.alerts import AlertmanagerWebhook
from bot.lease import Lease
from bot.store import Store, StoredNotification, open_store
from handlers.alerts import AlertWorker
from tests.fakes.alert_pipeline import alert, webhook
from tests.waiting import eventually


class RecordingPipeline:
    """Closes each notification it is given, remembering which replica did."""

    def __init__(self, store: Store, name: str, done: list[tuple[str, int]]) -> None:
        self._store = store
        self._name = name
        self._done = done
        self.restores = 0

    async def restore(self) -> None:
        self.restores += 1

    async def process(self, notification: StoredNotification, *, settle: bool = False) -> bool:
        self._done.append((self._name, notification.id))
        return await self._store.mark_processed(notification.id)

    async def expire_storms(self) -> list[str]:
        return []

    def next_deadline(self) -> float | None:
        return None

    async def aclose(self) -> None:
        return None


async def accept(store: Store, n: int) -> None:
    raw = webhook([alert(f"f{n}", target=f"team-{n}/db")], group=f"{{}}:{{n={n}}}")
    await store.accept(raw, AlertmanagerWebhook.model_validate_json(raw), 0.0)


async def test_the_leader_processes_and_the_next_replica_takes_over_when_it_dies(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    store_a, store_b = await open_store(url, owner="replica-a"), await open_store(url, owner="replica-b")
    done: list[tuple[str, int]] = []
    pipe_a, pipe_b = RecordingPipeline(store_a, "a", done), RecordingPipeline(store_b, "b", done)
    worker_a = AlertWorker(store_a, pipe_a, lease=Lease(store_a, ttl=1.0), poll=0.05)
    worker_b = AlertWorker(store_b, pipe_b, lease=Lease(store_b, ttl=1.0), poll=0.05)
    try:
        task_a = asyncio.create_task(worker_a.run())
        await eventually(lambda: pipe_a.restores == 1, "replica a to lead", timeout=10)
        task_b = asyncio.create_task(worker_b.run())
        for n in range(3):
            await accept(store_b, n)  # accepted by the replica that does not lead: nothing wakes a
        await eventually(lambda: len(done) == 3, "three notifications done", timeout=10)
        assert {who for who, _ in done} == {"a"}
        task_a.cancel()  # a dies without handing the lease back
        with contextlib.suppress(asyncio.CancelledError):
            await task_a
        for n in range(3, 5):
            await accept(store_a, n)
        await eventually(lambda: len(done) == 5, "five notifications done", timeout=10)
        assert [who for who, _ in done[3:]] == ["b", "b"]
        assert pipe_b.restores == 1  # the new leader starts from the store
        assert sorted(i for _, i in done) == list(range(1, 6))  # each notification once
    finally:
        await worker_b.stop()
        task_b.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task_b
        await store_a.close()
        await store_b.close()


async def test_a_store_that_fails_does_not_end_the_worker(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'bot.db'}")
    done: list[tuple[str, int]] = []
    worker = AlertWorker(store, RecordingPipeline(store, "a", done), retry_seconds=0.05)
    broken = {"on": True}
    failed = {"reads": 0}
    real_pending = store.pending

    async def pending(
        limit: int | None = None, *, besides: AbstractSet[int] = frozenset()
    ) -> list[StoredNotification]:
        if broken["on"]:
            from bot.store import StoreError

            failed["reads"] += 1
            raise StoreError("sqlite: disk I/O error")
        return await real_pending(limit, besides=besides)

    store.pending = pending  # type: ignore[method-assign]
    task = asyncio.create_task(worker.run())
    try:
        await accept(store, 1)
        worker.wake()
        await eventually(
            lambda: failed["reads"] >= 2, "the worker to read the failing store again", timeout=10
        )
        assert not task.done()
        assert done == []
        broken["on"] = False  # the disk is back
        await eventually(lambda: len(done) == 1, "the notification done", timeout=10)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await store.close()
