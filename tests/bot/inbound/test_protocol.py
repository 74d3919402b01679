"""serve's HTTP protocol (`bot.inbound.protocol`): a request's head bounded in size and time, through a real
uvicorn server on loopback and raw sockets, as a hostile client sends them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from bot.inbound import protocol
from bot.inbound.protocol import MAX_HEAD_BYTES, BoundedHttpToolsProtocol
from tests.waiting import eventually


async def _ok(_: object) -> PlainTextResponse:
    return PlainTextResponse("ok")


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[int]:
    app = Starlette(routes=[Route("/healthz", _ok)])
    config = uvicorn.Config(app, host="127.0.0.1", port=0, http=BoundedHttpToolsProtocol, log_level="error")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started, "uvicorn to start serving", timeout=10)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield port
    finally:
        server.should_exit = True
        await task


async def healthz(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
    answer = await reader.read()
    writer.close()
    return answer


async def test_a_head_past_its_bound_is_431_and_the_server_keeps_answering() -> None:
    async with serving() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        # One header line past the bound, never ended (httptools kept such a line whole: 200 MiB of it
        # grew serve by 360 MB).
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-huge: " + b"a" * (MAX_HEAD_BYTES + 4096))
        await writer.drain()
        refused = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        assert refused.startswith(b"HTTP/1.1 431 ")
        assert (await healthz(port)).startswith(b"HTTP/1.1 200 ")


async def test_a_head_that_never_ends_is_closed_after_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protocol, "HEAD_SECONDS", 0.3)
    async with serving() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n")  # and then nothing
        # Closed by the server (EOF), long before this wait gives up.
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
        assert (await healthz(port)).startswith(b"HTTP/1.1 200 ")


async def test_a_whole_head_within_the_bounds_is_served() -> None:
    async with serving() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        filler = b"x-pad: " + b"p" * (MAX_HEAD_BYTES // 2) + b"\r\n"
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n" + filler + b"connection: close\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert answer.endswith(b"ok")
