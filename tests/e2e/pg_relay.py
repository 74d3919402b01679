"""A TCP relay between `proxybot serve` replicas and PostgreSQL that can hold one statement on the wire.

`PgRelay(url)` listens on a loopback port and forwards every connection to the server of `url`; point the
replicas at `relay.url`. `relay.hold(matches)` makes the next statement whose SQL `matches` wait in the
relay (with everything its connection sends after it) until `relay.release()`: the client has sent it, the
server has not seen it, as when a process is paused, or its network stalls, between a check of its own and
the database's. Statements are recognised by reading the frontend protocol: a Parse message carries a
statement's SQL, and every execution names its statement in a Bind with its parameters (psycopg's prepared
statements included), where the hold falls; the server's side is copied as it comes.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO
from urllib.parse import urlsplit, urlunsplit

LOOPBACK = "127.0.0.1"
# The untyped requests a client may send before its StartupMessage (each answered with one byte).
SSL_REQUEST, GSSENC_REQUEST = 80877103, 80877104
CHUNK = 65536


@dataclass(frozen=True, slots=True)
class Execution:
    """One statement about to run: its SQL and its parameters as sent (None for NULL)."""

    sql: str
    params: tuple[bytes | None, ...]


class PgRelay:
    """Forwards connections to one PostgreSQL server; holds the next statement `hold` names."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._upstream = (parts.hostname or LOOPBACK, parts.port or 5432)
        self._listener = socket.create_server((LOOPBACK, 0))
        port = self._listener.getsockname()[1]
        self.url = urlunsplit(parts._replace(netloc=parts.netloc.rsplit(":", 1)[0] + f":{port}"))
        self._lock = threading.Lock()
        self._matches: Callable[[Execution], bool] | None = None
        self._released = threading.Event()
        self._sockets: list[socket.socket] = []
        self._closed = False
        self.held: str | None = None  # the SQL of the statement being held

    def __enter__(self) -> PgRelay:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def hold(self, matches: Callable[[Execution], bool]) -> None:
        """Hold the next execution that `matches` (once) until `release()`."""
        with self._lock:
            self._released.clear()
            self.held = None
            self._matches = matches

    def release(self) -> None:
        """Let the held statement (and what followed it on its connection) go on to the server."""
        with self._lock:
            self._matches = None
        self._released.set()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets, self._sockets = self._sockets, []
        self.release()
        for sock in [self._listener, *sockets]:
            sock.close()

    # -- the connections ------------------------------------------------------------------------------

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(self._upstream)
            with self._lock:
                if self._closed:
                    client.close()
                    upstream.close()
                    return
                self._sockets += [client, upstream]
            threading.Thread(target=self._copy, args=(upstream, client), daemon=True).start()
            threading.Thread(target=self._frontend, args=(client, upstream), daemon=True).start()

    @staticmethod
    def _copy(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(CHUNK):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            sink.close()

    def _frontend(self, client: socket.socket, upstream: socket.socket) -> None:
        """Copy the client's messages to the server one by one, holding the one `hold` names."""
        reader = client.makefile("rb")
        try:
            self._startup(reader, upstream)
            statements: dict[bytes, str] = {}
            while len(head := reader.read(5)) == 5:
                body = reader.read(struct.unpack("!i", head[1:])[0] - 4)
                if self._holds(head[:1], body, statements):
                    self._released.wait()
                upstream.sendall(head + body)
        except (OSError, ValueError, struct.error):
            pass
        finally:
            upstream.close()

    @staticmethod
    def _startup(reader: BinaryIO, upstream: socket.socket) -> None:
        """The untyped messages: SSL or GSS encryption asked (the server says no), then the startup."""
        while True:
            head = reader.read(8)
            length, code = struct.unpack("!ii", head)
            upstream.sendall(head + reader.read(length - 8))
            if code not in (SSL_REQUEST, GSSENC_REQUEST):
                return

    def _holds(self, kind: bytes, body: bytes, statements: dict[bytes, str]) -> bool:
        """Whether this message is the execution to hold (Parse: name, SQL; Bind: portal, statement)."""
        if kind == b"P":
            name, sql = body.split(b"\0", 2)[:2]
            statements[name] = sql.decode(errors="replace")
            return False
        if kind != b"B":
            return False
        _, name, rest = body.split(b"\0", 2)
        execution = Execution(statements.get(name, ""), bind_params(rest))
        with self._lock:
            if self._matches is None or not self._matches(execution):
                return False
            self._matches = None
            self.held = execution.sql
        return True


def bind_params(rest: bytes) -> tuple[bytes | None, ...]:
    """A Bind message's parameter values, after its portal and statement names: the format codes, then
    each value's length (-1: NULL) and bytes."""
    formats = struct.unpack_from("!h", rest)[0]
    at = 2 + 2 * formats
    count = struct.unpack_from("!h", rest, at)[0]
    at += 2
    values: list[bytes | None] = []
    for _ in range(count):
        length = struct.unpack_from("!i", rest, at)[0]
        at += 4
        values.append(None if length < 0 else rest[at : at + length])
        at += max(length, 0)
    return tuple(values)
