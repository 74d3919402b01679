"""Verified after resolve on two `proxybot serve` replicas over one PostgreSQL store, behind a real
Alertmanager pair: the leader that scheduled the verification is killed -9 before it is due; the other
replica takes the lease over, finds the verification in the store and posts it, once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from sim.postgres import PostgresServer
from sim.server import SimServer
from sim.slack_api import FakeSlack, Message
from tests.e2e.replicas import PgStoreView, Replicas, alertmanager_pair, post_to_all, replica_config
from tests.e2e.stack import (
    BOT_TOKEN,
    CHANNEL,
    CLIENT,
    TARGET,
    WEBHOOK_TOKEN,
    messages_about,
    now,
    proxy_alert,
)
from tests.e2e.test_replicas import DELIVERY, NO_STORM, ROUTE, TAKEOVER, am_alert
from tests.fakes import postgres

pytestmark = pytest.mark.slow
postgres_server = postgres.postgres_server

# Long enough for the leader to be killed while its verification is pending, even on a busy box.
VERIFY_AFTER = {"verify_after": "5s"}


@pytest.fixture
def fleet() -> Iterator[SimServer]:
    with SimServer(scenario="healthy", speed=10) as srv:
        yield srv


def verified(slack: FakeSlack, message: Message) -> list[Message]:
    return [m for m in slack.thread(CHANNEL, message.ts) if m.text.startswith("✅ verified")]


def test_a_verification_scheduled_by_a_killed_leader_is_posted_once_by_the_other(
    tmp_path: Path, fleet: SimServer, postgres_server: PostgresServer
) -> None:
    with FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack:
        url = asyncio.run(postgres_server.new_database())
        store = PgStoreView(url)
        config = replica_config(fleet, tmp_path, slack.api_url, url, storm=NO_STORM, resolution=VERIFY_AFTER)
        replicas = Replicas(config, tmp_path, store)
        try:
            replicas.start()
            with alertmanager_pair(tmp_path, replicas.webhook_urls(), WEBHOOK_TOKEN, ROUTE) as pair:
                labels = proxy_alert(target=TARGET, severity="warning")
                started = now() - timedelta(minutes=2)
                post_to_all(pair, [am_alert(labels, started)])
                replicas.wait(lambda: messages_about(slack, TARGET), DELIVERY, "the group's message")
                [message] = messages_about(slack, TARGET)
                post_to_all(pair, [am_alert(labels, started, now())])
                replicas.wait(lambda: store.verifications(), DELIVERY, "the verification scheduled")
                leader = replicas.leader()
                [survivor] = replicas.others(leader)
                leader.kill()
                assert [outcome for _, outcome, _ in store.verifications()] == [None], "settled too soon"

                assert replicas.leader(timeout=TAKEOVER) is survivor, "the survivor did not take the lease"
                replicas.wait(lambda: verified(slack, message), DELIVERY, "the verification reply")
                replicas.wait(
                    lambda: [outcome for _, outcome, _ in store.verifications()] == ["verified"],
                    DELIVERY,
                    "the verification closed",
                )
                replicas.wait(lambda: store.outbox_pending() == 0, DELIVERY, "the survivor to finish")
                [reply] = verified(slack, message)
                assert f"from {CLIENT}, " in reply.text
                assert message.text.startswith("RESOLVED")
                assert store.outbox_failed() == 0
        finally:
            replicas.close()
