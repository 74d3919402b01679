"""Group commit for accepted notifications: arrivals that queue up while the store thread is busy are
committed together, so a storm costs one transaction per batch instead of one per notification.

Each `accept()` appends its arrival to a shared queue and submits a job to the store thread. The first
job to run takes every arrival queued by then and commits them in one transaction; the later jobs find
their arrival already settled and only report it. Nothing waits for a batch to fill: with no
contention every batch holds one arrival and the latency is that of a single commit. An arrival whose
caller was cancelled before its job ran stays queued and is committed with the next batch: its sender
got no answer and will retry, finding a duplicate.
"""

from __future__ import annotations

import sqlite3
from collections import deque

from bot.store import notifications
from bot.store.models import Accepted
from bot.store.notifications import PendingNotification
from bot.store.thread import ConnectionThread
from bot.store.transaction import run_steps

# Bounds one transaction, so a huge backlog still commits (and answers) in steps.
MAX_BATCH = 256


class ArrivalQueue:
    """Accepts notifications through the store thread, committing those that queue up together."""

    def __init__(self, thread: ConnectionThread) -> None:
        self._thread = thread
        # Appended on the event loop thread, drained on the store thread: deque appends and pops are
        # atomic, and an arrival is always queued before the job that settles it is submitted.
        self._queued: deque[PendingNotification] = deque()

    async def accept(self, arrival: PendingNotification) -> Accepted:
        self._queued.append(arrival)
        return await self._thread.run(lambda conn: self._settle(conn, arrival))

    def _settle(self, conn: sqlite3.Connection, arrival: PendingNotification) -> Accepted:
        while arrival.accepted is None and arrival.error is None:
            # Loops only when more than MAX_BATCH were queued ahead of this arrival.
            _accept_batch(conn, self._take_batch())
        if arrival.error is not None:
            raise arrival.error
        assert arrival.accepted is not None
        return arrival.accepted

    def _take_batch(self) -> list[PendingNotification]:
        batch: list[PendingNotification] = []
        while self._queued and len(batch) < MAX_BATCH:
            batch.append(self._queued.popleft())
        return batch


def _accept_batch(conn: sqlite3.Connection, arrivals: list[PendingNotification]) -> None:
    """Commit several arrivals in one transaction (one WAL append, at most one fsync) and record outcomes.

    A failure fails the whole batch: every arrival in it gets the error and its sender retries.
    """
    try:
        outcomes = run_steps(conn, notifications.accept(arrivals))
    except BaseException as error:
        for arrival in arrivals:
            arrival.error = error
        raise
    for arrival, accepted in zip(arrivals, outcomes, strict=True):
        arrival.accepted = accepted
