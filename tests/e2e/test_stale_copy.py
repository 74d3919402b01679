"""Two Alertmanager replicas delivering to `proxybot serve`, one lagging: its stale copy is not applied.

Replica A delivers the group firing, then resolved; replica B, which missed A's gossip, delivers the group
still firing afterwards (its own view: one alert resolved, the other not yet). The bodies are posted as the
two replicas would send them (their own `externalURL`); the fake Slack's message must stay resolved, with
no reply in its thread about firing again, and the bot's log names the replica.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from sim.slack_api import FakeSlack
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import (
    CHANNEL,
    TARGET,
    BotProcess,
    StoreView,
    alert_entry,
    auth,
    messages_about,
    notification,
    now,
    proxy_alert,
    wait_until,
)

pytestmark = pytest.mark.slow

TIMEOUT = 30.0
REPLICA_A = "http://alertmanager-0.alertmanager:9093"
REPLICA_B = "http://alertmanager-1.alertmanager:9093"


def send(bot: BotProcess, body: dict[str, Any], external_url: str) -> httpx.Response:
    raw = json.dumps(body | {"externalURL": external_url}).encode()
    headers = {**auth(), "Content-Type": "application/json"}
    return httpx.post(f"{bot.url}/alertmanager", content=raw, headers=headers, timeout=10.0)


def settled(store: StoreView) -> bool:
    return store.unprocessed() == 0 and store.outbox_pending() == 0


def test_a_lagging_replicas_firing_copy_leaves_the_resolved_message_resolved(
    tmp_path: Path, bots: BotLauncher, slack: FakeSlack
) -> None:
    store = StoreView(tmp_path / "bot.db")
    started = now() - timedelta(minutes=10)
    ended = now() - timedelta(seconds=30)
    one = proxy_alert(target=TARGET)
    other = proxy_alert(target=TARGET, group_version="data.example.com/v1alpha1")
    bot = bots.start()

    assert send(
        bot, notification([alert_entry(one, started), alert_entry(other, started)]), REPLICA_A
    ).is_success
    wait_until(lambda: messages_about(slack, TARGET), TIMEOUT, "the group's message")
    resolved = notification([alert_entry(one, started, ended), alert_entry(other, started, ended)])
    assert send(bot, resolved, REPLICA_A).is_success

    def shown_resolved() -> bool:
        [message] = messages_about(slack, TARGET)
        return message.text.startswith("RESOLVED") and settled(store)

    wait_until(shown_resolved, TIMEOUT, "the message to be edited to resolved")
    [message] = messages_about(slack, TARGET)
    versions, replies, calls = len(message.versions), len(slack.thread(CHANNEL, message.ts)), len(slack.calls)

    # Replica B's copy: `other` resolved, `one` still firing with the startsAt A reported resolved.
    stale = notification([alert_entry(one, started), alert_entry(other, started, ended)])
    response = send(bot, stale, REPLICA_B)
    assert response.status_code == 202
    assert (
        response.json()["duplicate"] is False
    )  # a body the bot had not seen: it is judged, not deduplicated
    wait_until(lambda: settled(store), TIMEOUT, "the stale copy to be processed")
    time.sleep(2.0)  # the time an edit would take to show up, had one been queued

    [after] = messages_about(slack, TARGET)
    assert after.ts == message.ts
    assert after.text.startswith("RESOLVED")
    assert len(after.versions) == versions
    assert len(slack.thread(CHANNEL, message.ts)) == replies
    assert len(slack.calls) == calls
    [line] = [line for line in bot.log_text().splitlines() if "stale copy" in line]
    assert REPLICA_B in line
