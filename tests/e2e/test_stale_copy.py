"""Two Alertmanager replicas delivering to `proxybot serve`, one lagging: its stale copy is not applied.

Replica A delivers the group firing, then resolved; replica B, which missed A's gossip, delivers the group
still firing afterwards (its own view: one alert resolved, the other not yet). The bodies are posted as the
two replicas would send them (their own `externalURL`); the bot's configured Alertmanager is a real one
(0.25), asked before a copy is skipped. Listing the alert not active, the fake Slack's message must stay
resolved, with no reply in its thread about firing again, and the bot's log names the replica; listing it
active (Alertmanager resolved it itself and fired it again, same startsAt), the copy is a real re-fire.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from sim.alerting import fingerprint
from sim.ports import free_port
from sim.server import SimServer
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
    rfc3339,
    write_bot_config,
)
from tests.harness.alertmanager import Alertmanager
from tests.waiting import wait_until

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


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[Alertmanager]:
    # It routes nowhere that matters here: the bot only asks it which alerts it lists active.
    workdir = tmp_path / "alertmanager"
    workdir.mkdir()
    with Alertmanager(workdir, f"http://127.0.0.1:{free_port()}/alertmanager") as am:
        yield am


@pytest.fixture
def bot_config(tmp_path: Path, sim: SimServer, slack: FakeSlack, alertmanager: Alertmanager) -> Path:
    path = write_bot_config(sim, tmp_path, slack.api_url)
    doc = yaml.safe_load(path.read_text())
    doc["alertmanager"]["url"] = alertmanager.url
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@dataclass(frozen=True)
class Resolved:
    """The group posted and resolved by replica A, and what the fake Slack held then."""

    bot: BotProcess
    one: dict[str, str]
    stale: dict[str, Any]  # replica B's copy: `other` resolved, `one` firing with the startsAt A resolved
    started: datetime
    ts: str
    versions: int
    replies: int
    calls: int


def entry(labels: dict[str, str], starts_at: datetime, ends_at: datetime | None = None) -> dict[str, Any]:
    """An alert of a body with Alertmanager's own fingerprint (the stack's is only shaped like one), so
    the bot's question to the real Alertmanager is about this very alert."""
    return alert_entry(labels, starts_at, ends_at) | {"fingerprint": fingerprint(labels)}


def resolved_by_replica_a(tmp_path: Path, bots: BotLauncher, slack: FakeSlack) -> Resolved:
    store = StoreView(tmp_path / "bot.db")
    started = now() - timedelta(minutes=10)
    ended = now() - timedelta(seconds=30)
    one = proxy_alert(target=TARGET)
    other = proxy_alert(target=TARGET, group_version="data.example.com/v1alpha1")
    bot = bots.start()

    assert send(bot, notification([entry(one, started), entry(other, started)]), REPLICA_A).is_success
    wait_until(lambda: messages_about(slack, TARGET), TIMEOUT, "the group's message")
    resolved = notification([entry(one, started, ended), entry(other, started, ended)])
    assert send(bot, resolved, REPLICA_A).is_success

    def shown_resolved() -> bool:
        [message] = messages_about(slack, TARGET)
        return message.text.startswith("RESOLVED") and settled(store)

    wait_until(shown_resolved, TIMEOUT, "the message to be edited to resolved")
    [message] = messages_about(slack, TARGET)
    stale = notification([entry(one, started), entry(other, started, ended)])
    replies = len(slack.thread(CHANNEL, message.ts))
    return Resolved(bot, one, stale, started, message.ts, len(message.versions), replies, len(slack.calls))


def test_a_lagging_replicas_firing_copy_leaves_the_resolved_message_resolved(
    tmp_path: Path, bots: BotLauncher, slack: FakeSlack
) -> None:
    store = StoreView(tmp_path / "bot.db")
    before = resolved_by_replica_a(tmp_path, bots, slack)
    response = send(before.bot, before.stale, REPLICA_B)
    assert response.status_code == 202
    assert (
        response.json()["duplicate"] is False
    )  # a body the bot had not seen: it is judged, not deduplicated
    wait_until(lambda: settled(store), TIMEOUT, "the stale copy to be processed")
    time.sleep(2.0)  # the time an edit would take to show up, had one been queued

    [after] = messages_about(slack, TARGET)
    assert after.ts == before.ts
    assert after.text.startswith("RESOLVED")
    assert len(after.versions) == before.versions
    assert len(slack.thread(CHANNEL, before.ts)) == before.replies
    assert len(slack.calls) == before.calls
    [line] = [line for line in before.bot.log_text().splitlines() if "stale copy" in line]
    assert REPLICA_B in line
    assert "WARNING" not in before.bot.log_text()  # Alertmanager was asked, and answered


def test_a_copy_alertmanager_lists_active_is_applied_as_the_refire_it_is(
    tmp_path: Path, bots: BotLauncher, slack: FakeSlack, alertmanager: Alertmanager
) -> None:
    before = resolved_by_replica_a(tmp_path, bots, slack)
    # Prometheus, back after its resend window, sends `one` again with its startsAt: Alertmanager fires it.
    alertmanager.post_alerts([{"labels": before.one, "startsAt": rfc3339(before.started)}])
    [listed] = alertmanager.alerts()
    assert listed["fingerprint"] == fingerprint(before.one)
    assert send(before.bot, before.stale, REPLICA_B).status_code == 202

    def shown_firing() -> bool:
        [message] = messages_about(slack, TARGET)
        return message.text.startswith("FIRING")

    wait_until(shown_firing, TIMEOUT, "the re-fire to turn the message back to firing")
    [after] = messages_about(slack, TARGET)
    assert after.ts == before.ts
    assert "stale copy" not in before.bot.log_text()
