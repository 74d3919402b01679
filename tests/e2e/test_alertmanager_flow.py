"""A real Alertmanager (Debian's 0.25) delivering to `proxybot serve`, which posts to the fake Slack.

One alert group is one Slack message: enriched with the simulator's live state when it is posted, edited
in place (with a thread reply) when a second alert joins the group, and edited to resolved when the
alerts end, never posted again. Wrong credentials reach nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sim.server import SimServer
from sim.slack_api import FakeSlack, Message, iter_texts
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import (
    CHANNEL,
    TARGET,
    WEBHOOK_TOKEN,
    BotProcess,
    StoreView,
    now,
    proxy_alert,
    proxybot_command,
    rfc3339,
    summary_of,
    wait_degraded,
)
from tests.harness.alertmanager import Alertmanager, Route
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

ROUTE = Route(group_by=("alertname", "cluster", "target"), group_wait="1s", group_interval="1s")
DELIVERY_TIMEOUT = 30.0
# The peers on the "Now:" line: spelled out when every cache is in one state, else a legend and h/q/o per
# state. Which one shows depends on the moment read (the two caches' quarantines cycle on their own).
NOW_PEERS = re.compile(r"healthy (\d+), quarantined (\d+), half_open (\d+)|(\d+)/(\d+)/(\d+)")


def am_alert(labels: Mapping[str, str], starts: str, ends: str | None = None) -> dict[str, Any]:
    alert: dict[str, Any] = {"labels": dict(labels), "annotations": {"summary": summary_of(labels)}}
    alert["startsAt"] = starts
    if ends is not None:
        alert["endsAt"] = ends
    return alert


def full_text(message: Message) -> str:
    return "\n".join([message.text, *iter_texts(message.blocks)])


def peers_now(text: str) -> list[tuple[int, int, int]]:
    """(healthy, quarantined, half_open) of each peer cache state the message's "Now:" line shows."""
    line = next((ln for ln in text.splitlines() if "Now:" in ln), "")
    if "healthy/quarantined/half_open:" not in line and "healthy " not in line:
        return []
    found = [tuple(int(n) for n in m.groups() if n is not None) for m in NOW_PEERS.finditer(line)]
    return [(h, q, o) for h, q, o in found]


def top_level_posts(slack: FakeSlack) -> int:
    return sum(1 for call in slack.calls_to("chat.postMessage") if not call.params.get("thread_ts"))


@pytest.fixture
def bot(sim: SimServer, bots: BotLauncher) -> BotProcess:
    # Degraded before the bot starts, so no read it caches (for a few seconds) predates the fault.
    wait_degraded(sim)
    # The console script, as an operator runs it.
    return bots.start(command=proxybot_command())


@pytest.fixture
def alertmanager(tmp_path: Path, bot: BotProcess) -> Iterator[Alertmanager]:
    workdir = tmp_path / "alertmanager"
    workdir.mkdir()
    with Alertmanager(workdir, f"{bot.url}/alertmanager", WEBHOOK_TOKEN, route=ROUTE) as am:
        yield am


def test_one_group_is_one_message_enriched_edited_and_resolved_in_place(
    sim: SimServer, slack: FakeSlack, bot: BotProcess, alertmanager: Alertmanager
) -> None:
    pod = sim.pods("team-a")[0]
    first = proxy_alert(pod=pod, group_version="example.com/v1")
    second = proxy_alert(pod=pod, group_version="data.example.com/v1alpha1")
    started = rfc3339(now() - timedelta(minutes=3))

    alertmanager.post_alerts([am_alert(first, started)])
    wait_until(lambda: slack.top_level(CHANNEL), DELIVERY_TIMEOUT, "the group's message in Slack")
    [message] = slack.top_level(CHANNEL)
    text = full_text(message)
    assert "ResourceProxyNoHealthyPeers" in text
    assert TARGET in text
    # Enriched from the simulator at delivery time: its peer gauges, read after the target went down.
    assert "Live state read" in text
    assert peers_now(text), text
    assert all(healthy == 0 for healthy, _, _ in peers_now(text)), text
    # Posted with it: the one details reply, every piece of evidence in full.
    wait_until(lambda: slack.thread(CHANNEL, message.ts), DELIVERY_TIMEOUT, "the details reply")
    [details] = slack.thread(CHANNEL, message.ts)
    assert "example.com/v1: peers: healthy 0" in full_text(details)

    alertmanager.post_alerts([am_alert(first, started), am_alert(second, started)])
    wait_until(
        lambda: message.versions and details.versions and len(slack.thread(CHANNEL, message.ts)) == 2,
        DELIVERY_TIMEOUT,
        "the edits and the thread reply for the second alert",
    )
    assert "2 alerts firing" in full_text(message)
    assert "data.example.com/v1alpha1" in full_text(details)  # edited in place, not a new reply
    replies = slack.thread(CHANNEL, message.ts)
    assert replies[0] is details
    assert "1 new" in replies[1].text
    assert "data.example.com/v1alpha1" in full_text(replies[1])
    assert {c.params.get("ts") for c in slack.calls_to("chat.update")} == {message.ts, details.ts}

    ended = rfc3339(now() - timedelta(seconds=1))
    alertmanager.post_alerts([am_alert(first, started, ended), am_alert(second, started, ended)])
    wait_until(lambda: "RESOLVED" in message.text, DELIVERY_TIMEOUT, "the message edited to resolved")
    wait_until(
        lambda: any("All resolved" in full_text(r) for r in slack.thread(CHANNEL, message.ts)),
        DELIVERY_TIMEOUT,
        "the resolve reply in the thread",
    )
    assert "Resolved after" in full_text(message)
    assert details.text.startswith("Details: resolved")
    assert slack.top_level() == [message]
    assert top_level_posts(slack) == 1


def test_wrong_bearer_token_is_refused_and_nothing_reaches_slack(
    tmp_path: Path, bot: BotProcess, slack: FakeSlack
) -> None:
    workdir = tmp_path / "alertmanager-wrong-token"
    workdir.mkdir()
    with Alertmanager(workdir, f"{bot.url}/alertmanager", "not-the-token", route=ROUTE) as am:
        am.post_alerts([am_alert(proxy_alert(), rfc3339(now()))])
        # The intake logs each refusal (serve has no access log).
        wait_until(
            lambda: "refused an Alertmanager webhook: missing or wrong credentials" in bot.log_text(),
            DELIVERY_TIMEOUT,
            "Alertmanager's delivery to be refused with 401",
        )
        wait_until(lambda: "401" in am.log_tail(), DELIVERY_TIMEOUT, "Alertmanager to log the 401")
    assert "not-the-token" not in bot.log_text()
    assert StoreView(tmp_path / "bot.db").notifications() == 0
    assert slack.calls_to("chat.postMessage") == []
    assert slack.calls_to("chat.update") == []
