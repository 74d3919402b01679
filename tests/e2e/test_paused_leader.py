"""The leader paused (SIGSTOP) while Slack is down, the other replica taking over, the leader resumed
(SIGCONT) past its lease: every group is posted once.

A pause at a random moment proves little: the leader wakes past its lease, and its own check before each
post stops it. The pause that needs the store's fence falls between that check and the database's answer
to the post's in-flight mark. So both replicas reach PostgreSQL through a relay (`tests/e2e/pg_relay.py`)
that holds the leader's next in-flight mark on the wire; the leader is paused with it there, the other
replica takes the lease and posts the group (Slack makes the message; its answer is lost, so the row stays
pending), and only then does the held mark reach the database and the leader resume. The fence (the lease
is another's now) refuses the mark, and the old leader posts nothing; without it, the group is posted twice.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from bot.lease import LeaseTimings
from sim.postgres import PostgresServer
from sim.server import SimServer
from sim.slack_api import FakeSlack
from tests.e2e.pg_relay import Execution, PgRelay
from tests.e2e.replicas import PgStoreView, Replicas, replica_config
from tests.e2e.stack import (
    BOT_TOKEN,
    CHANNEL,
    BotProcess,
    alert_entry,
    messages_about,
    notification,
    now,
    proxy_alert,
)
from tests.e2e.test_replicas import DELIVERY, NO_STORM, one_message_each, send
from tests.fakes import postgres

pytestmark = pytest.mark.slow
postgres_server = postgres.postgres_server

# A lease shorter than the default (10 s) keeps the pause short: the fencing floor is a Slack call's timeout
# and an enrichment budget, each with its margin (`bot.lease.fencing_floor`), so the budget is cut too.
LEASE_SECONDS = 8.0
ENRICHMENT_SECONDS = 3.0
TAKEOVER = LeaseTimings(LEASE_SECONDS).takeover + 3.0
LOST_FOR = 6.0  # the standby's post is made but its answer held past its call's timeout
BEFORE, RACED, DURING = "platform/paused-before", "platform/paused-raced", "platform/paused-during"


@pytest.fixture
def fleet() -> Iterator[SimServer]:
    with SimServer(scenario="healthy", speed=10) as srv:
        yield srv


def in_flight_mark(execution: Execution) -> bool:
    """`Store.mark_sending` marking a post in flight (not clearing a mark: its `sent_at` is not NULL),
    fenced or not: this test must not depend on the fence it tests."""
    return execution.sql.startswith("UPDATE outbox SET sent_at") and execution.params[0] is not None


def short_lease(config: Path) -> Path:
    doc = yaml.safe_load(config.read_text())
    doc["store"]["lease_seconds"] = LEASE_SECONDS
    doc.setdefault("enrichment", {})["timeout_seconds"] = ENRICHMENT_SECONDS
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    return config


def pending_tried(store: PgStoreView, target: str) -> bool:
    """The group's post is pending and was tried at least once."""
    return any(target in key and attempts > 0 for key, attempts in store.pending_posts())


def pending(store: PgStoreView, target: str) -> bool:
    return any(target in key for key, _ in store.pending_posts())


def refused(log: str, target: str) -> bool:
    """The replica logged that the store refused its post of `target`'s group (`NotLeading`)."""
    return any("left to the leader" in line and target in line for line in log.splitlines())


def accept(bot: BotProcess, target: str) -> None:
    """A notification of `target`'s group, sent to `bot` as Alertmanager sends it."""
    started = now() - timedelta(minutes=2)
    response = send(bot, notification([alert_entry(proxy_alert(target=target), started)]))
    assert response.status_code == 202, f"a replica refused a webhook: {response.text}"


def test_the_leader_resumed_after_losing_its_lease_posts_nothing_the_new_leader_posted(
    tmp_path: Path, fleet: SimServer, postgres_server: PostgresServer
) -> None:
    with FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack:
        url = asyncio.run(postgres_server.new_database())
        store = PgStoreView(url)
        with PgRelay(url) as relay:
            config = short_lease(replica_config(fleet, tmp_path, slack.api_url, relay.url, storm=NO_STORM))
            replicas = Replicas(config, tmp_path, store)
            try:
                replicas.start()
                leader = replicas.leader()
                [standby] = replicas.others(leader)
                assert leader.pid is not None
                # A group posted while all is well: the store learns the channel's ID, which the standby
                # needs to look in the channel's history for a post whose answer it lost.
                accept(leader, BEFORE)
                replicas.wait(
                    lambda: messages_about(slack, BEFORE) and store.outbox_pending() == 0,
                    DELIVERY,
                    "the first group posted",
                )

                slack.fail("chat.postMessage", status=503, retry_after=None, times=1_000_000)
                accept(leader, RACED)
                replicas.wait(
                    lambda: pending_tried(store, RACED), DELIVERY, "the leader to try the post and fail"
                )
                relay.hold(in_flight_mark)
                replicas.wait(
                    lambda: relay.held, DELIVERY, "the leader's next in-flight mark, held on the wire"
                )
                os.kill(leader.pid, signal.SIGSTOP)
                try:
                    # Nobody posts until the standby leads: the first post it makes, the raced group's
                    # (the oldest row), is made in Slack but its answer is lost.
                    slack.lose_answers("chat.postMessage", times=1, hold=LOST_FOR)
                    slack.heal("chat.postMessage")
                    accept(standby, DURING)
                    replicas.wait(
                        lambda: store.leader_pid() == standby.pid, TAKEOVER, "the standby to take the lease"
                    )
                    replicas.wait(lambda: messages_about(slack, RACED), DELIVERY, "the standby's post")
                    assert pending(store, RACED), "the standby's post was answered: nothing left to race"
                    relay.release()  # the paused leader's mark reaches the database now
                finally:
                    os.kill(leader.pid, signal.SIGCONT)

                replicas.wait(
                    lambda: refused(leader.log_text(), RACED) or len(messages_about(slack, RACED)) > 1,
                    DELIVERY,
                    "the resumed leader to give its post up",
                )
                replicas.wait(
                    lambda: store.outbox_pending() == 0 and store.unprocessed() == 0,
                    TAKEOVER + DELIVERY,
                    "the standby to send everything",
                )
                targets = [BEFORE, RACED, DURING]
                assert one_message_each(slack, targets) == {}, "a group has other than one top-level message"
                assert refused(leader.log_text(), RACED), "the resumed leader's mark was not refused"
                assert "adopted, not posted again" in standby.log_text(), "the standby did not adopt its post"
                assert replicas.leader() is standby, "the lease went back to the paused replica"
                assert store.outbox_failed() == 0, "a Slack operation was given up"
            finally:
                replicas.close()
