"""Two `proxybot serve` replicas on one PostgreSQL database, behind a real Alertmanager HA pair.

The two Alertmanagers gossip (a cluster on loopback) and each delivers every notification to both
replicas; alerts are pushed to both Alertmanagers, as Prometheus does. Whichever replica accepts a
webhook, the one holding the leader lease processes it and talks to Slack. Shown here: each group posted
once and resolved in place; the leader killed while Slack is down, and the other replica delivering
everything the dead one accepted, once; a post whose answer was lost with its sender found by its
metadata and adopted by the other replica, never posted twice; a digest every minute, once, across two
replicas of which one dies. The digest pair has its own database and fake Slack and runs from the start
of the module, so its minutes pass while the other tests run.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.digest.runner import CLAIM_TTL
from bot.lease import LeaseTimings
from bot.render.slack import ACTION_ACK
from config.settings import StoreSettings
from sim.postgres import PostgresServer
from sim.server import SimServer
from sim.slack_api import FakeSlack, SlackCall
from tests.e2e.replicas import (
    PeeredAlertmanager,
    PgStoreView,
    Replicas,
    accepted,
    alertmanager_pair,
    post_to_all,
    replica_config,
)
from tests.e2e.stack import (
    ALICE,
    BOB,
    BOT_TOKEN,
    CHANNEL,
    WEBHOOK_TOKEN,
    BotProcess,
    alert_entry,
    auth,
    messages_about,
    notification,
    now,
    press_button,
    proxy_alert,
    rfc3339,
    summary_of,
    text_of,
    wait_until,
)
from tests.fakes import postgres
from tests.harness.alertmanager import Route

pytestmark = pytest.mark.slow
postgres_server = postgres.postgres_server

ROUTE = Route(group_by=("alertname", "cluster", "target"), group_wait="1s", group_interval="1s")
SECOND_GV = "data.example.com/v1alpha1"
DELIVERY = 30.0
# A dead leader's lease lapses after its TTL; the other replica asks every `retry_every`.
TAKEOVER = LeaseTimings(StoreSettings().lease_seconds).takeover + 3.0
# These tests count one message per group: no storm may fold groups into a summary.
NO_STORM = {"groups": 100}
# Longer than the sender lives after Slack made its post; over before the module's fake Slack stops.
LOST_FOR = 20.0
DIGEST_EVERY_MINUTE = {"enabled": True, "cron": "* * * * *", "timezone": "UTC"}


@dataclass
class AlertStack:
    """The replicas under test, the Alertmanager pair feeding them, their Slack and their store."""

    replicas: Replicas
    alertmanagers: list[PeeredAlertmanager]
    slack: FakeSlack
    store: PgStoreView
    password: str


@dataclass
class DigestStack:
    """Two replicas posting a digest every minute, and when they were started."""

    replicas: Replicas
    slack: FakeSlack
    store: PgStoreView
    started: float


def new_database(server: PostgresServer) -> str:
    return asyncio.run(server.new_database())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("replicas")


@pytest.fixture(scope="module")
def fleet() -> Iterator[SimServer]:
    with SimServer(scenario="healthy", speed=10) as srv:
        yield srv


@pytest.fixture(scope="module", autouse=True)
def digests(workdir: Path, fleet: SimServer, postgres_server: PostgresServer) -> Iterator[DigestStack]:
    # Autouse: started with the module, so the minutes its test needs pass during the other tests.
    home = workdir / "digest"
    home.mkdir()
    with FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack:
        url = new_database(postgres_server)
        store = PgStoreView(url)
        config = replica_config(fleet, home, slack.api_url, url, digest=DIGEST_EVERY_MINUTE)
        replicas = Replicas(config, home, store, name="digest")
        started = time.time()
        try:
            replicas.start()
            yield DigestStack(replicas, slack, store, started)
        finally:
            replicas.close()


@pytest.fixture(scope="module")
def stack(workdir: Path, fleet: SimServer, postgres_server: PostgresServer) -> Iterator[AlertStack]:
    home = workdir / "alerts"
    home.mkdir()
    with FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack:
        url = new_database(postgres_server)
        store = PgStoreView(url)
        replicas = Replicas(replica_config(fleet, home, slack.api_url, url, storm=NO_STORM), home, store)
        try:
            replicas.start()
            with alertmanager_pair(home, replicas.webhook_urls(), WEBHOOK_TOKEN, ROUTE) as pair:
                yield AlertStack(replicas, pair, slack, store, postgres_server.password)
        finally:
            replicas.close()


@pytest.fixture
def alerts(stack: AlertStack) -> AlertStack:
    """The module's stack with both replicas running (a test before may have killed one), all caught up."""
    stack.replicas.start()
    settle(stack)
    return stack


def settle(stack: AlertStack) -> None:
    """Until every accepted notification is processed and every Slack operation sent."""
    store = stack.store
    stack.replicas.wait(
        lambda: store.unprocessed() == 0 and store.outbox_pending() == 0,
        DELIVERY + TAKEOVER,
        "the replicas to process and send everything",
    )


def am_alert(labels: Mapping[str, str], starts: datetime, ends: datetime | None = None) -> dict[str, Any]:
    """An alert as Prometheus pushes it: the same startsAt to every Alertmanager."""
    alert: dict[str, Any] = {"labels": dict(labels), "annotations": {"summary": summary_of(labels)}}
    alert["startsAt"] = rfc3339(starts)
    if ends is not None:
        alert["endsAt"] = rfc3339(ends)
    return alert


def top_level_posts(calls: list[SlackCall], target: str) -> list[SlackCall]:
    """chat.postMessage calls (answered or not) that made or tried a top-level message about `target`."""
    posts = [c for c in calls if c.method == "chat.postMessage" and not c.params.get("thread_ts")]
    return [c for c in posts if target in str(c.params.get("text"))]


def calls_since(slack: FakeSlack, mark: int) -> list[SlackCall]:
    return list(slack.calls[mark:])


def one_message_each(slack: FakeSlack, targets: list[str]) -> dict[str, int]:
    """Targets whose group does not have exactly one top-level message, with how many it has."""
    counts = {target: len(messages_about(slack, target)) for target in targets}
    return {target: n for target, n in counts.items() if n != 1}


def send(bot: BotProcess, payload: dict[str, Any]) -> httpx.Response:
    headers = {**auth(), "Content-Type": "application/json"}
    return httpx.post(f"{bot.url}/alertmanager", content=json.dumps(payload), headers=headers, timeout=10.0)


# -- a. one message per group ------------------------------------------------------------------------


def test_each_group_is_posted_once_by_the_pair_and_resolved_in_place(alerts: AlertStack) -> None:
    slack, mark = alerts.slack, len(alerts.slack.calls)
    targets = ["platform/once-a", "platform/once-b", "platform/once-c"]
    started = now() - timedelta(minutes=2)
    firing = [am_alert(proxy_alert(target=t), started) for t in targets]

    post_to_all(alerts.alertmanagers, firing)
    wait_until(
        lambda: all(messages_about(slack, t) for t in targets), DELIVERY, "a message for each of the 3 groups"
    )
    messages = {t: messages_about(slack, t)[0] for t in targets}

    joined = am_alert(proxy_alert(target=targets[0], group_version=SECOND_GV), started)
    post_to_all(alerts.alertmanagers, [*firing, joined])
    first = messages[targets[0]]
    wait_until(
        lambda: "2 alerts firing" in text_of(first), DELIVERY, "the first group's message edited to 2 firing"
    )

    ended = now() - timedelta(seconds=1)
    post_to_all(alerts.alertmanagers, [am_alert(a["labels"], started, ended) for a in [*firing, joined]])
    wait_until(
        lambda: all(m.text.startswith("RESOLVED") for m in messages.values()),
        DELIVERY,
        "every group's message edited to RESOLVED",
    )
    settle(alerts)

    assert one_message_each(slack, targets) == {}, "a group has other than one top-level message"
    for target, message in messages.items():
        assert messages_about(slack, target) == [message], f"{target}: its message was replaced"
    calls = calls_since(slack, mark)
    posts = {t: len(top_level_posts(calls, t)) for t in targets}
    assert posts == dict.fromkeys(targets, 1), f"chat.postMessage made per group (want 1 each): {posts}"
    # Edits go to the groups' messages and their detail replies (each edited in place), nowhere else.
    ours = {m.ts for m in messages.values()}
    ours |= {r.ts for m in messages.values() for r in slack.thread(CHANNEL, m.ts)}
    edited = {c.params.get("ts") for c in calls if c.method == "chat.update"}
    assert edited <= ours, f"edits of messages that are not the groups': {edited - ours}"
    assert any("data.example.com/v1alpha1" in text_of(r) for r in slack.thread(CHANNEL, first.ts)), (
        "the joining alert's reply is not in the first group's thread"
    )
    # Both replicas were fed (each Alertmanager delivers to each), and the store kept every repeat once.
    fed = {bot.log_path.name: accepted(bot) for bot in alerts.replicas.bots}
    assert all(n > 0 for n in fed.values()), f"a replica accepted no webhook: {fed}"
    assert alerts.store.duplicates() > 0, "no delivery repeated another: the pair did not reach both replicas"
    for bot in alerts.replicas.bots:
        assert alerts.password not in bot.log_text(), f"{bot.log_path.name} logged the store's password"


# -- b. the leader dies while Slack is down ----------------------------------------------------------


def test_the_leader_killed_while_slack_is_down_loses_nothing_and_posts_each_group_once(
    alerts: AlertStack,
) -> None:
    slack, store = alerts.slack, alerts.store
    leader = alerts.replicas.leader()
    [survivor] = alerts.replicas.others(leader)
    via_alertmanager = ["platform/outage-a", "platform/outage-b"]
    only_leader = ["platform/outage-c", "platform/outage-d"]  # accepted by the replica that dies only
    targets = via_alertmanager + only_leader
    started = now() - timedelta(minutes=2)

    slack.fail("chat.postMessage", status=503, retry_after=None, times=1_000_000)
    post_to_all(alerts.alertmanagers, [am_alert(proxy_alert(target=t), started) for t in via_alertmanager])
    for target in only_leader:
        response = send(leader, notification([alert_entry(proxy_alert(target=target), started)]))
        assert response.status_code == 202, f"the leader refused a webhook: {response.text}"

    def tried_and_failed() -> bool:
        pending = store.pending_posts()
        return all(any(t in key and attempts > 0 for key, attempts in pending) for t in targets)

    alerts.replicas.wait(tried_and_failed, DELIVERY, "the leader to try each group's post and fail")
    leader.kill()
    assert all(messages_about(slack, t) == [] for t in targets), "a post reached Slack while it was down"

    slack.heal("chat.postMessage")
    alerts.replicas.wait(
        lambda: all(messages_about(slack, t) for t in targets),
        TAKEOVER + DELIVERY,
        "the surviving replica to post every group",
    )
    alerts.replicas.wait(lambda: store.outbox_pending() == 0, DELIVERY, "the survivor to empty the outbox")

    assert alerts.replicas.leader() is survivor, "the survivor does not hold the lease"
    assert one_message_each(slack, targets) == {}, "a group has other than one top-level message"
    assert store.unprocessed() == 0, "a notification the dead leader accepted was never processed"
    assert store.outbox_failed() == 0, "a Slack operation was given up"


# -- d. killed between Slack's answer and its record -------------------------------------------------


def test_a_post_whose_answer_was_lost_with_its_sender_is_adopted_by_the_other_replica(
    alerts: AlertStack,
) -> None:
    slack, store = alerts.slack, alerts.store
    started = now() - timedelta(minutes=2)
    # A group posted normally first: the channel's Slack ID is then in the store, which the survivor
    # needs to read the channel's history (the config names the channel, `#alerts`, not its ID).
    post_to_all(alerts.alertmanagers, [am_alert(proxy_alert(target="platform/lost-before"), started)])
    wait_until(lambda: messages_about(slack, "platform/lost-before"), DELIVERY, "the first group's message")
    settle(alerts)
    leader = alerts.replicas.leader()
    [survivor] = alerts.replicas.others(leader)
    target, mark = "platform/lost-answer", len(slack.calls)

    # Slack makes the next post but its answer never comes back: the leader dies waiting for it.
    slack.lose_answers("chat.postMessage", times=1, hold=LOST_FOR)
    post_to_all(alerts.alertmanagers, [am_alert(proxy_alert(target=target), started)])
    wait_until(lambda: messages_about(slack, target), DELIVERY, "the post to be made in Slack")
    leader.kill()
    killed_at = time.monotonic()
    [made] = messages_about(slack, target)

    assert alerts.replicas.leader(timeout=TAKEOVER) is survivor, "the survivor did not take the lease"
    took = time.monotonic() - killed_at
    assert took <= TAKEOVER, f"the lease took {took:.1f} s to pass to the survivor"
    alerts.replicas.wait(lambda: store.outbox_pending() == 0, DELIVERY, "the survivor to finish the group")

    assert messages_about(slack, target) == [made], "the post was made twice"
    calls = calls_since(slack, mark)
    assert len(top_level_posts(calls, target)) == 1, "the survivor posted the group again"
    assert any(c.method == "conversations.history" for c in calls), "the survivor never looked in the history"
    assert "adopted, not posted again" in survivor.log_text(), "the survivor did not say it adopted the post"

    ended = now() - timedelta(seconds=1)
    post_to_all(alerts.alertmanagers, [am_alert(proxy_alert(target=target), started, ended)])
    wait_until(lambda: made.text.startswith("RESOLVED"), DELIVERY, "the adopted message edited to RESOLVED")
    settle(alerts)
    assert messages_about(slack, target) == [made], "the resolve posted a new message"
    replies = slack.thread(CHANNEL, made.ts)
    assert any("All resolved" in text_of(r) for r in replies), (
        "the resolve reply is not in the adopted thread"
    )


# -- c. one digest per minute ------------------------------------------------------------------------


def minute_of(unix: float) -> float:
    return unix - unix % 60


def period(unix: float) -> str:
    """The digest's period key for the minute starting at `unix` (handlers.digest.period_key, UTC)."""
    return datetime.fromtimestamp(unix, UTC).isoformat(timespec="seconds")


def test_one_digest_per_minute_across_both_replicas_one_of_which_dies(digests: DigestStack) -> None:
    store, slack, replicas = digests.store, digests.slack, digests.replicas

    def delivered(minute: float) -> bool:
        return any(key.endswith(f"digest:{period(minute)}") for key in store.post_results("post:%"))

    # The minute the replicas started in is caught up at start; a scheduled one goes out with both up.
    both_up = max(minute_of(time.time()), minute_of(digests.started) + 60)
    replicas.wait(
        lambda: delivered(both_up) and store.outbox_pending() == 0,
        max(0.0, both_up - time.time()) + DELIVERY,
        f"the digest of {period(both_up)} with both replicas up",
    )
    replicas.leader().kill()
    survivor_alone = both_up + 60
    replicas.wait(
        lambda: delivered(survivor_alone) and store.outbox_pending() == 0,
        max(0.0, survivor_alone - time.time()) + CLAIM_TTL + TAKEOVER + DELIVERY,
        f"the digest of {period(survivor_alone)} from the survivor",
    )

    posted = store.posted_digests()
    first = datetime.fromisoformat(posted[0]).timestamp()
    every_minute = [period(first + 60 * i) for i in range(len(posted))]
    claims = store.digest_claimers()
    assert posted == every_minute, f"not one digest per minute: {posted} (claimed by {claims})"
    assert first <= minute_of(digests.started) + 60, f"no digest caught up at start: {posted}"
    assert {period(both_up), period(survivor_alone)} <= set(posted), f"a minute has no digest: {posted}"
    top = slack.top_level(CHANNEL)
    assert len(top) == len(posted), f"{len(top)} digests in Slack for {len(posted)} periods: {posted}"
    results = store.post_results("post:%")
    assert {r["ts"] for r in results.values()} == {m.ts for m in top}, "a digest in Slack is not on record"
    posts = [c for c in slack.calls if c.method == "chat.postMessage" and not c.params.get("thread_ts")]
    assert len(posts) == len(posted), f"{len(posts)} digest posts made for {len(posted)} periods"


# -- e. an acknowledgement pressed on one replica ----------------------------------------------------


def test_an_acknowledgement_pressed_on_one_replica_shows_on_the_edits_the_other_makes(
    alerts: AlertStack,
) -> None:
    slack, target = alerts.slack, "platform/acked"
    started = now() - timedelta(minutes=2)
    firing = am_alert(proxy_alert(target=target), started)
    post_to_all(alerts.alertmanagers, [firing])
    wait_until(lambda: messages_about(slack, target), DELIVERY, "the group's message")
    [message] = messages_about(slack, target)
    leader = alerts.replicas.leader()
    [other] = alerts.replicas.others(leader)

    press_button(other, slack, message, ACTION_ACK, ALICE, "acked-alice")
    wait_until(lambda: f"Acknowledged by <@{ALICE}>" in text_of(message), DELIVERY, "the acknowledgement")
    # The leader's pipeline edits the message for a joining alert: it still shows who has it.
    joined = am_alert(proxy_alert(target=target, group_version=SECOND_GV), started)
    post_to_all(alerts.alertmanagers, [firing, joined])
    wait_until(lambda: "2 alerts firing" in text_of(message), DELIVERY, "the leader's edit")
    assert f"Acknowledged by <@{ALICE}>" in text_of(message)
    # Bob presses on the leader: refused, Alice has it (the same row on both replicas).
    press_button(leader, slack, message, ACTION_ACK, BOB, "acked-bob")
    wait_until(lambda: slack.responses, DELIVERY, "Bob's answer")
    assert f"<@{ALICE}> has this alert already" in slack.responses[-1]["text"]
    ended = now() - timedelta(seconds=1)
    post_to_all(alerts.alertmanagers, [am_alert(a["labels"], started, ended) for a in (firing, joined)])
    wait_until(lambda: message.text.startswith("RESOLVED"), DELIVERY, "resolved")
    settle(alerts)
