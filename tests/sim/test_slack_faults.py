"""The fake Slack's injected faults answer as Slack does: per channel, for a while, and in the call log."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack_api import FakeSlack

POINTER = "[ERROR] must be less than 151 characters [json-pointer:/blocks/0/text/text]"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(channels={"C1": "#alerts", "C2": "#other"}) as fake:
        yield fake


def client(slack: FakeSlack) -> AsyncWebClient:
    return AsyncWebClient(token="xoxb-test-token", base_url=slack.api_url, timeout=5)


async def test_a_fault_for_one_channel_leaves_the_others_alone(slack: FakeSlack) -> None:
    slack.fail("chat.postMessage", status=200, error="invalid_blocks", channel="#alerts", messages=(POINTER,))
    web = client(slack)
    await web.chat_postMessage(channel="C2", text="another channel")
    with pytest.raises(SlackApiError) as err:
        await web.chat_postMessage(channel="C1", text="by ID, the fault's channel all the same")
    assert err.value.response.status_code == 200
    assert err.value.response.data["error"] == "invalid_blocks"
    assert err.value.response.data["response_metadata"] == {"messages": [POINTER]}
    assert "Retry-After" not in err.value.response.headers
    await web.chat_postMessage(channel="C1", text="the fault was used up")
    assert [m.text for m in slack.top_level("C1")] == ["the fault was used up"]


async def test_a_rate_limit_answers_every_call_until_it_ends(slack: FakeSlack) -> None:
    now = [100.0]
    slack.clock = lambda: now[0]
    slack.rate_limit("chat.update", seconds=30, retry_after=3)
    web = client(slack)
    posted = await web.chat_postMessage(channel="C1", text="posting is not limited")
    for _ in range(3):
        with pytest.raises(SlackApiError) as err:
            await web.chat_update(channel="C1", ts=posted["ts"], text="edit")
        assert (err.value.response.status_code, err.value.response.headers["Retry-After"]) == (429, "3")
    now[0] += 30.0
    await web.chat_update(channel="C1", ts=posted["ts"], text="edit")
    assert [(c.method, c.status, c.error) for c in slack.calls] == [
        ("chat.postMessage", 200, None),
        *[("chat.update", 429, "ratelimited")] * 3,
        ("chat.update", 200, None),
    ]
