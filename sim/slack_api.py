"""A Slack-Web-API-compatible fake server on loopback: records every call and answers as strictly as Slack.

Point `slack.api_url` at `FakeSlack.api_url`. The workspace behind it (`sim.slack_workspace`) holds the
channels the bot may use, the messages it was sent (so tests can assert on edits and threads) and refuses
what Slack refuses: names where Slack wants channel IDs, channels the bot is not in, content over Block Kit's
limits, methods beyond the app's scopes. `response_url`s answer five times within 30 minutes, then
`used_url` / `expired_url` with HTTP 404, as Slack's do. On demand it paces `chat.postMessage` per channel as
Slack does (429 with `Retry-After`), and injects 429, 5xx and latency per method. Files follow
files_upload_v2's steps as strictly as Slack (`sim.slack_files`); the test controls are `sim.slack_faults`.
"""

from __future__ import annotations

import asyncio
import json
import math
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from sim.slack_answers import Answer, error_answer
from sim.slack_faults import Fault, Faults, PostingLimit, ResponseUrl, SlackCall
from sim.slack_views import Views
from sim.slack_workspace import MANIFEST_SCOPES, Message, Workspace, auth_test, content_refusal

RESPONSE_URL_USES = 5
RESPONSE_URL_LIFETIME = 30 * 60.0
# How the bytes of files_upload_v2's second step (a POST to the upload URL, not a Web API method) are
# recorded among the calls.
UPLOAD_CALL = "files.upload_url_post"

__all__ = ["FakeSlack", "Message", "SlackCall", "iter_texts"]


class FakeSlack:
    """The fake server; use as a context manager (`with FakeSlack(channels=["#ops"]) as slack: ...`).

    `channels` are the channels the bot is a member of: `#name` (an ID is made up for it) or an ID, or
    a mapping of IDs to `#name`s.
    """

    def __init__(
        self,
        *,
        bot_token: str = "xoxb-test-token",
        channels: Iterable[str] | Mapping[str, str] = (),
        scopes: Iterable[str] = MANIFEST_SCOPES,
        latency: float = 0.0,
        on_message: Callable[[Message, str], None] | None = None,
        on_upload: Callable[[dict[str, Any]], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bot_token = bot_token
        self.latency = latency
        # Called (outside the lock) with each message posted or edited and "posted" / "edited": the demo
        # renders Slack in the terminal with it.
        self.on_message = on_message
        # Called (outside the lock) with each file shared by files.completeUploadExternal.
        self.on_upload = on_upload
        self.clock = clock
        self.calls: list[SlackCall] = []
        self.responses: list[dict[str, Any]] = []
        # response_url uses Slack refused: (key, error).
        self.refused_responses: list[tuple[str, str]] = []
        self.workspace = Workspace(lambda: self.base_url, scopes)
        named = channels if isinstance(channels, Mapping) else dict.fromkeys(channels)
        for ref, name in named.items():
            self.workspace.add_channel(ref, name=name)
        # More routes served beside the Web API, added before the server starts (the demo's page).
        self.extra_routes: list[BaseRoute] = []
        self._faults = Faults(lambda: self.clock())  # read at each call: a test may swap `clock`
        # Modals: the trigger ids given with interactions, and views.open (sim/slack_views.py).
        self.views = Views(lambda: self.clock())
        self._response_urls: dict[str, ResponseUrl] = {}
        self._posting_limit: PostingLimit | None = None
        self._lost: dict[str, list[float]] = {}
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle --------------------------------------------------------------------------------

    def __enter__(self) -> FakeSlack:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        # Answers held back (`lose_answers`) do not keep the server from stopping.
        config = uvicorn.Config(self._app(), log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
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
        """A `response_url` as Slack puts in slash-command and action payloads (valid from now)."""
        with self._lock:
            self._response_urls.setdefault(key, ResponseUrl(self.clock()))
        return f"{self.base_url}/response/{key}"

    # -- test controls ----------------------------------------------------------------------------

    def add_channel(self, ref: str, *, name: str | None = None, member: bool = True) -> str:
        """Another channel (`#name`, or an ID with an optional `name`), the bot in it or not; its ID."""
        with self._lock:
            return self.workspace.add_channel(ref, name=name, member=member)

    def channel_id(self, ref: str) -> str:
        """The ID of a channel named by ID or `#name` (KeyError for one the workspace does not have)."""
        with self._lock:
            found = self.workspace.find(ref)
        if found is None:
            raise KeyError(ref)
        return found.id

    def seed_message(self, channel: str, text: str, *, ts: str | None = None) -> Message:
        """A message of the bot's already in `channel` (by ID or `#name`), as if posted before the test."""
        with self._lock:
            found = self.workspace.find(channel)
            if found is None:
                raise KeyError(channel)
            return self.workspace.add_message(found.id, text, ts=ts)

    def limit_posts(self, per_second: float = 1.0, burst: float = 3.0) -> None:
        """Answer chat.postMessage beyond Slack's pace in a channel with 429 and `Retry-After`."""
        with self._lock:
            self._posting_limit = PostingLimit(per_second, burst, {})

    def fail(
        self,
        method: str,
        *,
        status: int = 429,
        retry_after: int | None = 1,
        times: int = 1,
        error: str | None = None,
        channel: str | None = None,
        messages: tuple[str, ...] = (),
    ) -> None:
        """Answer the next `times` calls of `method` (naming `channel`, by ID or `#name`, when given) with
        `status` (429 carries `Retry-After`; 200 is `ok: false` with `error` and Slack's `messages`)."""
        with self._lock:
            where = None if channel is None else self._channel_ref(channel)
            self._faults.add(method, Fault(status, retry_after, times, error, where, messages=messages))

    def rate_limit(self, method: str, *, seconds: float, retry_after: int) -> None:
        """Answer every call of `method` for the next `seconds` with 429 and `Retry-After: retry_after`,
        as Slack does while an app is over a method's limit."""
        with self._lock:
            until = self.clock() + seconds
            self._faults.add(method, Fault(429, retry_after, 0, until=until))

    def lose_answers(self, method: str, *, times: int = 1, hold: float = 30.0) -> None:
        """Do the next `times` calls of `method` (a post is made) but hold the answer back for `hold` s,
        as when the answer is lost on the way: the client times out, or its process dies meanwhile."""
        with self._lock:
            self._lost.setdefault(method, []).extend([hold] * times)

    def heal(self, method: str) -> None:
        """Drop every fault still queued for `method`: it answers normally again."""
        with self._lock:
            self._faults.heal(method)

    def _channel_ref(self, ref: str) -> str:
        found = self.workspace.find(ref)
        return ref if found is None else found.id

    @property
    def messages(self) -> dict[tuple[str, str], Message]:
        return self.workspace.messages

    @property
    def uploads(self) -> list[dict[str, Any]]:
        """Every file shared, oldest first; one deleted since carries `deleted_at`."""
        return self.workspace.uploads

    def shown_uploads(self) -> list[dict[str, Any]]:
        """The files shared and not deleted."""
        with self._lock:
            return self.workspace.files.shown()

    def calls_to(self, method: str) -> list[SlackCall]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def top_level(self, channel: str | None = None) -> list[Message]:
        """Messages that are not thread replies, oldest first; `channel` by ID or `#name`."""
        wanted = None if channel is None else self._known(channel)
        with self._lock:
            found = [m for m in self.messages.values() if m.thread_ts is None]
        return [m for m in found if wanted is None or m.channel == wanted]

    def thread(self, channel: str, ts: str) -> list[Message]:
        """The replies in the thread of the message at `ts`; `channel` by ID or `#name`."""
        wanted = self._known(channel)
        with self._lock:
            return [m for m in self.messages.values() if m.channel == wanted and m.thread_ts == ts]

    def _known(self, ref: str) -> str:
        with self._lock:
            found = self.workspace.find(ref)
        return ref if found is None else found.id

    # -- the server -------------------------------------------------------------------------------

    def _app(self) -> Starlette:
        # Served on loopback only, and only under a loopback name: a page on another site whose name
        # resolves to 127.0.0.1 (DNS rebinding) is refused before its request reaches a route; its Origin
        # alone would match its Host.
        loopback = Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost", "[::1]"])
        return Starlette(
            routes=[
                Route("/api/{method}", self._api, methods=["POST", "GET"]),
                Route("/upload/{file_id}", self._upload, methods=["POST"]),
                Route("/response/{key}", self._response, methods=["POST"]),
                *self.extra_routes,
            ],
            middleware=[loopback],
        )

    async def _api(self, request: Request) -> Response:
        method = request.path_params["method"]
        params = await _params(request)
        token = _bearer(request) or params.pop("token", None)
        call = SlackCall(method, params, token, time.monotonic())
        with self._lock:
            self.calls.append(call)
            fault = self._faults.take(method, self._channel_ref(str(params.get("channel") or "")))
        response = await self._answer(method, params, token, fault)
        call.status, call.error = response.status_code, _error_of(response)
        return response

    async def _answer(
        self, method: str, params: dict[str, Any], token: str | None, fault: Fault | None
    ) -> Response:
        if self.latency:
            await asyncio.sleep(self.latency)
        if fault is not None:
            return fault.response()
        if token != self.bot_token:
            return JSONResponse(error_answer("invalid_auth" if token else "not_authed"))
        handler = _HANDLERS.get(method) or self.views.handler(method)
        if handler is None:
            return JSONResponse(error_answer("unknown_method"))
        with self._lock:
            answer = self.workspace.missing_scope(method)
            wait = self._posting_wait(method, params) if answer is None else 0.0
            if answer is None and wait == 0.0:
                answer = handler(self.workspace, params)
            changed = None if answer is None else self._changed(method, answer)
            shared = self._shared(method, answer)
            lost = self._lost.get(method)
            hold = lost.pop(0) if lost and answer is not None and answer.get("ok") else None
        if hold is not None:
            if changed is not None and self.on_message is not None:
                self.on_message(*changed)
            await asyncio.sleep(hold)
            return Response(status_code=504)
        if answer is None:
            headers = {"Retry-After": str(max(1, math.ceil(wait)))}
            return JSONResponse(error_answer("ratelimited"), status_code=429, headers=headers)
        if changed is not None and self.on_message is not None:
            self.on_message(*changed)
        if self.on_upload is not None:
            for upload in shared:
                self.on_upload(upload)
        # Slack names the token's scopes on every answer to an authenticated call.
        return JSONResponse(answer, headers={"x-oauth-scopes": ",".join(sorted(self.workspace.scopes))})

    def _posting_wait(self, method: str, params: dict[str, Any]) -> float:
        if self._posting_limit is None or method != "chat.postMessage":
            return 0.0
        channel = self.workspace.find(str(params.get("channel") or ""))
        return 0.0 if channel is None else self._posting_limit.take(channel.id, self.clock())

    def _changed(self, method: str, answer: Answer) -> tuple[Message, str] | None:
        if not answer.get("ok") or method not in ("chat.postMessage", "chat.update"):
            return None
        msg = self.messages[(str(answer["channel"]), str(answer["ts"]))]
        return msg, "posted" if method == "chat.postMessage" else "edited"

    def _shared(self, method: str, answer: Answer | None) -> list[dict[str, Any]]:
        if method != "files.completeUploadExternal" or answer is None or not answer.get("ok"):
            return []
        ids = {f["id"] for f in answer.get("files", [])}
        return [u for u in self.uploads if u["id"] in ids]

    async def _upload(self, request: Request) -> Response:
        """files_upload_v2's second step: the bytes, POSTed to the URL getUploadURLExternal gave."""
        file_id = request.path_params["file_id"]
        body = await request.body()
        with self._lock:
            sent = {"file_id": file_id, "length": len(body)}
            self.calls.append(SlackCall(UPLOAD_CALL, sent, None, time.monotonic()))
            status, text = self.workspace.files.receive(file_id, body)
        return Response(text, status_code=status)

    async def _response(self, request: Request) -> Response:
        key = request.path_params["key"]
        try:
            payload = json.loads(await request.body() or b"{}")
        except ValueError:
            return JSONResponse(error_answer("invalid_payload"), status_code=400)
        with self._lock:
            error, status = self._use_response_url(key, payload)
            if error is None:
                self.responses.append({"key": key, **payload})
            else:
                self.refused_responses.append((key, error))
        if error is not None:
            return JSONResponse(error_answer(error), status_code=status)
        return JSONResponse({"ok": True})

    def _use_response_url(self, key: str, payload: Any) -> tuple[str | None, int]:
        issued = self._response_urls.get(key)
        if issued is None:
            return "invalid_url", 404
        if self.clock() - issued.issued_at > RESPONSE_URL_LIFETIME:
            return "expired_url", 404
        if issued.uses >= RESPONSE_URL_USES:
            return "used_url", 404
        refusal = content_refusal(payload) if isinstance(payload, dict) else error_answer("invalid_payload")
        if refusal is not None:
            return str(refusal["error"]), 400
        issued.uses += 1
        return None, 200


_HANDLERS: dict[str, Callable[[Workspace, dict[str, Any]], Answer]] = {
    "auth.test": lambda _, params: auth_test(params),
    "chat.postMessage": Workspace.post_message,
    "chat.update": Workspace.update,
    "chat.delete": Workspace.delete,
    "chat.getPermalink": Workspace.permalink,
    "chat.postEphemeral": Workspace.ephemeral,
    "files.getUploadURLExternal": Workspace.upload_url,
    "files.completeUploadExternal": Workspace.complete_upload,
    "files.delete": Workspace.delete_file,
    "conversations.history": Workspace.history,
    "conversations.replies": Workspace.replies,
    "conversations.info": Workspace.info,
}


async def _params(request: Request) -> dict[str, Any]:
    body = await request.body()
    params: dict[str, Any] = dict(request.query_params)
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            decoded = json.loads(body or b"{}")
        except ValueError:
            decoded = None
        params.update(decoded if isinstance(decoded, dict) else {})
    else:
        params.update(parse_qsl(body.decode(errors="replace")))
    return params


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    return header[7:] if header.lower().startswith("bearer ") else None


def _error_of(response: Response) -> str | None:
    """Slack's error code in an answer (`ok: false`), read back for the call log."""
    try:
        body = json.loads(bytes(response.body))
    except ValueError:
        return None
    return str(body.get("error")) if isinstance(body, dict) and body.get("ok") is False else None


def iter_texts(blocks: list[Any]) -> Iterator[str]:
    """Every text string inside a list of blocks (for assertions on content)."""
    for block in blocks:
        if isinstance(block, list):  # a table block's row of cells
            yield from iter_texts(block)
        elif isinstance(block, dict):
            for key, value in block.items():
                if key == "text" and isinstance(value, dict):
                    yield str(value.get("text", ""))
                elif key == "text" and isinstance(value, str):
                    yield value
                elif isinstance(value, list):
                    yield from iter_texts(value)
                elif isinstance(value, dict):
                    yield from iter_texts([value])
