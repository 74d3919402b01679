"""Acknowledge end to end: a real Alertmanager (0.25) delivers to `proxybot serve`, which posts to the
strict fake Slack; the *Acknowledge* button is pressed as Slack presses it (a signed request to serve).

The message is edited in place with who has it, one line goes in its thread, and a second person's
press is refused ephemerally, naming who has it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.render.slack import ACTION_ACK, ACTION_UNACK
from sim.server import SimServer
from sim.slack_api import FakeSlack, Message, iter_texts
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import (
    ALICE,
    BOB,
    CHANNEL,
    WEBHOOK_TOKEN,
    BotProcess,
    buttons,
    now,
    press_button,
    proxy_alert,
    proxybot_command,
    rfc3339,
    summary_of,
    wait_degraded,
)
from tests.e2e.test_alertmanager_flow import ROUTE
from tests.harness.alertmanager import Alertmanager
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

TIMEOUT = 30.0


@pytest.fixture
def bot(sim: SimServer, bots: BotLauncher) -> BotProcess:
    wait_degraded(sim)
    return bots.start(command=proxybot_command())


@pytest.fixture
def alertmanager(tmp_path: Path, bot: BotProcess) -> Iterator[Alertmanager]:
    workdir = tmp_path / "alertmanager"
    workdir.mkdir()
    with Alertmanager(workdir, f"{bot.url}/alertmanager", WEBHOOK_TOKEN, route=ROUTE) as am:
        yield am


def full_text(message: Message) -> str:
    return "\n".join([message.text, *iter_texts(message.blocks)])


def test_acknowledge_is_shown_on_the_message_once_in_its_thread_and_a_second_press_is_refused(
    sim: SimServer, slack: FakeSlack, bot: BotProcess, alertmanager: Alertmanager
) -> None:
    labels = proxy_alert(pod=sim.pods("team-a")[0], group_version="example.com/v1")
    alertmanager.post_alerts(
        [{"labels": labels, "annotations": {"summary": summary_of(labels)}, "startsAt": rfc3339(now())}]
    )
    wait_until(lambda: slack.top_level(CHANNEL), TIMEOUT, "the group's message")
    [message] = slack.top_level(CHANNEL)
    wait_until(lambda: slack.thread(CHANNEL, message.ts), TIMEOUT, "the details reply")
    assert [b["text"]["text"] for b in buttons(message) if b["action_id"] == ACTION_ACK] == ["Acknowledge"]

    press_button(bot, slack, message, ACTION_ACK, ALICE, "alice")
    wait_until(lambda: f"👀 Acknowledged by <@{ALICE}> at" in full_text(message), TIMEOUT, "the edit")
    assert "after it fired)" in full_text(message)
    assert [b["action_id"] for b in buttons(message) if b["action_id"] in (ACTION_ACK, ACTION_UNACK)] == [
        ACTION_UNACK
    ]
    wait_until(lambda: len(slack.thread(CHANNEL, message.ts)) == 2, TIMEOUT, "the thread line")
    line = slack.thread(CHANNEL, message.ts)[1]
    assert line.text.startswith(f"👀 <@{ALICE}> acknowledged this alert at")

    # Bob's client still shows *Acknowledge*: his press is refused, naming who has it.
    press_button(bot, slack, message, ACTION_ACK, BOB, "bob")
    wait_until(lambda: slack.responses, TIMEOUT, "Bob's ephemeral answer")
    [told] = slack.responses
    assert told["response_type"] == "ephemeral"
    assert f"<@{ALICE}> has this alert already" in told["text"]
    assert f"Acknowledged by <@{ALICE}>" in full_text(message)
    assert f"Acknowledged by <@{BOB}>" not in full_text(message)

    # A hand-over: Bob unacknowledges, then takes it.
    press_button(bot, slack, message, ACTION_UNACK, BOB, "bob-unack")
    wait_until(lambda: "Acknowledged by" not in full_text(message), TIMEOUT, "the unacknowledgement")
    press_button(bot, slack, message, ACTION_ACK, BOB, "bob-ack")
    wait_until(lambda: f"Acknowledged by <@{BOB}>" in full_text(message), TIMEOUT, "Bob's acknowledgement")
    wait_until(lambda: len(slack.thread(CHANNEL, message.ts)) == 4, TIMEOUT, "one line per change")
    assert slack.top_level(CHANNEL) == [message], "edited in place, never posted again"
