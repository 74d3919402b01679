"""SlackClient against the fake Slack Web API over real HTTP: calls, and every failure as a SlackError."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from bot.clients.slack import (
    SlackClient,
    SlackRateLimited,
    SlackRejected,
    SlackTransient,
    workspace_url,
)
from bot.errors import ConfigError
from bot.render.blocks import Message, header, section
from config.settings import SlackSettings
from tests.fakes.slack_api import FakeSlack

TOKEN = "xoxb-test-token"


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=TOKEN, channels={"C1": "#alerts"}) as slack:
        yield slack


def client_for(api_url: str, token: str = TOKEN, timeout: float = 5.0) -> SlackClient:
    return SlackClient.from_settings(SlackSettings(bot_token=token, api_url=api_url), timeout=timeout)


@pytest.fixture
def slack(fake: FakeSlack) -> SlackClient:
    return client_for(fake.api_url)


async def test_post_by_name_returns_the_channel_id_and_ts(fake: FakeSlack, slack: SlackClient) -> None:
    message = Message("fallback", (header("Target degraded"), section("*why*")))
    posted = await slack.post("#alerts", message)
    reply = await slack.post("C1", Message("a reply"), thread_ts=posted.ts)
    assert (posted.channel_id, reply.channel_id) == ("C1", "C1")
    [top] = fake.top_level("C1")
    assert top.ts == posted.ts
    assert top.text == "fallback"
    assert top.blocks == list(message.blocks)
    assert [m.ts for m in fake.thread("C1", posted.ts)] == [reply.ts]
    assert fake.calls_to("chat.postMessage")[0].token == TOKEN


async def test_update_edits_the_message_in_place(fake: FakeSlack, slack: SlackClient) -> None:
    posted = await slack.post("#alerts", Message("firing"))
    await slack.update(posted.channel_id, posted.ts, Message("resolved", (section("resolved after 12 min"),)))
    [top] = fake.top_level("C1")
    assert top.text == "resolved"
    assert [v["text"] for v in top.versions] == ["firing"]


async def test_upload_png_goes_into_the_thread(fake: FakeSlack, slack: SlackClient) -> None:
    posted = await slack.post("#alerts", Message("alert"))
    png = b"\x89PNG\r\n\x1a\nchart-bytes"
    await slack.upload_png(posted.channel_id, posted.ts, png, "chart.png", "p99 over the last hour")
    [upload] = fake.uploads
    assert (upload["content"], upload["thread_ts"], upload["channel_id"]) == (png, posted.ts, "C1")
    assert (upload["filename"], upload["title"]) == ("chart.png", "p99 over the last hour")


async def test_auth_test_says_who_the_token_is(slack: SlackClient) -> None:
    assert (await slack.auth_test())["user_id"] == "UBOT"


async def test_the_workspace_url_is_asked_once_and_kept(fake: FakeSlack, slack: SlackClient) -> None:
    fake.fail("auth.test", status=500)
    assert await slack.workspace_url() is None  # Slack down: mentioned without links, asked again later
    assert await slack.workspace_url() == "https://proxybot-sim.slack.com/"
    assert await slack.workspace_url() == "https://proxybot-sim.slack.com/"
    assert len(fake.calls_to("auth.test")) == 2


async def test_the_scopes_check_keeps_the_workspace_url_too(fake: FakeSlack, slack: SlackClient) -> None:
    await slack.granted_scopes()
    assert await slack.workspace_url() == "https://proxybot-sim.slack.com/"
    assert len(fake.calls_to("auth.test")) == 1


@pytest.mark.parametrize(
    ("raw", "api_host", "kept"),
    [
        ("https://acme.slack.com/", "slack.com", "https://acme.slack.com/"),
        ("https://Acme.Enterprise.slack.com", "slack.com", "https://acme.enterprise.slack.com/"),
        ("https://acme.slack-gov.com/", "slack-gov.com", "https://acme.slack-gov.com/"),
        ("http://acme.slack.com/", "slack.com", None),
        ("https://acme.slack.com.evil.example/", "slack.com", None),
        ("https://evilslack.com/", "slack.com", None),
        ("https://user@acme.slack.com/", "slack.com", None),
        ("https://acme.slack.com:8443/", "slack.com", None),
        ("https://acme.slack.com/?x=<y>", "slack.com", None),
        ("https://acme.slack.com|x/", "slack.com", None),
        ("javascript:alert(1)", "slack.com", None),
        (None, "slack.com", None),
        (42, "slack.com", None),
    ],
)
def test_only_an_https_url_on_a_slack_host_is_a_workspace_url(
    raw: object, api_host: str, kept: str | None
) -> None:
    assert workspace_url(raw, api_host) == kept


async def test_429_is_rate_limited_with_retry_after(fake: FakeSlack, slack: SlackClient) -> None:
    fake.fail("chat.postMessage", status=429, retry_after=7)
    with pytest.raises(SlackRateLimited) as caught:
        await slack.post("C1", Message("x"))
    assert caught.value.retry_after == 7.0
    # The error names the call it came from, and the SDK did not retry it: the worker owns the wait.
    assert caught.value.method == "chat.postMessage"
    assert len(fake.calls_to("chat.postMessage")) == 1


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_5xx_is_transient_and_not_retried_by_the_sdk(
    fake: FakeSlack, slack: SlackClient, status: int
) -> None:
    fake.fail("chat.update", status=status, retry_after=None)
    with pytest.raises(SlackTransient):
        await slack.update("C1", "1.0", Message("x"))
    assert len(fake.calls_to("chat.update")) == 1


async def test_slack_side_error_with_200_is_transient(fake: FakeSlack, slack: SlackClient) -> None:
    fake.fail("chat.postMessage", status=200, error="internal_error")
    with pytest.raises(SlackTransient):
        await slack.post("C1", Message("x"))


async def test_failed_upload_step_is_transient(fake: FakeSlack, slack: SlackClient) -> None:
    fake.fail("files.completeUploadExternal", status=500)
    with pytest.raises(SlackTransient):
        await slack.upload_png("C1", "1.0", b"png", "c.png", "t")


async def test_over_limit_blocks_are_rejected_for_the_message(fake: FakeSlack, slack: SlackClient) -> None:
    oversized = {"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}
    with pytest.raises(SlackRejected) as caught:
        await slack.post("C1", Message("x", (oversized,)))
    assert caught.value.error_code == "invalid_blocks"
    assert not caught.value.needs_operator


async def test_missing_message_is_rejected(slack: SlackClient) -> None:
    with pytest.raises(SlackRejected) as caught:
        await slack.update("C1", "999.000", Message("x"))
    assert caught.value.error_code == "message_not_found"


async def test_an_edit_by_channel_name_is_rejected_for_the_operator(slack: SlackClient) -> None:
    posted = await slack.post("#alerts", Message("firing"))
    with pytest.raises(SlackRejected) as caught:
        await slack.update("#alerts", posted.ts, Message("resolved"))
    assert caught.value.error_code == "channel_not_found"


async def test_bad_token_needs_the_operator_and_is_never_shown(fake: FakeSlack) -> None:
    wrong = "xoxb-not-the-right-one"
    with pytest.raises(SlackRejected) as caught:
        await client_for(fake.api_url, token=wrong).auth_test()
    assert caught.value.error_code == "invalid_auth"
    assert caught.value.needs_operator
    assert wrong not in str(caught.value)
    assert caught.value.__cause__ is None


async def test_slow_slack_times_out_as_transient(fake: FakeSlack) -> None:
    fake.latency = 2.0
    with pytest.raises(SlackTransient, match="timed out"):
        await client_for(fake.api_url, timeout=0.3).post("C1", Message("x"))


@pytest.fixture
async def hang_up_server() -> AsyncIterator[tuple[str, list[int]]]:
    """An HTTP port that accepts connections and closes them at once; counts connections."""
    connections: list[int] = []

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        await reader.read(1)
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/api/", connections
    server.close()
    await server.wait_closed()


async def test_dropped_connection_is_transient_and_tried_once(hang_up_server: tuple[str, list[int]]) -> None:
    url, connections = hang_up_server
    with pytest.raises(SlackTransient, match="connection failed"):
        await client_for(url).post("C1", Message("x"))
    # slack_sdk retries dropped connections by default; the worker owns retries, so exactly one try.
    assert len(connections) == 1


async def test_unreachable_slack_is_transient() -> None:
    with pytest.raises(SlackTransient):
        await client_for("http://127.0.0.1:9/api/", timeout=2).post("C1", Message("x"))


def test_a_client_needs_a_bot_token() -> None:
    with pytest.raises(ConfigError, match=r"slack\.bot_token"):
        SlackClient.from_settings(SlackSettings())
