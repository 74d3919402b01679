"""Enrichment through the running server: the message says which HA replica's cache it read, and leads
with the quick-triage verdict; its details reply carries what the verdict rests on."""

from __future__ import annotations

import json
import re

import httpx

from sim.server import SimServer
from sim.slack_api import FakeSlack, iter_texts
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import CHANNEL, alert_entry, auth, notification, now, proxy_alert
from tests.waiting import wait_until


def test_the_message_names_the_replica_it_read(sim: SimServer, slack: FakeSlack, bots: BotLauncher) -> None:
    bot = bots.start()
    pod = sim.pods("team-a")[0]  # the simulator's kubeconfig has a context of this name, pinned to it
    body = json.dumps(notification([alert_entry(proxy_alert(pod=pod), now())])).encode()
    headers = {**auth(), "Content-Type": "application/json"}
    assert httpx.post(f"{bot.url}/alertmanager", content=body, headers=headers, timeout=10).status_code == 202
    wait_until(lambda: slack.top_level(CHANNEL), 20.0, "the alert's message")
    [message] = slack.top_level(CHANNEL)
    assert f"from replica `{pod}`" in "\n".join(iter_texts(message.blocks))
    wait_until(lambda: slack.thread(CHANNEL, message.ts), 20.0, "the details reply")
    [details] = slack.thread(CHANNEL, message.ts)
    # The replica is named with its reading (whatever the simulated target's state at that moment).
    assert re.search(rf"replica `{pod}`: healthy \d+, quarantined \d+", "\n".join(iter_texts(details.blocks)))


def test_the_message_leads_with_the_quick_triage_verdict(
    sim: SimServer, slack: FakeSlack, bots: BotLauncher
) -> None:
    with sim.lock:
        sim.world.advance_to(120.0)  # the target's control plane hangs from t=60: its pod is not Ready
    bot = bots.start()
    body = json.dumps(notification([alert_entry(proxy_alert(), now())])).encode()
    headers = {**auth(), "Content-Type": "application/json"}
    assert httpx.post(f"{bot.url}/alertmanager", content=body, headers=headers, timeout=10).status_code == 202
    wait_until(lambda: slack.top_level(CHANNEL), 20.0, "the alert's message")
    [message] = slack.top_level(CHANNEL)
    assert "*Now:* still broken · 🔴 target_down · " in "\n".join(iter_texts(message.blocks))
    wait_until(lambda: slack.thread(CHANNEL, message.ts), 20.0, "the details reply")
    text = "\n".join(iter_texts(slack.thread(CHANNEL, message.ts)[0].blocks))
    verdict = (
        "*Verdict:* 🔴 target_down: none of the target's 1 control-plane pods is Ready: the target is down"
    )
    assert verdict in text
    assert text.index("*Verdict:*") < text.index("*Evidence*")  # the judgement first, then its evidence
    assert "*Rests on:* target pods: 0 of 1 Ready; proxy metrics: gauges now" in text
