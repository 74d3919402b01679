"""The load generator against a small HTTP/1.1 server: every framing of a response, keep-alive, stop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from bench.loadgen import LoadRun, Outcome, Plan, Planned, run
from tests.waiting import eventually

# Each path answers with a different framing of the body; the status says which one was read.
RESPONSES = {
    "/length": b"HTTP/1.1 202 Accepted\r\ncontent-length: 5\r\n\r\nhello",
    "/chunked": b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
    "/empty": b"HTTP/1.1 204 No Content\r\n\r\n",
    "/close": b"HTTP/1.1 201 Created\r\nconnection: close\r\n\r\nuntil the end",
    "/garbage": b"SPDY/9 what\r\n\r\n",
}


class FakeServer:
    """Answers each request by its path; counts connections and the bodies it received."""

    def __init__(self) -> None:
        self.connections = 0
        self.bodies: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while await self.answer(reader, writer):
                pass
        except asyncio.IncompleteReadError:
            pass  # the client closed its connection
        writer.close()

    async def answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection ends after it."""
        head = await reader.readuntil(b"\r\n\r\n")
        path = head.split(b" ")[1].decode()
        lengths = [
            int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")
        ]
        self.bodies.append(await reader.readexactly(sum(lengths)))
        writer.write(RESPONSES.get(path, b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"))
        await writer.drain()
        return path != "/close"


@pytest.fixture
async def server() -> AsyncIterator[tuple[FakeServer, str]]:
    fake = FakeServer()
    listener = await asyncio.start_server(fake.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    async with listener:
        yield fake, f"http://127.0.0.1:{port}"


def statuses(outcomes: list[Outcome]) -> dict[float, int]:
    return {o.offset: o.status for o in outcomes}


async def test_every_framing_of_a_response_is_read_whole_on_kept_alive_connections(
    server: tuple[FakeServer, str],
) -> None:
    fake, url = server
    paths = ["/length", "/chunked", "/empty", "/length", "/close", "/length"]
    requests = [
        Planned(i * 0.02, "POST", p, {"X-Kind": "test"}, f"body {i}".encode()) for i, p in enumerate(paths)
    ]
    outcomes = await asyncio.to_thread(run, Plan(url, requests, {"main": 1}, timeout=5.0))
    assert statuses(outcomes) == {0.0: 202, 0.02: 200, 0.04: 204, 0.06: 202, 0.08: 201, 0.1: 202}
    assert all(o.error == "" and o.seconds > 0 for o in outcomes)
    assert fake.bodies == [f"body {i}".encode() for i in range(len(paths))]
    assert fake.connections == 2  # one kept alive up to the server's close, then one more


async def test_an_unknown_framing_fails_the_request_not_the_run(server: tuple[FakeServer, str]) -> None:
    _, url = server
    requests = [Planned(0.0, "GET", "/garbage"), Planned(0.0, "GET", "/length", lane="other")]
    outcomes = await asyncio.to_thread(run, Plan(url, requests, {"main": 1, "other": 1}, timeout=5.0))
    by_lane = {o.lane: o for o in outcomes}
    assert by_lane["main"].status == 0
    assert "HttpError" in by_lane["main"].error
    assert by_lane["other"].status == 202


async def test_stop_ends_the_schedule_and_keeps_what_was_sent(server: tuple[FakeServer, str]) -> None:
    fake, url = server
    requests = [Planned(0.0, "GET", "/length"), Planned(60.0, "GET", "/length")]
    with LoadRun(Plan(url, requests, {"main": 1}, timeout=5.0)) as load:
        # The first request reached the server: the second is 60 s away.
        await eventually(lambda: fake.bodies, "the first request at the server", interval=0.01)
        load.stop()
        outcomes = await asyncio.to_thread(load.outcomes)
    assert statuses(outcomes) == {0.0: 202}
