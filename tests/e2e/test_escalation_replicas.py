"""Escalation on two `proxybot serve` replicas over one PostgreSQL store, behind a real Alertmanager pair.

The leader posts the escalation reply (Slack makes it, its answer is lost) and is killed -9 before it can
record the answer: the other replica takes the lease over, finds the deadline closed and the reply in the
thread by its metadata, and adopts it. The on-call is paged exactly once.
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
from tests.e2e.stack import BOT_TOKEN, CHANNEL, WEBHOOK_TOKEN, messages_about, now, proxy_alert
from tests.e2e.test_replicas import DELIVERY, NO_STORM, ROUTE, TAKEOVER, am_alert
from tests.fakes import postgres

pytestmark = pytest.mark.slow
postgres_server = postgres.postgres_server

ONCALL = "<!subteam^S0123ONCALL>"
# Long enough for the group's post and details reply to go out before the deadline, even on a busy box.
ESCALATE_AFTER = {"after": "8s", "mention": ONCALL, "severities": ["critical"]}
LOST_FOR = 20.0  # the lost answer is held longer than the leader lives


@pytest.fixture
def fleet() -> Iterator[SimServer]:
    with SimServer(scenario="healthy", speed=10) as srv:
        yield srv


def broadcasts(slack: FakeSlack, message: Message) -> list[Message]:
    return [m for m in slack.thread(CHANNEL, message.ts) if m.broadcast]


def test_the_leader_killed_between_the_deadline_and_the_reply_pages_the_on_call_once(
    tmp_path: Path, fleet: SimServer, postgres_server: PostgresServer
) -> None:
    target = "platform/paged"
    with FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack:
        url = asyncio.run(postgres_server.new_database())
        store = PgStoreView(url)
        config = replica_config(
            fleet, tmp_path, slack.api_url, url, storm=NO_STORM, escalation=ESCALATE_AFTER
        )
        replicas = Replicas(config, tmp_path, store)
        try:
            replicas.start()
            with alertmanager_pair(tmp_path, replicas.webhook_urls(), WEBHOOK_TOKEN, ROUTE) as pair:
                post_to_all(pair, [am_alert(proxy_alert(target=target), now() - timedelta(minutes=2))])
                replicas.wait(lambda: messages_about(slack, target), DELIVERY, "the group's message")
                [message] = messages_about(slack, target)
                replicas.wait(lambda: slack.thread(CHANNEL, message.ts), DELIVERY, "the details reply")
                replicas.wait(lambda: store.escalations(), DELIVERY, "the deadline stored")
                leader = replicas.leader()
                [survivor] = replicas.others(leader)

                # The next post is the escalation: Slack makes it, its answer never reaches the leader.
                slack.lose_answers("chat.postMessage", times=1, hold=LOST_FOR)
                replicas.wait(lambda: broadcasts(slack, message), DELIVERY, "the escalation made in Slack")
                leader.kill()

                assert replicas.leader(timeout=TAKEOVER) is survivor, "the survivor did not take the lease"
                replicas.wait(lambda: store.outbox_pending() == 0, DELIVERY, "the survivor to finish")
                [reply] = broadcasts(slack, message)
                assert reply.text.startswith(f"🚨 Escalated to {ONCALL} at ")
                paged = [c for c in slack.calls_to("chat.postMessage") if c.params.get("reply_broadcast")]
                assert len(paged) == 1, "the escalation was posted again"
                assert [outcome for _, outcome, _ in store.escalations()] == ["sent"]
                assert "adopted, not posted again" in survivor.log_text()
                assert store.outbox_failed() == 0
        finally:
            replicas.close()
