"""What changed before an alert, through the simulator's platform stand-in and `proxybot serve` (its scenario
config-change): team-a's vcluster.yaml retargets a group/version and team-a upgrades; the bot's reading of
the platform keeps that in the instances' history, and the alert that follows says it, the diff in its
details."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sim.defaults import SECONDARY_GV
from sim.scenarios import FAULT_AT, NEXT_TARGET, NEXT_VERSION
from sim.server import SimServer
from sim.slack_api import FakeSlack, iter_texts
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import CHANNEL, alert_entry, auth, notification, now, proxy_alert, write_bot_config
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

REFRESH = 5  # the shortest `platform.refresh`
TARGET = f"platform/{NEXT_TARGET}"


@pytest.fixture
def sim() -> Iterator[SimServer]:
    # config-change at 10x, held before the change until the test lets it go.
    with SimServer(scenario="config-change", speed=10, platform=True, hold_at=20.0) as srv:
        yield srv


@pytest.fixture
def bot_config(tmp_path: Path, sim: SimServer, slack: FakeSlack) -> Path:
    return write_bot_config(sim, tmp_path, slack.api_url, refresh=REFRESH)


def _texts(slack: FakeSlack) -> tuple[str, str]:
    """The message about the retargeted target and its details reply, once both are there."""
    for message in slack.top_level(CHANNEL):
        text = "\n".join([message.text, *iter_texts(message.blocks)])
        replies = slack.thread(CHANNEL, message.ts)
        if TARGET in text and replies:
            return text, "\n".join(iter_texts(replies[0].blocks))
    return "", ""


def test_the_alert_after_a_config_change_says_what_changed_with_the_diff(
    sim: SimServer, slack: FakeSlack, bots: BotLauncher
) -> None:
    bot = bots.start()
    wait_until(
        lambda: "fleet: 2 clients" in bot.log_text(), 20.0, "the first reading (the history's first versions)"
    )
    sim.hold_at = None  # the simulated clock catches up with the wall: past the change at once
    wait_until(lambda: sim.world.now() > FAULT_AT, 30.0, "team-a's vcluster.yaml to change")
    # Within `refresh` the bot reads the change (and, a new target among its clients', is rebuilt over it).
    wait_until(lambda: "fleet: changed" in bot.log_text(), 4 * REFRESH + 10, "the change read")
    wait_until(lambda: bot.log_text().count("serve: RSS") >= 2, 30.0, "the bot rebuilt over the new fleet")

    labels = proxy_alert(
        "ResourceProxyNoHealthyPeers", target=TARGET, group_version=SECONDARY_GV, pod="team-a-0"
    )
    labels["namespace"] = "vcluster-team-a"
    body = json.dumps(notification([alert_entry(labels, now())])).encode()
    headers = {**auth(), "Content-Type": "application/json"}

    def posted() -> bool:
        try:
            answer = httpx.post(f"{bot.url}/alertmanager", content=body, headers=headers, timeout=10)
        except httpx.HTTPError:
            return False  # the rebuilt bot not answering yet
        return answer.status_code == 202

    wait_until(posted, 30.0, "the alert taken in")
    message, details = wait_until(
        lambda: all(_texts(slack)) and _texts(slack), 30.0, "the alert and its details"
    )
    assert "*Changes:*" in message
    assert f"team-a's vcluster.yaml retargeted `datasets.{SECONDARY_GV}` to {TARGET}" in message
    assert f"vcluster {NEXT_VERSION} (was 0.37.1)" in message
    assert "No change to either end" not in message
    # The details: the same line, then the diff as a code block.
    assert "*What changed before it, the diff:*" in details
    assert "*Evidence*" in details  # the verdict's evidence keeps its room beside the diff
    assert "```" in details
    assert NEXT_TARGET in details.split("```")[1]
