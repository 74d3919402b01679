"""The leader lease: which one process of those sharing a store processes alerts and sends the outbox.

Any replica accepts webhooks and answers Slack (everything is stored first); the replica holding the
`leader` lease runs the alert pipeline and the delivery worker. It renews the lease as it works; when it
dies, the lease expires after `LEASE_TTL` seconds and the next replica to ask takes it over and finishes
what the dead one left (pending notifications, pending outbox rows). A SQLite store is one process's and
takes no lease (`bot/compose.py`). Each worker checks the lease before every unit of work with a margin
longer than that work can take (`ensure`), so a replica that lost the lease (paused, cut off from the
database) stops before the next replica could start on the same work.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from bot.store.base import LeaseStore

log = logging.getLogger(__name__)

LEADER = "leader"
# Lost within this long after the holder stops renewing (the several-replicas bar is 30 s).
LEASE_TTL = 20.0
# A replica without the lease asks again this often.
RETRY_EVERY = LEASE_TTL / 3


class Lease:
    """One named lease held (or wanted) by this process; shared by the workers that need it."""

    def __init__(
        self,
        store: LeaseStore,
        name: str = LEADER,
        *,
        ttl: float = LEASE_TTL,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self.name = name
        self.ttl = ttl
        self._clock = clock
        self._until = 0.0
        self._announced: bool | None = None
        # Counts the times this process took the lease after not holding it: each is a new leadership.
        self.term = 0
        # One renewal at a time: the workers sharing this lease wait for it rather than queue their own.
        self._renewing = asyncio.Lock()

    @property
    def held(self) -> bool:
        return self._until > self._clock()

    def remaining(self) -> float:
        """Seconds the lease is still ours for (0 when not held)."""
        return max(0.0, self._until - self._clock())

    async def acquire(self) -> bool:
        """Take or renew the lease now; True when this process holds it afterwards."""
        was_held = self.held
        until = await self._store.hold_lease(self.name, self.ttl)
        self._until = 0.0 if until is None else until
        if until is not None and not was_held:
            self.term += 1
        self._announce(until is not None)
        return until is not None

    async def ensure(self, margin: float = 0.0) -> bool:
        """True when the lease is ours for at least `margin` more seconds, renewing it once a third of
        its TTL has passed since the last renewal (so work in progress keeps it). A margin is at most two
        thirds of the TTL (a fresh renewal must be able to meet it)."""
        margin = min(margin, self.ttl * 2 / 3)
        if self.remaining() >= max(margin, self.ttl * 2 / 3):
            return True
        async with self._renewing:
            if self.remaining() >= max(margin, self.ttl * 2 / 3):  # renewed while this one waited
                return True
            return await self.acquire() and self.remaining() >= margin

    async def release(self) -> None:
        """Hand the lease back on a clean stop (another replica takes over at once, not after the TTL)."""
        if self._until > 0.0:
            self._until = 0.0
            await self._store.release_lease(self.name)
            log.info("lease %s released by %s", self.name, self._store.owner)

    def _announce(self, held: bool) -> None:
        if held == self._announced:
            return
        if held:
            log.info(
                "lease %s held by this replica (%s): processing alerts and sending",
                self.name,
                self._store.owner,
            )
        elif self._announced:
            log.warning(
                "lease %s lost by this replica (%s): another replica took over", self.name, self._store.owner
            )
        else:
            log.info(
                "lease %s is held by another replica: this one (%s) accepts and stores",
                self.name,
                self._store.owner,
            )
        self._announced = held
