"""Enrichment through the running server: the message says which HA replica's cache it read."""

from __future__ import annotations

import json

import httpx

from sim.server import SimServer
from sim.slack_api import FakeSlack, iter_texts
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import CHANNEL, alert_entry, auth, notification, now, proxy_alert, wait_until


def test_the_message_names_the_replica_it_read(sim: SimServer, slack: FakeSlack, bots: BotLauncher) -> None:
    bot = bots.start()
    pod = sim.pods("team-a")[0]  # the simulator's kubeconfig has a context of this name, pinned to it
    body = json.dumps(notification([alert_entry(proxy_alert(pod=pod), now())])).encode()
    headers = {**auth(), "Content-Type": "application/json"}
    assert httpx.post(f"{bot.url}/alertmanager", content=body, headers=headers, timeout=10).status_code == 202
    wait_until(lambda: slack.top_level(CHANNEL), 20.0, "the alert's message")
    text = "\n".join(iter_texts(slack.top_level(CHANNEL)[0].blocks))
    assert f"*Replica read:* `{pod}`" in text
