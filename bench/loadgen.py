"""A load generator in its own process: a schedule of HTTP requests over a few keep-alive connections.

A benchmark that generates its load in the process that also hosts the fake Slack and the simulator
measures its own queueing as much as the server's. Here the parent prepares every request (bodies,
headers, signatures) and `run` hands the plan to `python -m bench.loadgen`, which only writes requests
and reads responses with a minimal HTTP/1.1 client on raw asyncio streams, then prints one JSON result
per request. Each lane (a kind of request) has its own connections, so one kind never queues behind
another in the client. Every socket operation has a timeout and the child stops by a hard deadline.

Protocol: the plan is one JSON line on the child's stdin; a later line `stop` ends the scheduling early
(requests already sent are still awaited). On its stdout, a line `go` when its connections are open and the
schedule's clock starts, then the results as one JSON line.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
STOP = "stop"
GO = "go"
# Beyond the plan's last offset and one request timeout: the child is gone by then whatever happens.
DEADLINE_MARGIN = 5.0


@dataclass(frozen=True)
class Planned:
    """One request to send `offset` seconds after the start, on the connections of its `lane`."""

    offset: float
    method: str
    path: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    lane: str = "main"


@dataclass(frozen=True)
class Outcome:
    """What became of one request: status 0 when it was never answered (see `error`)."""

    offset: float
    lane: str
    status: int
    seconds: float  # from the first byte written to the last byte of the response read
    lag: float  # how late it was written: waiting for a free connection of its lane, or a busy generator
    error: str = ""


@dataclass(frozen=True)
class Plan:
    """Where to send, what, over how many connections per lane, each request bounded by `timeout`."""

    url: str
    requests: Sequence[Planned]
    connections: Mapping[str, int]
    timeout: float = 30.0

    def deadline(self) -> float:
        last = max((r.offset for r in self.requests), default=0.0)
        return last + self.timeout + DEADLINE_MARGIN


# -- the plan on the wire -------------------------------------------------------------------------------


def plan_json(plan: Plan) -> str:
    requests = [
        {**asdict(r), "headers": dict(r.headers), "body": base64.b64encode(r.body).decode()}
        for r in plan.requests
    ]
    doc = {"url": plan.url, "connections": dict(plan.connections), "timeout": plan.timeout}
    return json.dumps({**doc, "requests": requests})


def parse_plan(text: str) -> Plan:
    doc = json.loads(text)
    requests = [
        Planned(r["offset"], r["method"], r["path"], r["headers"], base64.b64decode(r["body"]), r["lane"])
        for r in doc["requests"]
    ]
    return Plan(doc["url"], requests, doc["connections"], doc["timeout"])


def parse_outcomes(text: str) -> list[Outcome]:
    return [Outcome(**o) for o in json.loads(text)]


# -- the parent's side ------------------------------------------------------------------------------------


class LoadRun:
    """A running generator process; a context manager that always ends it."""

    def __init__(self, plan: Plan) -> None:
        self._deadline = plan.deadline()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "bench.loadgen"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Unbuffered: reading the `go` line must not swallow what the reader thread reads after it.
            bufsize=0,
        )
        self._write(plan_json(plan) + "\n")
        self._started: float | None = None
        self._output: list[bytes] = []
        # Drains stdout as the results come, so a large result never blocks the child on a full pipe.
        self._reader = threading.Thread(target=self._read, daemon=True)

    def started(self) -> float:
        """`time.monotonic()` when the schedule's clock started in the child (waits for it)."""
        if self._started is None:
            line = _pipe(self._process.stdout).readline().decode().strip()
            if line != GO:
                raise RuntimeError(f"the load generator did not start (said {line[:200]!r})")
            self._started = time.monotonic()
            self._reader.start()
        return self._started

    def done(self) -> bool:
        """Every planned request was sent and answered (or failed), and the results are in."""
        return self._started is not None and not self._reader.is_alive()

    def stop(self) -> None:
        """Send nothing more that was planned; what is already sent is still awaited."""
        if self._process.poll() is None:
            self._write(STOP + "\n")

    def outcomes(self) -> list[Outcome]:
        """Wait for the results (bounded by the plan's deadline)."""
        self.started()
        self._reader.join(timeout=self._deadline + DEADLINE_MARGIN)
        if self._reader.is_alive() or self._process.wait(timeout=DEADLINE_MARGIN) != 0:
            raise RuntimeError(f"the load generator failed (exit status {self._process.poll()})")
        return parse_outcomes(b"".join(self._output).decode())

    def _read(self) -> None:
        self._output.append(_pipe(self._process.stdout).read())

    def _write(self, line: str) -> None:
        data = memoryview(line.encode())
        stdin = _pipe(self._process.stdin)
        try:
            while data:
                data = data[stdin.write(data) or 0 :]
        except BrokenPipeError:
            pass  # the generator has ended already: nothing left to tell it

    def __enter__(self) -> LoadRun:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        if self._started is not None:
            self._reader.join(timeout=DEADLINE_MARGIN)  # the pipe ends with the process: the reader with it
        for pipe in (self._process.stdin, self._process.stdout):
            if pipe is not None:
                pipe.close()


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    if stream is None:
        raise RuntimeError("the load generator's stdin is not a pipe")
    return stream


def run(plan: Plan) -> list[Outcome]:
    """Send the whole plan from a separate process; blocks until every request is answered or timed out."""
    with LoadRun(plan) as load:
        return load.outcomes()


# -- a minimal HTTP/1.1 client ----------------------------------------------------------------------------


class HttpError(Exception):
    """The server's answer was not HTTP/1.1 as this client reads it."""


@dataclass
class Connection:
    """One keep-alive connection; `open` is False once it must not be reused."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    open: bool = True

    @classmethod
    async def connect(cls, host: str, port: int, timeout: float) -> Connection:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    def close(self) -> None:
        self.open = False
        self.writer.close()

    async def exchange(self, request: bytes, head_only: bool) -> int:
        """Write one request and read its whole response; returns the status."""
        self.writer.write(request)
        await self.writer.drain()
        status, headers = await self._head()
        await self._body(status, headers, head_only)
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status

    async def _head(self) -> tuple[int, dict[str, str]]:
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        status_line, *lines = head[:-4].split("\r\n")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise HttpError(f"bad status line {status_line!r}")
        headers: dict[str, str] = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(parts[1]), headers

    async def _body(self, status: int, headers: dict[str, str], head_only: bool) -> None:
        if head_only or status in (204, 304) or 100 <= status < 200:
            return
        if "chunked" in headers.get("transfer-encoding", "").lower():
            await self._chunks()
        elif "content-length" in headers:
            await self.reader.readexactly(int(headers["content-length"]))
        else:
            # No length: the body runs to the end of the connection.
            await self.reader.read()
            self.close()

    async def _chunks(self) -> None:
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                break
            await self.reader.readexactly(size + 2)
        while await self.reader.readuntil(b"\r\n") != b"\r\n":  # trailers, then the blank line
            pass


def request_bytes(planned: Planned, authority: str) -> bytes:
    lines = [f"{planned.method} {planned.path} HTTP/1.1", f"Host: {authority}"]
    lines += [f"{name}: {value}" for name, value in planned.headers.items()]
    if planned.body or planned.method not in ("GET", "HEAD"):
        lines.append(f"Content-Length: {len(planned.body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + planned.body


# -- the child's side -------------------------------------------------------------------------------------


class Lane:
    """A fixed number of connection slots; a slot holding None is reconnected when taken."""

    def __init__(self, host: str, port: int, size: int, timeout: float) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.slots: asyncio.Queue[Connection | None] = asyncio.Queue()
        self.size = size

    async def open(self) -> None:
        """Connect every slot before the start, so no planned request pays for a connect it would not."""
        for conn in await asyncio.gather(*(self._connect() for _ in range(self.size))):
            self.slots.put_nowait(conn)

    async def _connect(self) -> Connection:
        return await Connection.connect(self.host, self.port, self.timeout)

    async def send(self, planned: Planned, request: bytes, start: float) -> Outcome:
        conn = await self.slots.get()
        sent = time.perf_counter()
        lag = sent - start - planned.offset
        try:
            async with asyncio.timeout(self.timeout):
                conn = conn if conn is not None and conn.open else await self._connect()
                status = await conn.exchange(request, planned.method == "HEAD")
        except (OSError, EOFError, TimeoutError, ValueError, HttpError, asyncio.IncompleteReadError) as err:
            if conn is not None:
                conn.close()
            self.slots.put_nowait(None)
            return Outcome(planned.offset, planned.lane, 0, time.perf_counter() - sent, lag, _describe(err))
        self.slots.put_nowait(conn if conn.open else None)
        return Outcome(planned.offset, planned.lane, status, time.perf_counter() - sent, lag)

    def close(self) -> None:
        while not self.slots.empty():
            conn = self.slots.get_nowait()
            if conn is not None:
                conn.close()


def _describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


async def send_plan(plan: Plan, stopped: asyncio.Event) -> list[Outcome]:
    """Send every planned request at its offset (until `stopped`), and await every answer."""
    parts = urlsplit(plan.url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    lanes = {name: Lane(host, port, size, plan.timeout) for name, size in plan.connections.items()}
    await asyncio.gather(*(lane.open() for lane in lanes.values()))
    prepared = [(r, request_bytes(r, parts.netloc)) for r in sorted(plan.requests, key=lambda r: r.offset)]
    tasks: list[asyncio.Task[Outcome]] = []
    print(GO, flush=True)
    start = time.perf_counter()
    for planned, request in prepared:
        if await _stopped_before(stopped, start + planned.offset):
            break
        tasks.append(asyncio.create_task(lanes[planned.lane].send(planned, request, start)))
    outcomes = list(await asyncio.gather(*tasks))
    for lane in lanes.values():
        lane.close()
    return outcomes


async def _stopped_before(stopped: asyncio.Event, at: float) -> bool:
    wait = at - time.perf_counter()
    if wait <= 0:
        return stopped.is_set()
    try:
        async with asyncio.timeout(wait):
            await stopped.wait()
    except TimeoutError:
        return False
    return True


async def _stdin() -> asyncio.StreamReader:
    # Plans run to megabytes (every body is in them): no line limit worth having.
    reader = asyncio.StreamReader(limit=2**31)
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    return reader


async def _watch_for_stop(stdin: asyncio.StreamReader, stopped: asyncio.Event) -> None:
    """Set `stopped` on a `stop` line; stdin closing (the parent gone) stops nothing: the deadline does."""
    while line := await stdin.readline():
        if line.strip().decode() == STOP:
            stopped.set()
            return


async def _child() -> list[Outcome]:
    stdin = await _stdin()
    async with asyncio.timeout(DEADLINE_MARGIN):
        plan = parse_plan((await stdin.readline()).decode())
    stopped = asyncio.Event()
    watcher = asyncio.create_task(_watch_for_stop(stdin, stopped))
    try:
        async with asyncio.timeout(plan.deadline()):
            return await send_plan(plan, stopped)
    finally:
        watcher.cancel()


def main() -> int:
    outcomes = asyncio.run(_child())
    json.dump([asdict(o) for o in outcomes], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
