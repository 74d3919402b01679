"""Alertmanager notifications: the worker that turns accepted notifications into Slack operations.

The intake (`POST /alertmanager`) only stores a notification and calls `AlertWorker.wake`. The worker
drains every pending notification, oldest first, when it starts (a restart finishes what was accepted
before the crash) and whenever it is woken; between wake-ups it also ends storms that went quiet.
One notification failing does not hold up the others: it is retried on a later pass, and set aside
(logged, closed) after `max_failures` tries, since one that fails every time would block nothing but
would be retried forever.

With several replicas on one store, only the replica holding the leader lease (`bot.lease`) runs the
pipeline; it also looks at the store every `poll` seconds, since another replica's intake cannot wake
it. A replica that becomes the leader restores the storms from the store first. A store that fails
(unreachable, disk full) is logged and tried again; the worker never dies of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from bot.alerts.budget import ObserveWait
from bot.alerts.change_enrich import ChangeHistory
from bot.alerts.log_enrich import LogSource
from bot.alerts.outbox import Outbox
from bot.alerts.pipeline import AlertPipeline, LiveStateReader, TargetPodsSource
from bot.alerts.prom_enrich import PromEnricher
from bot.alerts.stale_check import ActiveAlerts
from bot.alerts.storm import StormPolicy
from bot.lease import Lease
from bot.ports import Clock, SilenceList
from bot.store.base import AlertStore, NotificationStore
from bot.store.errors import StoreError
from bot.store.models import StoredNotification
from config.settings import Settings

log = logging.getLogger(__name__)


class Processor(Protocol):
    """What the worker drives (`bot.alerts.pipeline.AlertPipeline` is one)."""

    async def restore(self) -> None: ...

    async def process(self, notification: StoredNotification, *, settle: bool = False) -> bool: ...

    async def expire_storms(self) -> list[str]: ...

    def next_deadline(self) -> float | None: ...

    async def aclose(self) -> None: ...


async def _next_turn() -> None:
    await asyncio.sleep(0)


class AlertWorker:
    """Runs the alert pipeline over pending notifications; `wake()` is the intake's `on_accepted`."""

    def __init__(
        self,
        queue: NotificationStore,
        pipeline: Processor,
        *,
        # Small: each pending() parses its batch on the store thread, ahead of the intake's writes.
        batch: int = 20,
        retry_seconds: float = 5.0,
        max_failures: int = 5,
        wake: asyncio.Event | None = None,
        clock: Clock = time.time,
        pause: Callable[[], Awaitable[None]] = _next_turn,
        lease: Lease | None = None,
        poll: float | None = None,
    ) -> None:
        self._queue = queue
        self._lease = lease
        self._poll = poll
        self._restored_term: int | None = None
        self._pipeline = pipeline
        self._batch = batch
        self._retry_seconds = retry_seconds
        self._max_failures = max_failures
        self._clock = clock
        # Awaited between notifications: requests (webhooks, slash-command acks) go first.
        self._pause = pause
        # Shared with whoever signals new work (the app's `Deps.wake`, which the intake sets).
        self._wake = wake if wake is not None else asyncio.Event()
        self._failures: dict[int, int] = {}
        self._task: asyncio.Task[None] | None = None

    def wake(self) -> None:
        """A notification was accepted: drain soon. Safe to call from the request path."""
        self._wake.set()

    def start(self) -> asyncio.Task[None]:
        """Start `run()` as a task (once)."""
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name="proxybot-alert-worker")
        return self._task

    async def stop(self) -> None:
        """Cancel the worker; what it had not closed stays pending for the next start."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def run(self) -> None:
        """Drain, end quiet storms, sleep until woken (or a storm or retry is due); until cancelled."""
        try:
            while True:
                try:
                    if not await self._leading():
                        # Wakes (this replica's intake) do not help: the leader is elsewhere.
                        self._wake.clear()
                        await asyncio.sleep(self._retry_every)
                        continue
                    await self._restore_once_per_term()
                    self._wake.clear()
                    retry = await self.drain()
                    if await self._leading():  # a lapsed lease: the storms are the next leader's
                        await self._pipeline.expire_storms()
                except StoreError as error:
                    log.error(
                        "alerts: the store failed, trying again in %g s: %s", self._retry_seconds, error
                    )
                    await self._wait(self._retry_seconds)
                    continue
                await self._idle(retry)
        finally:
            await self._pipeline.aclose()

    async def _leading(self, margin: float = 0.0) -> bool:
        """Whether this process runs the pipeline now (always, without a lease)."""
        return self._lease is None or await self._lease.ensure(margin)

    @property
    def _retry_every(self) -> float:
        return 0.0 if self._lease is None else self._lease.timings.retry_every

    @property
    def _process_margin(self) -> float:
        """A notification starts only while the lease outlasts its processing (`bot.lease.PROCESS_MARGIN`)."""
        return 0.0 if self._lease is None else self._lease.timings.process_margin

    async def _restore_once_per_term(self) -> None:
        """Each leadership starts from the store, not from memory: another replica may have led between."""
        term = 0 if self._lease is None else self._lease.term
        if self._restored_term != term:
            await self._pipeline.restore()
            self._restored_term = term

    async def drain(self) -> bool:
        """Process every pending notification once, oldest first; True when some must be retried."""
        skipped: set[int] = set()
        held: set[int] = set()  # applied, closed by the pipeline once its storm rows are saved
        while True:
            # Past the ones this drain already saw (they stay pending, oldest first): in a storm's trickle
            # a batch's worth of held ones hid every newer notification until the storm's row was saved.
            batch = await self._queue.pending(limit=self._batch, besides=skipped | held)
            if not batch:
                return bool(skipped)
            for notification in batch:
                if not await self._leading(self._process_margin):
                    return False  # another replica leads now; what is left stays pending for it
                # The last of a short batch empties the queue (as far as we know): the pipeline closes it
                # only once the storm rows count it, so "nothing pending" means they are complete.
                settle = notification is batch[-1] and len(batch) < self._batch
                outcome = await self._process(notification, settle)
                if outcome is None:
                    skipped.add(notification.id)
                elif not outcome:
                    held.add(notification.id)
                # Requests (webhooks, slash-command acks) never wait behind a whole drain.
                await self._pause()

    async def _process(self, notification: StoredNotification, settle: bool) -> bool | None:
        """True: closed; False: held open by the pipeline; None: failed, to be retried."""
        try:
            closed = await self._pipeline.process(notification, settle=settle)
        except StoreError:
            raise  # the store, not this notification: no try is counted against it
        except Exception:
            return True if await self._failed(notification) else None
        self._failures.pop(notification.id, None)
        return closed

    async def _failed(self, notification: StoredNotification) -> bool:
        count = self._failures.get(notification.id, 0) + 1
        group = notification.webhook.group_key
        if count < self._max_failures:
            self._failures[notification.id] = count
            log.exception(
                "notification %d of group %r failed (try %d), retrying", notification.id, group, count
            )
            return False
        log.exception("notification %d of group %r failed %d times: set aside", notification.id, group, count)
        self._failures.pop(notification.id, None)
        await self._queue.mark_processed(notification.id)
        return True

    async def _idle(self, retry: bool) -> None:
        waits = [self._retry_seconds] if retry else []
        if self._poll is not None:
            waits.append(self._poll)
        deadline = self._pipeline.next_deadline()
        if deadline is not None:
            waits.append(max(0.0, deadline - self._clock()))
        await self._wait(min(waits, default=None))

    async def _wait(self, seconds: float | None) -> None:
        """Until woken, or `seconds` passed (None: until woken)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._wake.wait()


def register(
    settings: Settings,
    store: AlertStore,
    outbox: Outbox,
    live: LiveStateReader,
    *,
    wake: asyncio.Event | None = None,
    storm: StormPolicy | None = None,
    clock: Clock = time.time,
    pacing: Clock | None = None,
    prometheus: PromEnricher | None = None,
    pause: Callable[[], Awaitable[None]] | None = None,
    lease: Lease | None = None,
    poll: float | None = None,
    logs: LogSource | None = None,
    pods: TargetPodsSource | None = None,
    observe_wait: ObserveWait | None = None,
    alertmanager: ActiveAlerts | None = None,
    silences: SilenceList | None = None,
    arrivals: Callable[[], float | None] | None = None,
    changes: ChangeHistory | None = None,
) -> AlertWorker:
    """Create the alert pipeline and its worker; nothing runs until `worker.run()` does.

    In `proxybot serve`: `register(deps.settings, deps.store, delivery, live, wake=deps.wake)` and
    `create_app(deps, workers=[worker.run, ...])`, whose lifespan runs and cancels it; the intake sets
    `deps.wake` for every new notification. Elsewhere `worker.start()` / `await worker.stop()`.
    With `prometheus`, alerts are also enriched with Prometheus' windowed counts and p99s, and each new
    group gets a chart of its key series in its thread. With `logs`, alerts of clients whose control plane
    is configured also show the log reference's lines from its pods. With `pods`, each alert's target gets the
    quick-triage verdict (its control-plane pods read within the enrichment budget). `observe_wait` is
    told each notification's wait for its reads, per part (the bot's metric). `alertmanager` is asked
    before a suspected stale copy is skipped (without it, none is). `silences` (the silence watch) are
    listed in the resolution summaries. `arrivals`: when this process last took in a notification, when
    it takes in every one (a storm's table then waits for no pause that is already over). `clock` tells
    the time the messages show; `pacing` (default: `clock`) times the worker's waits and a storm's pauses.
    `changes`: the instances' kept history, for what changed before each alert (a fleet from the platform).
    """
    pipeline = AlertPipeline(
        settings,
        store,
        outbox,
        live,
        storm=storm,
        clock=clock,
        pacing=pacing,
        prometheus=prometheus,
        logs=logs,
        pods=pods,
        observe_wait=observe_wait or (lambda part, seconds: None),
        alertmanager=alertmanager,
        silences=silences,
        arrivals=arrivals,
        changes=changes,
    )
    return AlertWorker(
        store, pipeline, wake=wake, clock=pacing or clock, pause=pause or _next_turn, lease=lease, poll=poll
    )
