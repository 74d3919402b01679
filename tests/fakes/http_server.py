"""A tiny local HTTP(S) server for client tests: it records every request and answers through a handler.

    with LocalServer(handler) as server:           # plain HTTP on 127.0.0.1, a free port
    with LocalServer(handler, tls=True) as server: # HTTPS with a throwaway CA at `server.ca_path`
        server.url, server.requests

The handler sees each request (method, path with query, headers, body) and returns (status, answer): JSON,
or bytes sent as they are (text/plain); what it refuses (401 without the credentials it wants) is what
the real service would refuse.
"""

from __future__ import annotations

import json
import ssl
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import trustme


@dataclass(frozen=True)
class Request:
    """One request as the server received it (header names lower-cased)."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes


Handler = Callable[[Request], tuple[int, Any]]


class LocalServer:
    """Serves `handler` on 127.0.0.1 in a thread until the `with` block ends."""

    def __init__(self, handler: Handler, *, tls: bool = False) -> None:
        self.requests: list[Request] = []
        self._handler = handler
        self._dir = tempfile.TemporaryDirectory(prefix="local-server-")
        self.ca_path = Path(self._dir.name) / "ca.pem"
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._request_handler())
        self._server.daemon_threads = True
        if tls:
            self._server.socket = self._tls_context().wrap_socket(self._server.socket, server_side=True)
        port = self._server.server_address[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _tls_context(self) -> ssl.SSLContext:
        ca = trustme.CA(organization_name="proxybot test server")
        ca.cert_pem.write_to_path(str(self.ca_path))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
        return context

    def _request_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                request = Request(self.command, self.path, headers, body)
                server.requests.append(request)
                status, answer = server._handler(request)
                raw = isinstance(answer, bytes)
                data = answer if raw else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if raw else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the test asserts on `requests`."""

        return _Handler

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self._dir.cleanup()
