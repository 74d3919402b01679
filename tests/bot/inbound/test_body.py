"""The bounded body read both inbound endpoints share: refused by Content-Length or by counting."""

from __future__ import annotations

import asyncio
import time

import pytest
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.types import Message

from bot.inbound import body as body_module
from bot.inbound.body import BodyTimeout, is_length, read_within
from bot.inbound.slack import events_route
from bot.inbound.webhook import alertmanager_route
from tests.bot.inbound.test_webhook import RecordingSink


class Chunks:
    """An ASGI `receive` that streams body chunks and counts how many were pulled."""

    def __init__(self, *chunks: bytes, disconnect: bool = False) -> None:
        self.chunks = list(chunks)
        self.disconnect = disconnect
        self.pulled = 0

    async def __call__(self) -> Message:
        self.pulled += 1
        if not self.chunks:
            return {"type": "http.disconnect"}
        chunk = self.chunks.pop(0)
        more = bool(self.chunks) or self.disconnect
        return {"type": "http.request", "body": chunk, "more_body": more}


def request(receive: Chunks, content_length: str | None = None) -> Request:
    headers = [] if content_length is None else [(b"content-length", content_length.encode("latin-1"))]
    return Request({"type": "http", "method": "POST", "headers": headers}, receive)


async def test_a_body_within_the_limit_is_read_whole() -> None:
    receive = Chunks(b"ab", b"cd", b"e")
    assert await read_within(request(receive), 5) == b"abcde"


async def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    receive = Chunks(b"x" * 10)
    assert await read_within(request(receive, "11"), 10) is None
    assert receive.pulled == 0


async def test_a_stream_over_the_limit_stops_at_the_chunk_that_crosses_it() -> None:
    receive = Chunks(*[b"x" * 4] * 10)
    assert await read_within(request(receive), 10) is None
    assert receive.pulled == 3  # 4 + 4 fit in 10 bytes; the third chunk crosses, the rest stay unread


async def test_a_declared_length_that_lies_low_is_still_counted() -> None:
    receive = Chunks(b"x" * 8, b"x" * 8)
    assert await read_within(request(receive, "3"), 10) is None


async def test_a_disconnect_mid_body_propagates() -> None:
    with pytest.raises(ClientDisconnect):
        await read_within(request(Chunks(b"ab", disconnect=True)), 10)


@pytest.mark.parametrize(("value", "expected"), [("12", True), (" 7 ", True), ("0", True)])
def test_plain_decimal_numbers_are_lengths(value: str, expected: bool) -> None:
    assert is_length(value) is expected


@pytest.mark.parametrize("value", ["", "abc", "-1", "1e3", "\u00b2", "+5"])
def test_anything_else_is_not_a_length(value: str) -> None:
    assert not is_length(value)


class SlowChunks(Chunks):
    """A client that sends one byte, then stalls (a byte a second would do the same, only slower)."""

    async def __call__(self) -> Message:
        if self.pulled >= 1:
            await asyncio.sleep(3600)  # the fake client's stall: it is cut off long before
        return await super().__call__()


async def test_a_body_that_stalls_is_cut_off_at_the_read_timeout() -> None:
    with pytest.raises(BodyTimeout, match=r"did not arrive within 0.1 s \(1 bytes came\)"):
        await read_within(request(SlowChunks(b"{", b"}"), "2"), limit=100, timeout=0.1)


@pytest.mark.parametrize("endpoint", ["webhook", "slack"])
async def test_both_endpoints_answer_a_stalled_body_with_408(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(body_module, "BODY_READ_TIMEOUT", 0.1)
    if endpoint == "webhook":
        route = alertmanager_route(RecordingSink(), lambda: None)
        path, headers = "/alertmanager", [(b"content-type", b"application/json")]
    else:
        bolt = AsyncApp(signing_secret="unused", client=AsyncWebClient(token="xoxb-unused"))
        route = events_route(bolt, "unused")
        # A timestamp within the window: the body is read (and then stalls) before its signature is known.
        stamp = str(int(time.time())).encode()
        path, headers = (
            "/slack/events",
            [
                (b"content-type", b"application/x-www-form-urlencoded"),
                (b"x-slack-request-timestamp", stamp),
                (b"x-slack-signature", b"v0=00"),
            ],
        )
    app = Starlette(routes=[route])
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [*headers, (b"content-length", b"50")],
    }
    await app(scope, SlowChunks(b"{", b"}"), send)
    assert sent[0]["status"] == 408
