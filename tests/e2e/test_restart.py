"""Restart safety of `proxybot serve`: what was accepted survives a SIGKILL and is delivered once.

Slack fails every `chat.postMessage` with 500 while webhooks are accepted; the bot is killed with those
posts undelivered; Slack recovers; a new bot on the same SQLite file delivers everything, and each group
still has exactly one top-level message. Redelivering the same webhooks afterwards changes nothing.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from sim.slack_api import FakeSlack, Message, iter_texts
from tests.bot.domain.alertmanager_samples import ALL_RESOLVED, FIRING, ONE_RESOLVED
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import CHANNEL, BotProcess, StoreView, alert_entry, auth, notification, now, proxy_alert
from tests.waiting import wait_until

TIMEOUT = 30.0
SAMPLE_TARGET = "team-a/billing"  # the captured 0.25 bodies' target; no configured cluster matches it


def send(bot: BotProcess, body: bytes) -> httpx.Response:
    headers = {**auth(), "Content-Type": "application/json"}
    return httpx.post(f"{bot.url}/alertmanager", content=body, headers=headers, timeout=10.0)


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def text_of(message: Message) -> str:
    return "\n".join([message.text, *iter_texts(message.blocks)])


def messages_about(slack: FakeSlack, target: str) -> list[Message]:
    return [m for m in slack.top_level(CHANNEL) if target in m.text]


def failed_posts(slack: FakeSlack) -> int:
    return len(slack.calls_to("chat.postMessage"))


def test_accepted_alerts_survive_sigkill_and_are_delivered_once(
    tmp_path: Path, bots: BotLauncher, slack: FakeSlack
) -> None:
    store = StoreView(tmp_path / "bot.db")
    started = now() - timedelta(minutes=4)
    first = alert_entry(proxy_alert(target="platform/crd-store"), started)
    second = alert_entry(
        proxy_alert(target="platform/crd-store", group_version="data.example.com/v1alpha1"), started
    )
    a_first = encode(notification([first]))
    a_update = encode(notification([first, second]))
    b_firing = encode(notification([alert_entry(proxy_alert(target="platform/search"), started)]))
    c_firing = encode(notification([alert_entry(proxy_alert(target="platform/ingest"), started)]))

    bot = bots.start()
    assert send(bot, a_first).status_code == 202
    wait_until(lambda: messages_about(slack, "platform/crd-store"), TIMEOUT, "group A's message")
    [message_a] = messages_about(slack, "platform/crd-store")

    slack.fail("chat.postMessage", status=500, retry_after=None, times=1_000_000)
    posts_before = failed_posts(slack)
    accepted_while_failing = [a_update, b_firing, c_firing, FIRING, ONE_RESOLVED, ALL_RESOLVED]
    for body in accepted_while_failing:
        response = send(bot, body)
        assert response.status_code == 202, response.text
        assert response.json()["duplicate"] is False
    wait_until(lambda: store.unprocessed() == 0, TIMEOUT, "every accepted notification to be processed")
    wait_until(lambda: failed_posts(slack) >= posts_before + 2, TIMEOUT, "the bot to try Slack and fail")

    bot.kill()
    assert store.outbox_pending() > 0  # accepted, not delivered: only the store has it now
    assert messages_about(slack, "platform/search") == []
    slack.heal("chat.postMessage")

    restarted = bots.start()
    wait_until(lambda: store.outbox_pending() == 0, 60.0, "the restarted bot to empty its outbox")

    assert store.outbox_failed() == 0
    for target in ("platform/crd-store", "platform/search", "platform/ingest", SAMPLE_TARGET):
        assert len(messages_about(slack, target)) == 1, target
    assert messages_about(slack, "platform/crd-store") == [message_a]
    assert "2 alerts firing" in text_of(message_a)
    assert any("data.example.com/v1alpha1" in text_of(r) for r in slack.thread(CHANNEL, message_a.ts))
    [sample] = messages_about(slack, SAMPLE_TARGET)
    assert sample.text.startswith("RESOLVED")
    assert len(slack.top_level()) == 4

    calls, versions = len(slack.calls), {m.ts: len(m.versions) for m in slack.top_level()}
    for body in [a_first, *accepted_while_failing]:
        response = send(restarted, body)
        assert response.status_code == 202
        assert response.json()["duplicate"] is True
    # Nothing is expected to happen; give the workers the time an edit would take to show up if it did.
    time.sleep(2.5)
    assert store.outbox_pending() == 0
    assert len(slack.calls) == calls
    assert {m.ts: len(m.versions) for m in slack.top_level()} == versions
