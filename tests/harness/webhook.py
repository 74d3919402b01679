"""A minimal HTTP endpoint that records what Alertmanager delivers to it, for harness smoke tests."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


@dataclass(frozen=True)
class Delivery:
    """One POST received: its path, Authorization header and decoded JSON body."""

    path: str
    authorization: str | None
    body: Any


class WebhookSink:
    """A loopback HTTP server that answers 200 to every POST and keeps the deliveries in order."""

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/alertmanager"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"null")
                sink._record(Delivery(self.path, self.headers.get("Authorization"), body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                # Keep pytest's output clean; deliveries are asserted on, not logged.
                pass

        return Handler

    def _record(self, delivery: Delivery) -> None:
        with self._lock:
            self.deliveries.append(delivery)

    def received(self) -> list[Delivery]:
        with self._lock:
            return list(self.deliveries)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
