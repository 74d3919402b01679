"""Escalation end to end: a real Alertmanager (0.25) delivers to `proxybot serve` (SQLite), which posts to
the strict fake Slack. A critical alert nobody acknowledged within `escalation.after` (5 s here, on the
bot's clock) gets one thread reply mentioning the on-call, broadcast to the channel; acknowledged first,
its deadline is closed as acknowledged (seen in the store and `/metrics`) and nothing is posted.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
import yaml

from bot.render.slack import ACTION_ACK
from sim.server import SimServer
from sim.slack_api import FakeSlack, Message
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import (
    ALICE,
    CHANNEL,
    BotProcess,
    StoreView,
    now,
    press_button,
    proxy_alert,
    rfc3339,
    summary_of,
    text_of,
    write_bot_config,
)
from tests.e2e.test_acknowledge import alertmanager, bot
from tests.harness.alertmanager import Alertmanager
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

__all__ = ["alertmanager", "bot"]  # the acknowledge tests' fixtures, over this module's config

TIMEOUT = 30.0
ONCALL = "<!subteam^S0123ONCALL>"
AFTER = 5.0


@pytest.fixture
def after() -> float:
    """`escalation.after` for the test's bot (a test overrides it by parametrizing `after`)."""
    return AFTER


@pytest.fixture
def bot_config(tmp_path: Path, sim: SimServer, slack: FakeSlack, after: float) -> Path:
    path = write_bot_config(sim, tmp_path, slack.api_url)
    doc = yaml.safe_load(path.read_text())
    doc["escalation"] = {"after": f"{after:g}s", "mention": ONCALL, "severities": ["critical"]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture
def store(tmp_path: Path, bots: BotLauncher) -> StoreView:
    return StoreView(tmp_path / "bot.db")


def fire(alertmanager: Alertmanager, target: str) -> dict[str, str]:
    labels = proxy_alert(target=target, severity="critical")
    alert = {"labels": labels, "annotations": {"summary": summary_of(labels)}, "startsAt": rfc3339(now())}
    alertmanager.post_alerts([alert])
    return labels


def broadcasts(slack: FakeSlack, message: Message) -> list[Message]:
    return [m for m in slack.thread(CHANNEL, message.ts) if m.broadcast]


def escalated(bot: BotProcess, outcome: str) -> float:
    """Deadlines the bot settled with `outcome`, from its `/metrics` (0 before the first)."""
    sample = f'proxybot_escalations_total{{outcome="{outcome}"}} '
    text = httpx.get(f"{bot.url}/metrics", timeout=5.0).text
    return next((float(line.split()[-1]) for line in text.splitlines() if line.startswith(sample)), 0.0)


def test_an_unacknowledged_critical_alert_gets_one_broadcast_reply_after_its_deadline(
    slack: FakeSlack, bot: BotProcess, alertmanager: Alertmanager, store: StoreView
) -> None:
    fire(alertmanager, "platform/escalated")
    wait_until(lambda: slack.top_level(CHANNEL), TIMEOUT, "the group's message")
    [message] = slack.top_level(CHANNEL)
    wait_until(lambda: store.escalations(), TIMEOUT, "the deadline stored")
    [(_, _, due_at)] = store.escalations()

    wait_until(lambda: broadcasts(slack, message), TIMEOUT, "the escalation reply")
    seen_at = time.time()
    [reply] = broadcasts(slack, message)
    assert seen_at >= due_at, "escalated before its deadline"
    assert reply.text.startswith(f"🚨 Escalated to {ONCALL} at ")
    assert "nobody acknowledged or silenced this alert within 5 s of its post" in reply.text
    assert reply.thread_ts == message.ts
    assert [outcome for _, outcome, _ in store.escalations()] == ["sent"]
    assert escalated(bot, "sent") == 1

    # A clear later event: the group resolves (its resolve reply lands in the same thread).
    labels = proxy_alert(target="platform/escalated", severity="critical")
    alertmanager.post_alerts([{"labels": labels, "startsAt": rfc3339(now()), "endsAt": rfc3339(now())}])
    wait_until(lambda: message.text.startswith("RESOLVED"), TIMEOUT, "the resolved edit")
    wait_until(
        lambda: any("resolved" in text_of(m).lower() for m in slack.thread(CHANNEL, message.ts)[2:]),
        TIMEOUT,
        "the resolve reply",
    )
    assert broadcasts(slack, message) == [reply], "escalated more than once"
    assert slack.top_level(CHANNEL) == [message], "the escalation made a message of its own"


# A deadline the press meets on a loaded machine too (a press is answered in well under a second; 20 s
# leaves the rest to scheduling delays), so the outcome never depends on the machine's speed.
@pytest.mark.parametrize("after", [20.0])
def test_an_alert_acknowledged_before_its_deadline_is_not_escalated(
    slack: FakeSlack, bot: BotProcess, alertmanager: Alertmanager, store: StoreView
) -> None:
    fire(alertmanager, "platform/owned")
    wait_until(lambda: slack.top_level(CHANNEL), TIMEOUT, "the group's message")
    [message] = slack.top_level(CHANNEL)
    press_button(bot, slack, message, ACTION_ACK, ALICE, "alice")
    wait_until(lambda: f"Acknowledged by <@{ALICE}>" in text_of(message), TIMEOUT, "the acknowledgement")
    wait_until(lambda: store.escalations(), TIMEOUT, "the deadline stored")
    [(_, _, due_at)] = store.escalations()
    assert time.time() < due_at, "acknowledged after the deadline: the test's premise did not hold"

    # The deadline passes on the bot's clock and its next tick closes it as acknowledged.
    wait_until(
        lambda: [outcome for _, outcome, _ in store.escalations()] == ["acknowledged"],
        TIMEOUT,
        "the deadline closed as acknowledged",
    )
    assert escalated(bot, "acknowledged") == 1
    assert escalated(bot, "sent") == 0
    assert broadcasts(slack, message) == []
    assert not any(ONCALL in text_of(m) for m in slack.thread(CHANNEL, message.ts))
