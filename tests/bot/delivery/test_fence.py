"""The lease fences every post where it is made: a leader stalled after its own lease check (a GC pause,
SIGSTOP, a lost database connection) posts nothing once another replica holds the lease in the store."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.delivery.keys import post_key
from bot.delivery.worker import Delivery
from bot.lease import Lease
from bot.store import OutboxState, open_store
from tests.bot.delivery.test_worker import ALERTS, FAST, msg, running, slack_at, until
from tests.fakes.slack_api import FakeSlack

TTL = 30.0


async def test_a_stalled_leader_posts_nothing_once_another_replica_holds_the_lease(
    fake: FakeSlack, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.delivery.worker")
    url = f"sqlite:///{tmp_path / 'proxybot.db'}"
    now = [1000.0]  # the store's clock, the same for both replicas
    first = await open_store(url, clock=lambda: now[0], owner="replica-a")
    second = await open_store(url, clock=lambda: now[0], owner="replica-b")
    try:
        # Replica a took the lease at t=1000; its process then stalled: its own view of the lease (the
        # local check before each post) still reads the moment it checked.
        stalled = Lease(first, ttl=TTL, clock=lambda: 1000.0)
        assert await stalled.acquire()
        now[0] += TTL + 1.0  # meanwhile its lease lapsed in the store, and replica b took it over
        assert await Lease(second, ttl=TTL, clock=lambda: now[0]).acquire()
        delivery = Delivery(first, slack_at(fake.api_url), policy=FAST, lease=stalled, clock=lambda: now[0])
        async with running(delivery):
            await delivery.post(ALERTS, "grp", msg("firing"))

            async def refused() -> bool:
                return "grp" in caplog.text and "left to the leader" in caplog.text

            await until(refused)
        assert fake.top_level(ALERTS) == [], "the stalled replica's post would duplicate the new leader's"
        row = await second.outbox_item(post_key(ALERTS, "grp"))
        assert row is not None
        assert row.state is OutboxState.PENDING, "left for the replica that holds the lease to send"
    finally:
        await first.close()
        await second.close()
