"""`serve`'s HTTP protocol: uvicorn's httptools protocol with the bounds it lacks on a request's head.

httptools keeps a header it has not finished parsing in memory, whatever its size, and uvicorn sets no
time for a request's head to arrive: one 200 MiB header line grew `serve` by 360 MB (its memory limit is
512Mi), and connections holding half-sent headers stayed open until the open-file limit, where `/healthz`
and `/readyz` stopped answering. Here a request's head gets `MAX_HEAD_BYTES` (431 past it) and
`HEAD_SECONDS` to arrive (closed past it), and at most `MAX_CONNECTIONS` connections are kept open (a new
one beyond is closed at once). The body's bounds are the routes' (`bot.inbound.body`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEAD_BYTES = 64 * 1024  # request line and headers; Slack's and Alertmanager's are a few KB
HEAD_SECONDS = 10.0  # from the connection (or the request's first byte) to the end of its head
MAX_CONNECTIONS = 1000  # open at once; the chart's pod keeps well within its open-file limit
TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 26\r\nconnection: close\r\n\r\nrequest head is too large\n"
)


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with a request head bounded in size and time, and connections in
    number."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes: int | None = 0  # bytes of the head so far; None once it is complete
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > MAX_CONNECTIONS:
            transport.close()
            return
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._head_bytes is not None:
            self._head_bytes += len(data)
        super().data_received(data)
        # Still no end of the head past the bound: httptools would keep all of it (a chunk is at most
        # 256 KiB, so that is what one connection can hold).
        if self._head_bytes is not None and self._head_bytes > MAX_HEAD_BYTES:
            self._refuse_head()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._head_bytes is None:  # the next request on a kept-alive connection
            self._head_bytes = 0
            self._await_head()

    def on_headers_complete(self) -> None:
        self._head_bytes = None
        self._stop_timer()
        super().on_headers_complete()

    def _await_head(self) -> None:
        self._stop_timer()
        self._head_timer = self.loop.call_later(HEAD_SECONDS, self._head_too_slow)

    def _stop_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self._head_bytes is not None and not self.transport.is_closing():
            self.transport.close()

    def _refuse_head(self) -> None:
        self._stop_timer()
        self._head_bytes = None
        if not self.transport.is_closing():
            self.transport.write(TOO_LARGE)
            self.transport.close()
