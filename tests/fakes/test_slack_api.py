"""The fake Slack server answers like Slack for the calls slack_sdk makes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack_api import FakeSlack, iter_texts


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        yield fake


def client(slack: FakeSlack, token: str = "xoxb-test-token") -> AsyncWebClient:
    return AsyncWebClient(token=token, base_url=slack.api_url, timeout=5)


async def test_post_update_and_thread(slack: FakeSlack) -> None:
    web = client(slack)
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "peers: 0 healthy"}}]
    posted = await web.chat_postMessage(channel="C1", text="firing", blocks=blocks)
    await web.chat_update(channel="C1", ts=posted["ts"], text="resolved", blocks=blocks)
    await web.chat_postMessage(channel="C1", text="resolved after 3 min", thread_ts=posted["ts"])
    [top] = slack.top_level("C1")
    assert (top.text, len(top.versions)) == ("resolved", 1)
    assert [m.text for m in slack.thread("C1", posted["ts"])] == ["resolved after 3 min"]
    assert list(iter_texts(top.blocks)) == ["peers: 0 healthy"]


async def test_rejects_bad_token(slack: FakeSlack) -> None:
    with pytest.raises(SlackApiError) as err:
        await client(slack, "xoxb-wrong").chat_postMessage(channel="C1", text="x")
    assert err.value.response["error"] == "invalid_auth"


@pytest.mark.parametrize(
    ("blocks", "error"),
    [
        ([{"type": "divider"}] * 51, "invalid_blocks"),
        ([{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}], "invalid_blocks"),
        ([{"type": "section", "text": {"type": "mrkdwn", "text": "s" * 3001}}], "invalid_blocks"),
        ([{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 11}], "invalid_blocks"),
    ],
)
async def test_enforces_block_kit_limits(slack: FakeSlack, blocks: list[dict[str, Any]], error: str) -> None:
    with pytest.raises(SlackApiError) as err:
        await client(slack).chat_postMessage(channel="C1", text="x", blocks=blocks)
    assert err.value.response["error"] == error
    assert slack.top_level() == []


async def test_injected_429_carries_retry_after(slack: FakeSlack) -> None:
    slack.fail("chat.postMessage", status=429, retry_after=7)
    with pytest.raises(SlackApiError) as err:
        await client(slack).chat_postMessage(channel="C1", text="x")
    assert err.value.response.status_code == 429
    # aiohttp's multidict: one header value.
    assert err.value.response.headers["Retry-After"] == "7"
    posted = await client(slack).chat_postMessage(channel="C1", text="x")
    assert posted["ok"]


async def test_files_upload_v2_lands_in_thread(slack: FakeSlack) -> None:
    web = client(slack)
    posted = await web.chat_postMessage(channel="C1", text="alert")
    png = b"\x89PNG\r\n\x1a\n" + b"0" * 100
    await web.files_upload_v2(channel="C1", thread_ts=posted["ts"], content=png, filename="chart.png")
    [upload] = slack.uploads
    assert (upload["channel_id"], upload["thread_ts"], upload["content"]) == ("C1", posted["ts"], png)


def test_response_url_allows_five_uses(slack: FakeSlack) -> None:
    url = slack.response_url("abc")
    codes = [httpx.post(url, json={"text": f"answer {i}"}, timeout=5).status_code for i in range(6)]
    assert codes == [200] * 5 + [404]
    assert [r["text"] for r in slack.responses] == [f"answer {i}" for i in range(5)]
