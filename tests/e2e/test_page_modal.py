"""*Silence…* and *Acknowledge* from the demo page: a real Alertmanager (0.25) delivers to `proxybot serve`,
which posts to the strict fake Slack; the page presses as Slack presses (`/page/action`, what page.js sends),
draws the modal the bot opened (read in real headless Chromium too), and submits it as Slack submits
(`/page/view/submit`: a signed `view_submission`), showing the errors beside their fields and closing on
the bot's empty answer. The silence is Alertmanager's, with the comment and the page's person.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from bot.render.silence_modal import COMMENT_BLOCK, CUSTOM, CUSTOM_BLOCK, DURATION_BLOCK
from bot.render.slack import ACTION_ACK, ACTION_SILENCE
from sim.ports import free_port
from sim.server import SimServer
from sim.slack_api import FakeSlack
from sim.slack_page import USER_ID, SlackPage
from sim.slack_page_modal import REQUIRED
from tests.e2e.stack import (
    BOT_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    WEBHOOK_TOKEN,
    BotProcess,
    now,
    proxy_alert,
    proxybot_command,
    rfc3339,
    summary_of,
    wait_degraded,
    write_bot_config,
)
from tests.e2e.test_alertmanager_flow import ROUTE
from tests.e2e.test_demo_page import shots, top_messages
from tests.harness.alertmanager import Alertmanager
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

TIMEOUT = 30.0
COMMENT = "node drain until 14:00"


@dataclass(frozen=True)
class PageStack:
    slack: FakeSlack
    page: SlackPage
    channel: str
    am: Alertmanager

    def state(self) -> dict[str, Any]:
        answer = httpx.get(f"{self.page.url}page/state", params={"channel": self.channel}, timeout=10)
        assert answer.status_code == 200
        state: dict[str, Any] = answer.json()
        return state

    def message(self) -> tuple[str, str]:
        [(ts, html)] = top_messages(self.state()["html"])
        return ts, html

    def modal(self) -> dict[str, str] | None:
        modal: dict[str, str] | None = self.state()["modal"]
        return modal

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = httpx.post(f"{self.page.url}page/{path}", json=body, timeout=10)
        assert answer.status_code == 200, answer.text
        result: dict[str, Any] = answer.json()
        return result

    def press(self, action_id: str) -> None:
        """What page.js sends when the button is clicked: the channel, the message, which control."""
        ts, html = self.message()
        found = re.search(rf'data-action="([^"]*{action_id}[^"]*)"', html)
        assert found is not None, f"no {action_id} control on the message"
        about = json.loads(found.group(1).replace("&quot;", '"'))
        press = {"channel": self.channel, "ts": ts, "block_id": about["block_id"]}
        assert self.post("action", press | {"action_id": about["action_id"], "option": None}) == {
            "ok": True,
            "status": 200,
        }

    def silences(self) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = httpx.get(f"{self.am.url}/api/v2/silences", timeout=10).json()
        return [s for s in listed if s["status"]["state"] == "active"]


@pytest.fixture
def stack(tmp_path: Path, sim: SimServer) -> Iterator[PageStack]:
    wait_degraded(sim)
    slack = FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL])
    page = SlackPage(slack)  # its routes join the fake's before it starts
    port = free_port()
    workdir = tmp_path / "alertmanager"
    workdir.mkdir()
    with slack:
        config = write_bot_config(sim, tmp_path, slack.api_url)
        with Alertmanager(workdir, f"http://127.0.0.1:{port}/alertmanager", WEBHOOK_TOKEN, route=ROUTE) as am:
            doc = yaml.safe_load(config.read_text())
            doc["alertmanager"]["url"] = am.url
            doc["access"] = {"silencers": [USER_ID]}  # the page's person
            config.write_text(yaml.safe_dump(doc, sort_keys=False))
            with BotProcess(config, tmp_path / "bot.log", port=port, command=proxybot_command()) as bot:
                page.connect(f"{bot.url}/slack/events", SIGNING_SECRET)
                yield PageStack(slack, page, slack.channel_id(CHANNEL), am)


def field_of(modal_html: str, block_id: str) -> str:
    """The HTML of one input block of the modal."""
    found = re.search(
        rf'<div class="block input[^"]*" data-block="{block_id}".*?</label>.*?</div>', modal_html
    )
    assert found is not None, f"no field {block_id} in the modal"
    start = found.start()
    end = modal_html.find('<div class="block input', found.end())
    return modal_html[start : end if end > 0 else modal_html.index('<div class="modal-footer">')]


def test_silence_and_acknowledge_from_the_page(stack: PageStack, sim: SimServer) -> None:
    labels = proxy_alert(pod=sim.pods("team-a")[0], group_version="example.com/v1")
    stack.am.post_alerts(
        [{"labels": labels, "annotations": {"summary": summary_of(labels)}, "startsAt": rfc3339(now())}]
    )
    wait_until(lambda: stack.slack.top_level(CHANNEL), TIMEOUT, "the group's message")
    assert stack.modal() is None

    stack.press(ACTION_SILENCE)
    wait_until(stack.modal, TIMEOUT, "the silence form on the page")
    modal = stack.modal()
    assert modal is not None
    html = modal["html"]
    assert '<div class="modal-title">Silence alert</div>' in html
    duration = field_of(html, DURATION_BLOCK)
    assert re.findall(r'<option value="([^"]+)"', duration) == ["30m", "1h", "4h", "1d", CUSTOM]
    assert '<option value="1h" selected>' in duration  # the view's initial option
    assert "<textarea" in field_of(html, COMMENT_BLOCK)
    assert "(optional)" in field_of(html, CUSTOM_BLOCK)
    assert "<code>target=&quot;platform/crd-store&quot;</code>" in html  # the matchers, as text
    assert re.search(
        r'data-modal="close">Cancel</button><button type="submit" class="btn primary">Silence<', html
    )
    [view] = stack.slack.views.opened_by(USER_ID)
    assert f'data-view="{view["id"]}"' in html

    # Headless Chromium draws it over the channel, the page's script running.
    dom = shots.dump_dom(f"{stack.page.url}?channel={stack.channel}")
    assert f'<form class="modal" id="modal" data-view="{view["id"]}"' in dom
    assert 'data-script="running"' in dom

    # An empty comment: Slack's client refuses it (the field is required) and sends nothing.
    typed = {DURATION_BLOCK: "4h", CUSTOM_BLOCK: "", COMMENT_BLOCK: ""}
    answer = stack.post("view/submit", {"view_id": view["id"], "values": typed})
    assert answer == {"ok": True, "closed": False, "errors": {COMMENT_BLOCK: REQUIRED}, "problem": ""}
    modal = stack.modal()
    assert modal is not None
    assert f'<div class="field-error" role="alert">{REQUIRED}</div>' in field_of(modal["html"], COMMENT_BLOCK)
    assert stack.silences() == []

    # A duration the bot refuses: its `response_action: errors`, beside the custom field; the comment kept.
    typed = {DURATION_BLOCK: CUSTOM, CUSTOM_BLOCK: "soon", COMMENT_BLOCK: COMMENT}
    answer = stack.post("view/submit", {"view_id": view["id"], "values": typed})
    assert answer["closed"] is False
    assert list(answer["errors"]) == [CUSTOM_BLOCK]
    modal = stack.modal()
    assert modal is not None
    assert 'class="field-error"' in field_of(modal["html"], CUSTOM_BLOCK)
    assert f">{COMMENT}</textarea>" in field_of(modal["html"], COMMENT_BLOCK)
    assert stack.silences() == []

    # Submitted right: the bot answers nothing, the modal closes, the silence is Alertmanager's.
    typed = {DURATION_BLOCK: "4h", CUSTOM_BLOCK: "", COMMENT_BLOCK: COMMENT}
    answer = stack.post("view/submit", {"view_id": view["id"], "values": typed})
    assert answer == {"ok": True, "closed": True, "errors": {}, "problem": ""}
    assert stack.modal() is None
    [silence] = stack.silences()
    assert silence["comment"] == COMMENT
    assert silence["createdBy"] == f"you (Slack {USER_ID})"
    wait_until(lambda: "🔕 Silenced by" in stack.message()[1], TIMEOUT, "the silence shown on the page")
    assert COMMENT in stack.message()[1]
    again = httpx.post(f"{stack.page.url}page/view/submit", json={"view_id": view["id"], "values": typed})
    assert again.status_code == 404
    assert again.json()["error"].startswith("view_id: no modal")
    assert len(stack.silences()) == 1

    stack.press(ACTION_ACK)
    wait_until(lambda: "👀 Acknowledged by" in stack.message()[1], TIMEOUT, "the acknowledgement on the page")
    assert "👀 Acknowledged by" in shots.dump_dom(f"{stack.page.url}?channel={stack.channel}")
