"""A Slack-Web-API-compatible fake server on loopback: records every call and answers like Slack.

Point `slack.api_url` at `FakeSlack.api_url`. It keeps the messages it was sent (so tests can assert on
edits and threads), enforces Block Kit limits with Slack's error codes, and can inject 429 with
`Retry-After`, 5xx and latency per method.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_HEADER_TEXT = 150
MAX_TEXT = 40_000
RESPONSE_URL_USES = 5


@dataclass
class SlackCall:
    """One request that reached the fake."""

    method: str
    params: dict[str, Any]
    token: str | None
    at: float


@dataclass
class Message:
    """A message as Slack would hold it, with its edit history."""

    channel: str
    ts: str
    text: str
    blocks: list[Any]
    thread_ts: str | None
    versions: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Fault:
    """An injected answer for the next `times` calls of one method."""

    status: int
    retry_after: int | None
    times: int
    error: str | None = None


class FakeSlack:
    """The fake server; use as a context manager (`with FakeSlack() as slack: slack.api_url`)."""

    def __init__(
        self,
        *,
        bot_token: str = "xoxb-test-token",
        latency: float = 0.0,
        on_message: Callable[[Message, str], None] | None = None,
    ) -> None:
        self.bot_token = bot_token
        self.latency = latency
        # Called (outside the lock) with each message posted or edited and "posted" / "edited": the demo
        # renders Slack in the terminal with it.
        self.on_message = on_message
        self.calls: list[SlackCall] = []
        self.messages: dict[tuple[str, str], Message] = {}
        self.uploads: list[dict[str, Any]] = []
        self.responses: list[dict[str, Any]] = []
        self._faults: dict[str, list[Fault]] = {}
        self._response_uses: dict[str, int] = {}
        self._pending_files: dict[str, dict[str, Any]] = {}
        self._ts = itertools.count(1)
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle --------------------------------------------------------------------------------

    def __enter__(self) -> FakeSlack:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self._app(), log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("fake Slack server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        assert self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/"

    def response_url(self, key: str) -> str:
        """A `response_url` as Slack puts in slash-command and action payloads."""
        return f"{self.base_url}/response/{key}"

    # -- test controls ----------------------------------------------------------------------------

    def fail(
        self,
        method: str,
        *,
        status: int = 429,
        retry_after: int | None = 1,
        times: int = 1,
        error: str | None = None,
    ) -> None:
        """Answer the next `times` calls of `method` with `status` (429 carries `Retry-After`)."""
        with self._lock:
            self._faults.setdefault(method, []).append(Fault(status, retry_after, times, error))

    def heal(self, method: str) -> None:
        """Drop every fault still queued for `method`: it answers normally again."""
        with self._lock:
            self._faults.pop(method, None)

    def calls_to(self, method: str) -> list[SlackCall]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def top_level(self, channel: str | None = None) -> list[Message]:
        """Messages that are not thread replies, oldest first."""
        with self._lock:
            found = [m for m in self.messages.values() if m.thread_ts is None]
        return [m for m in found if channel is None or m.channel == channel]

    def thread(self, channel: str, ts: str) -> list[Message]:
        with self._lock:
            return [m for m in self.messages.values() if m.channel == channel and m.thread_ts == ts]

    # -- the server -------------------------------------------------------------------------------

    def _app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/api/{method}", self._api, methods=["POST", "GET"]),
                Route("/upload/{file_id}", self._upload, methods=["POST"]),
                Route("/response/{key}", self._response, methods=["POST"]),
            ]
        )

    async def _api(self, request: Request) -> Response:
        method = request.path_params["method"]
        params = await _params(request)
        token = _bearer(request) or params.pop("token", None)
        with self._lock:
            self.calls.append(SlackCall(method, params, token, time.monotonic()))
            fault = self._take_fault(method)
        if self.latency:
            await asyncio.sleep(self.latency)
        if fault is not None:
            return _fault_response(fault)
        if token != self.bot_token:
            return _error("invalid_auth" if token else "not_authed")
        handler = _HANDLERS.get(method)
        if handler is None:
            return _error("unknown_method")
        with self._lock:
            answer = handler(self, params)
            changed = self._changed(method, params, answer)
        if changed is not None and self.on_message is not None:
            self.on_message(*changed)
        return JSONResponse(answer)

    def _changed(
        self, method: str, params: dict[str, Any], answer: dict[str, Any]
    ) -> tuple[Message, str] | None:
        if not answer.get("ok") or method not in ("chat.postMessage", "chat.update"):
            return None
        msg = self.messages[(str(answer["channel"]), str(answer["ts"]))]
        return msg, "posted" if method == "chat.postMessage" else "edited"

    async def _upload(self, request: Request) -> Response:
        file_id = request.path_params["file_id"]
        body = await request.body()
        with self._lock:
            pending = self._pending_files.get(file_id)
            if pending is None:
                return Response("unknown upload", status_code=404)
            pending["content"] = body
        return Response("OK - " + str(len(body)))

    async def _response(self, request: Request) -> Response:
        key = request.path_params["key"]
        payload = json.loads(await request.body() or b"{}")
        with self._lock:
            uses = self._response_uses.get(key, 0)
            if uses >= RESPONSE_URL_USES:
                return JSONResponse({"ok": False, "error": "used_url"}, status_code=404)
            self._response_uses[key] = uses + 1
            self.responses.append({"key": key, **payload})
        return JSONResponse({"ok": True})

    def _take_fault(self, method: str) -> Fault | None:
        queue = self._faults.get(method)
        if not queue:
            return None
        fault = queue[0]
        fault.times -= 1
        if fault.times <= 0:
            queue.pop(0)
        return fault

    def _next_ts(self) -> str:
        return f"{1_700_000_000 + next(self._ts)}.000100"

    # -- methods (called with the lock held) ------------------------------------------------------

    def _post_message(self, params: dict[str, Any]) -> dict[str, Any]:
        problem = _check_message(params)
        if problem:
            return {"ok": False, "error": problem}
        channel = str(params.get("channel", ""))
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        ts = self._next_ts()
        thread_ts = params.get("thread_ts") or None
        msg = Message(channel, ts, str(params.get("text", "")), _blocks(params), thread_ts)
        self.messages[(channel, ts)] = msg
        return {"ok": True, "channel": channel, "ts": ts, "message": {"ts": ts, "text": msg.text}}

    def _update(self, params: dict[str, Any]) -> dict[str, Any]:
        problem = _check_message(params)
        if problem:
            return {"ok": False, "error": problem}
        msg = self.messages.get((str(params.get("channel")), str(params.get("ts"))))
        if msg is None:
            return {"ok": False, "error": "message_not_found"}
        msg.versions.append({"text": msg.text, "blocks": msg.blocks})
        msg.text, msg.blocks = str(params.get("text", "")), _blocks(params)
        return {"ok": True, "channel": msg.channel, "ts": msg.ts, "text": msg.text}

    def _ephemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        problem = _check_message(params)
        if problem:
            return {"ok": False, "error": problem}
        return {"ok": True, "message_ts": self._next_ts()}

    def _upload_url(self, params: dict[str, Any]) -> dict[str, Any]:
        file_id = f"F{len(self._pending_files) + 1:08d}"
        self._pending_files[file_id] = {"filename": params.get("filename"), "length": params.get("length")}
        return {"ok": True, "upload_url": f"{self.base_url}/upload/{file_id}", "file_id": file_id}

    def _complete_upload(self, params: dict[str, Any]) -> dict[str, Any]:
        files = params.get("files")
        parsed = json.loads(files) if isinstance(files, str) else files or []
        done = []
        for f in parsed:
            pending = self._pending_files.get(f.get("id", ""))
            if pending is None or "content" not in pending:
                return {"ok": False, "error": "file_not_found"}
            upload = {**pending, **f, "channel_id": params.get("channel_id")}
            upload["thread_ts"] = params.get("thread_ts")
            self.uploads.append(upload)
            done.append({"id": f["id"], "title": f.get("title")})
        return {"ok": True, "files": done}


def _auth_test(fake: FakeSlack, params: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "user_id": "UBOT", "bot_id": "BBOT", "team_id": "T1", "user": "proxybot"}


_HANDLERS: dict[str, Any] = {
    "auth.test": _auth_test,
    "chat.postMessage": FakeSlack._post_message,
    "chat.update": FakeSlack._update,
    "chat.postEphemeral": FakeSlack._ephemeral,
    "files.getUploadURLExternal": FakeSlack._upload_url,
    "files.completeUploadExternal": FakeSlack._complete_upload,
}


async def _params(request: Request) -> dict[str, Any]:
    body = await request.body()
    params: dict[str, Any] = dict(request.query_params)
    if request.headers.get("content-type", "").startswith("application/json"):
        params.update(json.loads(body or b"{}"))
    else:
        params.update(parse_qsl(body.decode()))
    return params


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    return header[7:] if header.lower().startswith("bearer ") else None


def _blocks(params: dict[str, Any]) -> list[Any]:
    blocks = params.get("blocks") or []
    return json.loads(blocks) if isinstance(blocks, str) else list(blocks)


def _fault_response(fault: Fault) -> Response:
    headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
    if fault.status == 200:
        return JSONResponse({"ok": False, "error": fault.error or "internal_error"})
    body = {"ok": False, "error": fault.error or ("ratelimited" if fault.status == 429 else "fatal_error")}
    return JSONResponse(body, status_code=fault.status, headers=headers)


def _error(code: str) -> JSONResponse:
    return JSONResponse({"ok": False, "error": code})


def _check_message(params: dict[str, Any]) -> str | None:
    """Slack's answer to an over-limit or empty message, or None when it would be accepted."""
    blocks = _blocks(params)
    text = str(params.get("text", ""))
    if not text and not blocks:
        return "no_text"
    if len(text) > MAX_TEXT:
        return "msg_too_long"
    if len(blocks) > MAX_BLOCKS or any(_block_too_big(b) for b in blocks):
        return "invalid_blocks"
    return None


def _block_too_big(block: dict[str, Any]) -> bool:
    kind = block.get("type")
    if kind == "header":
        return len(block.get("text", {}).get("text", "")) > MAX_HEADER_TEXT
    if kind == "section":
        fields = block.get("fields") or []
        return (
            len(block.get("text", {}).get("text", "")) > MAX_SECTION_TEXT
            or len(fields) > MAX_FIELDS
            or any(len(f.get("text", "")) > MAX_FIELD_TEXT for f in fields)
        )
    return False


def iter_texts(blocks: list[Any]) -> Iterator[str]:
    """Every text string inside a list of blocks (for assertions on content)."""
    for block in blocks:
        if isinstance(block, dict):
            for key, value in block.items():
                if key == "text" and isinstance(value, dict):
                    yield str(value.get("text", ""))
                elif key == "text" and isinstance(value, str):
                    yield value
                elif isinstance(value, list):
                    yield from iter_texts(value)
                elif isinstance(value, dict):
                    yield from iter_texts([value])
