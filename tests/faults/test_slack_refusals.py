"""Slack answers 200 with `ok: false` while alerts flow into three channels: each refusal is one clear log
line and a count on `/metrics`, the channels Slack refuses wait (nothing dropped), the others flow, and a
message whose content Slack refuses is sent again smaller, then as text only, never lost.

`#gone` does not exist (`channel_not_found`), the bot is not in `#locked` (`not_in_channel`): both as the
fake Slack answers by itself. In `#alerts` the fake refuses one post as `invalid_blocks` (with Slack's
`response_metadata.messages`) and two edits as `msg_too_long`: injected, since proxybot renders within the
published limits; they stand for a Slack whose limits are tighter than its documentation.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import yaml

from sim.slack_api import FakeSlack
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import (
    CHANNEL,
    CLIENT,
    BotProcess,
    alert_entry,
    auth,
    notification,
    now,
    proxy_alert,
    text_of,
)
from tests.faults.slack_faults import FaultStore, assert_never_crashed, duplicate_posts, metric
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

POINTER = "[ERROR] must be less than 151 characters [json-pointer:/blocks/0/text/text]"
REFUSED_CHANNELS = {"team-gone": "#gone", "team-locked": "#locked"}
GROUPS = {CLIENT: 5, "team-gone": 2, "team-locked": 2}
TWO_FIRING = "2 alerts firing"  # the compact message's count, after the update


@pytest.fixture
def config(bot_config: Path, slack: FakeSlack) -> Path:
    """The e2e config with two more clusters (copies of team-a) whose alerts go to channels Slack refuses."""
    slack.add_channel("#locked", member=False)
    doc = yaml.safe_load(bot_config.read_text())
    [team_a] = doc["clusters"]
    for name, channel in REFUSED_CHANNELS.items():
        targets = [{**t, "name": f"{t['name']}-{name}"} for t in team_a["targets"]]  # each target once
        copy = {**team_a, "name": name, "match": {"cluster": name}, "channel": channel, "targets": targets}
        doc["clusters"].append(copy)
    bot_config.write_text(yaml.safe_dump(doc, sort_keys=False))
    return bot_config


def bodies() -> list[bytes]:
    """Per group a first notification (one alert), then its update (two): a post, then an edit and a reply."""
    started = now()
    firsts, updates = [], []
    for cluster, count in GROUPS.items():
        for i in range(count):
            labels = proxy_alert(target=f"platform/{cluster}-{i}", cluster=cluster)
            one = alert_entry(labels, started)
            two = alert_entry({**labels, "group_version": "data.example.com/v1alpha1"}, started)
            firsts.append(json.dumps(notification([one])).encode())
            updates.append(json.dumps(notification([one, two])).encode())
    return firsts + updates


def send_all(bot: BotProcess) -> list[int]:
    headers = {**auth(), "Content-Type": "application/json"}
    with httpx.Client(base_url=bot.url, headers=headers, timeout=10.0) as http:
        return [http.post("/alertmanager", content=body).status_code for body in bodies()]


def delivered_here(slack: FakeSlack, store: FaultStore) -> bool:
    tops = slack.top_level(CHANNEL)
    settled = store.pending_in(CHANNEL) == 0 and store.unprocessed() == 0
    return settled and len(tops) == GROUPS[CLIENT] and all(TWO_FIRING in text_of(m) for m in tops)


def test_refusals_are_logged_and_counted_and_the_rest_flows(
    tmp_path: Path, config: Path, slack: FakeSlack
) -> None:
    slack.fail("chat.postMessage", status=200, error="invalid_blocks", channel=CHANNEL, messages=(POINTER,))
    slack.fail("chat.update", status=200, error="msg_too_long", channel=CHANNEL, times=2)
    launcher = BotLauncher(config, tmp_path)
    try:
        bot = launcher.start()
        store = FaultStore(tmp_path / "bot.db")
        assert set(send_all(bot)) == {202}
        wait_until(lambda: delivered_here(slack, store), 60.0, f"every group of {CHANNEL} in its final state")
        assert_refusals_counted(bot)
        log = bot.log_text()
        assert bot.running
    finally:
        launcher.close()

    assert_said_what_to_fix(log)
    texts_only = [m for m in slack.top_level(CHANNEL) if not m.blocks]
    assert len(texts_only) == 1, "the edit refused twice went out as text only"
    assert TWO_FIRING in texts_only[0].text
    assert duplicate_posts(slack, store) == 0
    assert store.outbox_failed() == 0  # nothing given up: the refused channels wait for the operator
    for channel in REFUSED_CHANNELS.values():
        assert store.pending_in(channel) >= GROUPS["team-gone"], channel
        assert slack.top_level(channel) == []
    assert_never_crashed(bot)


def assert_refusals_counted(bot: BotProcess) -> None:
    name = "proxybot_slack_refusals_total"
    assert metric(bot.url, name, method="chat.postMessage", error="channel_not_found") >= 1
    assert metric(bot.url, name, method="chat.postMessage", error="not_in_channel") >= 1
    assert metric(bot.url, name, method="chat.postMessage", error="invalid_blocks") == 1
    assert metric(bot.url, name, method="chat.update", error="msg_too_long") == 2


def assert_said_what_to_fix(log: str) -> None:
    lines = log.splitlines()
    gone = [line for line in lines if "Slack refused post in #gone" in line]
    assert gone, "\n".join(lines[-30:])
    assert "channel_not_found" in gone[0]
    assert "check the channel in the config" in gone[0]
    locked = [line for line in lines if "Slack refused post in #locked" in line]
    assert locked
    assert "not_in_channel" in locked[0]
    assert "invite the bot" in locked[0]
    [smaller] = [line for line in lines if "refused the content of post:#alerts" in line]
    assert "invalid_blocks" in smaller
    assert POINTER in smaller  # Slack's response_metadata.messages
    assert smaller.endswith("sent again smaller")
    edits = [line for line in lines if "refused the content of update:#alerts" in line]
    assert [line.rsplit(": sent again ", 1)[1] for line in edits] == ["smaller", "as text only"]
