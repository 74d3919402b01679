"""The leader lease: which one process of those sharing a store processes alerts and sends the outbox.

Any replica accepts webhooks and answers Slack (everything is stored first); the replica holding the `leader`
lease runs the alert pipeline and the delivery worker. It renews the lease as it works; when it dies, the
lease expires after its TTL (`store.lease_seconds`) and the next replica to ask takes it over and finishes
what the dead one left (pending notifications, pending outbox rows). A SQLite store is one process's and takes
no lease (`bot/compose.py`). Each worker checks the lease before every unit of work with a margin longer than
that work can take (`ensure`), so a replica that lost the lease (paused, cut off from the database) stops
before the next replica could start on the same work.

Every timing of the lease is a fraction of its one setting, the TTL (`store.lease_seconds`), stated here
once (`LeaseTimings`); `fencing_floor` is the shortest TTL whose margins still outlast the work they
fence (a Slack call's timeout, a notification's enrichment budget), and a shorter one is refused.
A dead leader's work is taken over at most `ttl + retry_every` after it died.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.clients.slack_timeouts import DEFAULT_TIMEOUT as SLACK_CALL_TIMEOUT
from bot.errors import ConfigError
from config.settings import Settings

if TYPE_CHECKING:  # the store's modules are not needed to judge a TTL (`check-config`)
    from bot.store.base import LeaseStore

log = logging.getLogger(__name__)

LEADER = "leader"
# The lease's timings, as fractions of its TTL. The holder renews it once RENEW_AFTER of the TTL has
# passed since the last renewal; a replica without it asks again every RETRY_AFTER of the TTL.
RENEW_AFTER = 0.15
RETRY_AFTER = 0.05
# A Slack post starts only while the lease is ours for SEND_MARGIN of the TTL, a notification only while
# it is ours for PROCESS_MARGIN: each must outlast its work (`fencing_floor`), and a fresh renewal must
# meet it (at most 1 - RENEW_AFTER).
SEND_MARGIN = 0.85
PROCESS_MARGIN = 0.85
# The work those margins fence, beyond the timeouts that bound it: the in-flight mark written before a
# post; a notification's store writes and rendering beyond its enrichment budget.
MARK_WRITE = 1.0
PROCESS_WRITES = 3.0


@dataclass(frozen=True, slots=True)
class LeaseTimings:
    """Every timing of one lease, derived from its TTL."""

    ttl: float

    @property
    def renew_below(self) -> float:
        """Renewed when it is ours for less than this."""
        return self.ttl * (1.0 - RENEW_AFTER)

    @property
    def retry_every(self) -> float:
        return self.ttl * RETRY_AFTER

    @property
    def send_margin(self) -> float:
        return self.ttl * SEND_MARGIN

    @property
    def process_margin(self) -> float:
        return self.ttl * PROCESS_MARGIN

    @property
    def takeover(self) -> float:
        """The longest a dead holder's work waits for another replica: the TTL, then one retry."""
        return self.ttl + self.retry_every


def send_work(slack_timeout: float = SLACK_CALL_TIMEOUT) -> float:
    """The longest a fenced Slack post takes: its in-flight mark, then the call up to its timeout."""
    return MARK_WRITE + slack_timeout


def process_work(enrichment_seconds: float) -> float:
    """The longest one notification's processing takes: its enrichment budget, then the writes."""
    return enrichment_seconds + PROCESS_WRITES


def fencing_floor(enrichment_seconds: float, slack_timeout: float = SLACK_CALL_TIMEOUT) -> float:
    """The shortest TTL whose margins outlast the work they fence."""
    return max(send_work(slack_timeout) / SEND_MARGIN, process_work(enrichment_seconds) / PROCESS_MARGIN)


def short_ttl(settings: Settings) -> str | None:
    """Why `store.lease_seconds` is too short for fencing, or None when it is long enough."""
    ttl = settings.store.lease_seconds
    floor = fencing_floor(settings.enrichment.timeout_seconds)
    if ttl >= floor:
        return None
    return (
        f"store.lease_seconds: {ttl:g} s is shorter than fencing needs ({floor:.1f} s: a Slack "
        f"call's {SLACK_CALL_TIMEOUT:g} s timeout and enrichment.timeout_seconds "
        f"{settings.enrichment.timeout_seconds:g} s must end before the lease could pass on)"
    )


def lease_problems(settings: Settings) -> list[str]:
    """What `serve` refuses of the lease: a TTL too short for fencing on a store replicas share (SQLite
    takes no lease); `check-config` asks the same."""
    problem = short_ttl(settings) if settings.store.shared else None
    return [] if problem is None else [problem]


def lease_timings(settings: Settings) -> LeaseTimings:
    """The leader lease's timings from `store.lease_seconds`; refused when fencing needs a longer TTL."""
    problem = short_ttl(settings)
    if problem is not None:
        raise ConfigError([problem])
    return LeaseTimings(settings.store.lease_seconds)


class Lease:
    """One named lease held (or wanted) by this process; shared by the workers that need it."""

    def __init__(
        self,
        store: LeaseStore,
        name: str = LEADER,
        *,
        ttl: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self.name = name
        self.ttl = ttl
        self.timings = LeaseTimings(ttl)
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
        """True when the lease is ours for at least `margin` more seconds, renewing it once RENEW_AFTER of
        its TTL has passed since the last renewal (so work in progress keeps it). A margin is at most
        `renew_below` (a fresh renewal must be able to meet it)."""
        renew_below = self.timings.renew_below
        margin = min(margin, renew_below)
        if self.remaining() >= renew_below:
            return True
        async with self._renewing:
            if self.remaining() >= renew_below:  # renewed while this one waited
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


async def on_the_leader(
    lease: Lease | None,
    tick: Callable[[], Awaitable[None]],
    *,
    every: float,
    what: str,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Run `tick` every `every` seconds while this replica holds the lease (always, without one), for ever:
    a store that fails is a warning naming `what`, anything else its traceback; the next tick may work."""
    from bot.store.errors import StoreError  # here: judging a TTL (`check-config`) loads no store

    while True:
        try:
            if lease is None or await lease.ensure():
                await tick()
        except StoreError as err:
            log.warning("%s not looked at this time: %s", what, err)
        except Exception:  # the loop never ends: the next tick may work
            log.exception("%s: a tick failed", what)
        await sleep(every)
