"""Slack inbound: the bolt app, its `POST /slack/events` route (HTTP mode) or its Socket Mode worker.

    slack_routes_and_workers(settings, registrations)
        ->  ([Route POST /slack/events], [])   HTTP mode
        ->  ([], [socket mode worker])         slack.app_token set

Every HTTP request's signature (`v0:timestamp:body`, HMAC-SHA256 with the signing secret, 5-minute
window) is verified before bolt or anything else parses its body, and answered 401 otherwise, unlogged.
The bolt app's Web API client honours `slack.api_url`. Handler modules register their listeners
explicitly, through the registrations the composition root gives (`bot.compose`); listeners ack at once
and work afterwards (`process_before_response=False`). No token is logged: bolt and slack_sdk keep them
out of their logs, and this module only ever names which setting is missing.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from collections.abc import Callable, Sequence

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.starlette.async_handler import to_async_bolt_request, to_starlette_response
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from bot.errors import ConfigError
from bot.inbound.body import BodyTimeout, read_within
from bot.ports import Worker
from config.settings import Settings

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
APP_NAME = "proxybot"  # the bolt app's name: its listeners' loggers are `proxybot:<function>`
# Interaction payloads carry the whole message they came from (≤ 50 blocks): a few hundred KB at most.
MAX_BODY_BYTES = 1024 * 1024
# bolt's own client (its acks and `response_url` answers): no lease fences it, unlike the outbox's
# Slack calls (`bot.clients.slack.DEFAULT_TIMEOUT`).
BOLT_CLIENT_TIMEOUT = 10.0

# Slack's signed requests: a unix timestamp in seconds, within five minutes of now (as bolt checks).
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
SIGNATURE_WINDOW = 300
UNVERIFIED = PlainTextResponse("invalid request signature", status_code=401)

# A handler module's registration, bound to its dependencies: `lambda app: commands.register(app, deps)`.
Registration = Callable[[AsyncApp], None]


def web_client(settings: Settings, *, timeout: float = BOLT_CLIENT_TIMEOUT) -> AsyncWebClient:
    """The Web API client listeners get as `client`: bot token, `slack.api_url`, a timeout, no retries."""
    if settings.slack.bot_token is None:
        raise ConfigError(["slack.bot_token: required to answer Slack commands and buttons"])
    return AsyncWebClient(
        token=settings.slack.bot_token.get_secret_value(),
        base_url=str(settings.slack.api_url),
        timeout=math.ceil(timeout),
        retry_handlers=[],
    )


def build_slack_app(
    settings: Settings, registrations: Sequence[Registration], *, client: AsyncWebClient | None = None
) -> AsyncApp:
    """The bolt app with every given handler module registered; ConfigError names a missing secret."""
    secret = settings.slack.signing_secret
    if secret is None and settings.slack.app_token is None:
        raise ConfigError(
            ["slack.signing_secret: required for POST /slack/events (or set slack.app_token for Socket Mode)"]
        )
    app = AsyncApp(
        # Socket Mode requests are not signed (the socket is authenticated by the app token instead).
        signing_secret=secret.get_secret_value() if secret is not None else "",
        client=client or web_client(settings),
        process_before_response=False,
        # Named: without a name bolt calls inspect.stack() to name the app after its caller's file, which
        # reads the source of every frame on the stack (about 0.1 s of `serve`'s start, before it listens).
        name=APP_NAME,
    )
    for register in registrations:
        register(app)
    return app


def events_route(app: AsyncApp, signing_secret: str, path: str = EVENTS_PATH) -> Route:
    """`POST /slack/events` dispatched to bolt as its Starlette adapter does, once the request is shown
    to be Slack's: its timestamp a number within the window, before the body is read; its signature
    over the body, before anything parses it. A refusal is 401 and logs nothing of the request (bolt
    parsed an unsigned body first, answering 500 to a bad one, and logged refused bodies whole: a
    forged log line, or a genuine request's `response_url`). Oversized or non-UTF-8 bodies are refused
    (413/400): the adapter would fail on them with a 500."""
    verifier = SignatureVerifier(signing_secret)

    async def slack_events(request: Request) -> Response:
        stamp = request.headers.get("x-slack-request-timestamp", "")
        signature = request.headers.get("x-slack-signature", "")
        if not _TIMESTAMP.fullmatch(stamp) or abs(time.time() - int(stamp)) > SIGNATURE_WINDOW:
            return UNVERIFIED
        body = await _read_body(request)
        if isinstance(body, Response):
            return body
        if not verifier.is_valid(body, stamp, signature):
            return UNVERIFIED
        answer = await app.async_dispatch(to_async_bolt_request(request, body))
        return to_starlette_response(answer)

    return Route(path, slack_events, methods=["POST"])


async def _read_body(request: Request) -> bytes | Response:
    """The body within the limit and valid UTF-8, else the response refusing it."""
    try:
        body = await read_within(request, MAX_BODY_BYTES)
    except ClientDisconnect:
        return PlainTextResponse("client disconnected", status_code=400)
    except BodyTimeout as error:
        return PlainTextResponse(str(error), status_code=408)
    if body is None:
        return PlainTextResponse("request body too large", status_code=413)
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return PlainTextResponse("request body is not UTF-8", status_code=400)
    return body


def socket_mode_worker(app: AsyncApp, app_token: str) -> Worker:
    """A worker that keeps a Socket Mode connection for the app's lifetime (bolt reconnects it)."""

    async def slack_socket_mode() -> None:
        handler = AsyncSocketModeHandler(app, app_token)
        try:
            await handler.connect_async()  # type: ignore[no-untyped-call]  # bolt leaves it bare
            log.info("Slack Socket Mode connected")
            await asyncio.Event().wait()  # until the app stops and cancels this worker
        finally:
            await handler.close_async()  # type: ignore[no-untyped-call]

    return slack_socket_mode


def slack_routes_and_workers(
    settings: Settings,
    registrations: Sequence[Registration],
    *,
    client: AsyncWebClient | None = None,
) -> tuple[list[BaseRoute], list[Worker]]:
    """Slack inbound for `create_app(deps, workers, extra=routes)`, with the handler modules the
    composition root registers (`bot.compose.slack_endpoints`: the buttons and `/proxy`).

    HTTP mode gives the `/slack/events` route; Socket Mode (`slack.app_token` set) gives a worker instead.
    """
    app = build_slack_app(settings, registrations, client=client)
    if settings.slack.app_token is not None:
        return [], [socket_mode_worker(app, settings.slack.app_token.get_secret_value())]
    secret = settings.slack.signing_secret
    assert secret is not None  # build_slack_app refused HTTP mode without it
    return [events_route(app, secret.get_secret_value())], []
