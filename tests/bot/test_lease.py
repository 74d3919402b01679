"""The leader lease: every timing follows from its TTL, and the TTL is long enough for the fencing it does."""

from __future__ import annotations

import asyncio

import pytest

from bot import lease
from bot.clients.slack import DEFAULT_TIMEOUT
from bot.errors import ConfigError
from bot.lease import Lease, LeaseTimings, fencing_floor, lease_timings, process_work, send_work
from config.settings import Settings
from tests.fakes.alert_pipeline import cluster_config

# The several-replicas bar: the survivor posts within 12 s of the leader's death; its first post needs
# the lease, then about a second (the outbox read, one paced call).
FAILOVER_BAR = 12.0
FIRST_POST = 1.0


def settings(**sections: object) -> Settings:
    """Every default but the sections given (one cluster and a channel, which settings need)."""
    required = {"clusters": [cluster_config("alpha", "#alerts")], "slack": {"default_channel": "#alerts"}}
    return Settings.model_validate({**required, **sections})


def test_the_default_margins_outlast_the_work_they_fence() -> None:
    """Changing a margin, the Slack call timeout or the enrichment budget without the TTL fails here."""
    default = settings()
    timings = lease_timings(default)
    assert timings.ttl == default.store.lease_seconds
    assert timings.send_margin > send_work() > DEFAULT_TIMEOUT
    assert timings.process_margin > process_work(default.enrichment.timeout_seconds)
    # A fresh renewal meets every margin, so work goes on while the lease is renewed.
    assert max(timings.send_margin, timings.process_margin) <= timings.renew_below < timings.ttl


def test_the_default_lease_passes_on_within_the_failover_bar() -> None:
    timings = lease_timings(settings())
    assert timings.takeover + FIRST_POST <= FAILOVER_BAR, timings
    assert timings.retry_every < timings.ttl - timings.renew_below  # standbys ask between renewals


def test_the_timings_are_fractions_of_the_ttl() -> None:
    short, long = LeaseTimings(5.0), LeaseTimings(50.0)
    for name in ("renew_below", "retry_every", "send_margin", "process_margin", "takeover"):
        assert getattr(long, name) == pytest.approx(10 * getattr(short, name)), name


@pytest.mark.parametrize(
    ("store", "enrichment"),
    [
        ({"lease_seconds": 5.0}, {}),  # shorter than a Slack call's fencing
        ({}, {"timeout_seconds": 20.0}),  # the default TTL, a budget that outlives its margin
    ],
)
def test_a_ttl_shorter_than_fencing_needs_is_refused(store: object, enrichment: object) -> None:
    with pytest.raises(ConfigError) as refused:
        lease_timings(settings(store=store, enrichment=enrichment))
    (problem,) = refused.value.problems
    assert problem.startswith("store.lease_seconds: ")
    assert "fencing" in problem


def test_the_floor_is_accepted_and_a_little_less_is_not() -> None:
    floor = fencing_floor(2.0)
    assert floor > send_work()
    assert floor > process_work(2.0)
    ok = settings(store={"lease_seconds": floor + 0.01}, enrichment={"timeout_seconds": 2.0})
    assert lease_timings(ok).ttl == floor + 0.01
    with pytest.raises(ConfigError):
        lease_timings(settings(store={"lease_seconds": floor - 0.01}, enrichment={"timeout_seconds": 2.0}))


class LeaseTable:
    """The store's lease row, held by whoever asks while it is free or theirs (as `Store.hold_lease`)."""

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock
        self.holder: str | None = None
        self.until = 0.0
        self.asked = 0

    def store(self, owner: str) -> OwnerStore:
        return OwnerStore(self, owner)


class OwnerStore:
    def __init__(self, table: LeaseTable, owner: str) -> None:
        self._table = table
        self._owner = owner

    @property
    def owner(self) -> str:
        return self._owner

    async def hold_lease(self, name: str, ttl: float) -> float | None:
        table, now = self._table, self._table.clock[0]
        table.asked += 1
        if table.holder not in (None, self._owner) and table.until > now:
            return None
        table.holder, table.until = self._owner, now + ttl
        return table.until

    async def release_lease(self, name: str) -> None:
        self._table.holder = None


def test_renewed_once_renew_after_has_passed_and_lost_after_the_ttl() -> None:
    clock = [1000.0]
    table = LeaseTable(clock)
    a = Lease(table.store("a"), ttl=10.0, clock=lambda: clock[0])
    b = Lease(table.store("b"), ttl=10.0, clock=lambda: clock[0])

    async def scenario() -> None:
        assert await a.ensure(a.timings.send_margin)
        asked = table.asked
        clock[0] += 10.0 * lease.RENEW_AFTER - 0.1
        assert await a.ensure(a.timings.send_margin)
        assert table.asked == asked  # still fresh: no store call
        clock[0] += 0.2
        assert await a.ensure(a.timings.send_margin)
        assert table.asked == asked + 1  # renewed
        assert not await b.ensure()
        # a dies (no more renewals): b gets the lease once the TTL since a's last renewal is over.
        clock[0] += 10.0 - 0.1
        assert not await b.ensure()
        clock[0] += 0.2
        assert await b.ensure(b.timings.process_margin)
        assert b.term == 1

    asyncio.run(scenario())


def test_work_does_not_start_on_a_lease_shorter_than_its_margin() -> None:
    clock = [1000.0]
    table = LeaseTable(clock)
    a = Lease(table.store("a"), ttl=10.0, clock=lambda: clock[0])

    async def scenario() -> None:
        assert await a.ensure()
        table.holder, table.until = "b", clock[0] + 60.0  # another replica took it (a was paused)
        clock[0] += 10.0 - a.timings.send_margin + 0.1  # a's lease: still held, but for less than a send
        assert a.held
        assert not await a.ensure(a.timings.send_margin)

    asyncio.run(scenario())
