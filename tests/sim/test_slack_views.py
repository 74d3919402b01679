"""The fake Slack's modals: views.open refuses what Slack refuses, and a submission carries the view."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sim.slack_api import FakeSlack
from sim.slack_views import option_value, text_value

TOKEN = "xoxb-test-token"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def slack(clock: Clock) -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=TOKEN, channels=["#alerts"], clock=clock) as fake:
        yield fake


def modal(**changes: Any) -> dict[str, Any]:
    view: dict[str, Any] = {
        "type": "modal",
        "callback_id": "proxy_silence_modal",
        "title": {"type": "plain_text", "text": "Silence"},
        "submit": {"type": "plain_text", "text": "Silence"},
        "private_metadata": "abc",
        "blocks": [
            {
                "type": "input",
                "block_id": "comment",
                "label": {"type": "plain_text", "text": "Why"},
                "element": {"type": "plain_text_input", "action_id": "value"},
            }
        ],
    }
    return {**view, **changes}


def open_view(slack: FakeSlack, trigger: str, view: Any, token: str = TOKEN) -> dict[str, Any]:
    answer = httpx.post(
        f"{slack.api_url}views.open",
        json={"trigger_id": trigger, "view": view},
        headers={"Authorization": f"Bearer {token}"},
        timeout=5,
    )
    found: dict[str, Any] = answer.json()
    return found


def test_a_fresh_trigger_opens_one_view(slack: FakeSlack, clock: Clock) -> None:
    trigger = slack.views.issue_trigger()
    clock.now += 2.9
    opened = open_view(slack, trigger, json.dumps(modal()))
    assert opened["ok"] is True
    assert opened["view"]["private_metadata"] == "abc"
    assert [v["id"] for v in slack.views.opened] == [opened["view"]["id"]]
    assert open_view(slack, trigger, modal())["error"] == "exchanged_trigger_id"


def test_late_unknown_or_unauthenticated_opens_are_refused(slack: FakeSlack, clock: Clock) -> None:
    trigger = slack.views.issue_trigger()
    assert open_view(slack, trigger, modal(), token="xoxb-wrong")["error"] == "invalid_auth"
    clock.now += 3.1
    assert open_view(slack, trigger, modal())["error"] == "expired_trigger_id"
    assert open_view(slack, "1.2.made-up", modal())["error"] == "invalid_trigger_id"
    assert slack.views.opened == []


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "home"},
        {"title": {"type": "plain_text", "text": "x" * 25}},
        {"private_metadata": "x" * 3001},
        {"submit": None},
        {"blocks": []},
        {"blocks": [{"type": "input", "label": {"type": "plain_text", "text": "x"}, "element": {}}]},
    ],
)
def test_a_view_slack_would_refuse_is_refused(slack: FakeSlack, bad: dict[str, Any]) -> None:
    view = {k: v for k, v in modal(**bad).items() if v is not None}
    assert open_view(slack, slack.views.issue_trigger(), view)["error"] == "invalid_arguments"


def test_a_submission_carries_the_view_the_values_and_a_forged_metadata(slack: FakeSlack) -> None:
    opened = open_view(slack, slack.views.issue_trigger(), modal())["view"]
    values = {"comment": {"value": text_value("upgrade")}, "duration": {"value": option_value("4h")}}
    sent = slack.views.submission(opened["id"], values, user="U1", user_name="alice")
    assert sent["type"] == "view_submission"
    assert sent["view"]["private_metadata"] == "abc"
    assert sent["view"]["state"]["values"]["comment"]["value"]["value"] == "upgrade"
    assert sent["view"]["state"]["values"]["duration"]["value"]["selected_option"]["value"] == "4h"
    forged = slack.views.submission(opened["id"], values, user="U1", user_name="a", private_metadata="x")
    assert forged["view"]["private_metadata"] == "x"
