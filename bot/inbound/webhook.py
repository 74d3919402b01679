"""`POST /alertmanager`: authenticate, bound, validate and durably store a webhook, then wake the worker.

Answers, in the order they are checked (cheapest and least revealing first):
401 wrong or missing credentials (with `WWW-Authenticate`); 503 with `Retry-After` once the process is
stopping (Alertmanager retries, on another replica or after the restart); 415 not JSON; 413 body over the
limit (by Content-Length, or by counting streamed bytes, never reading past the limit: `bot.inbound.body`);
400 malformed JSON or schema, with `{"error": "alerts[0].startsAt: ..."}`; 503 the store failed
(Alertmanager retries); 202 stored.
Nothing slow happens on the request path: no enrichment, no Slack; `on_accepted` only signals a worker.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bot.domain.alerts import AlertmanagerWebhook, parse_webhook
from bot.errors import InputError
from bot.inbound.body import BodyTimeout, is_length, read_within
from bot.store.base import NotificationSink
from config.settings import AlertmanagerSettings

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
PARSE_INLINE_BYTES = 64 * 1024
REALM = "proxybot"
RETRY = {"Retry-After": "1"}
Compare = Callable[[bytes, bytes], bool]


@dataclass(frozen=True)
class WebhookAuth:
    """The credentials Alertmanager must present: a bearer token, basic auth, or none configured."""

    token: str | None = None
    username: str | None = None
    password: str | None = None
    # Constant-time by default; injectable so a test can prove every check goes through it.
    compare: Compare = hmac.compare_digest

    def __post_init__(self) -> None:
        # An empty secret would admit `Authorization: Bearer ` with nothing after it.
        if self.token == "" or self.username == "" or self.password == "":
            raise ValueError("webhook credentials must not be empty; leave them unset to disable auth")
        if (self.username is None) != (self.password is None):
            raise ValueError("a webhook username needs a password and the other way round")
        if self.token is not None and self.username is not None:
            raise ValueError("configure a bearer token or basic credentials, not both")

    @classmethod
    def from_settings(cls, settings: AlertmanagerSettings) -> WebhookAuth:
        token, password = settings.webhook_token, settings.webhook_password
        return cls(
            token=None if token is None else token.get_secret_value(),
            username=settings.webhook_username,
            password=None if password is None else password.get_secret_value(),
        )

    @property
    def configured(self) -> bool:
        return self.token is not None or self.username is not None

    @property
    def challenge(self) -> str:
        scheme = "Bearer" if self.token is not None else "Basic"
        return f'{scheme} realm="{REALM}"'

    def admits(self, authorization: str | None) -> bool:
        """Whether an Authorization header value satisfies the configured scheme."""
        if not self.configured:
            return True
        scheme, _, credentials = (authorization or "").strip().partition(" ")
        if self.token is not None:
            return scheme.lower() == "bearer" and self._same(_header_bytes(credentials.strip()), self.token)
        return scheme.lower() == "basic" and self._basic_matches(credentials.strip())

    def _basic_matches(self, credentials: str) -> bool:
        try:
            decoded = base64.b64decode(credentials.encode("ascii"), validate=True)
        except (UnicodeEncodeError, binascii.Error):
            return False
        user, colon, password = decoded.partition(b":")
        # Both halves are always compared, so timing does not tell which one was wrong.
        user_ok = self._same(user, self.username or "")
        password_ok = self._same(password, self.password or "")
        return bool(colon) and user_ok and password_ok

    def _same(self, presented: bytes, expected: str) -> bool:
        return self.compare(presented, expected.encode("utf-8"))


def _header_bytes(value: str) -> bytes:
    # Starlette decodes header values as latin-1; encoding back gives the exact bytes that were sent.
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8")


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


class AlertmanagerIntake:
    """The endpoint behind `POST /alertmanager`, with its dependencies passed in."""

    def __init__(
        self,
        store: NotificationSink,
        on_accepted: Callable[[], None],
        *,
        auth: WebhookAuth,
        max_body_bytes: int,
        clock: Callable[[], float],
        on_refused: Callable[[int], None] = lambda status: None,
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        self._store = store
        self._stopping = stopping
        self._on_accepted = on_accepted
        self._on_refused = on_refused
        self._auth = auth
        self._max_body_bytes = max_body_bytes
        self._clock = clock

    async def handle(self, request: Request) -> Response:
        """The answer to one POST; every refusal (4xx, 503) is also told to `on_refused` by status."""
        response = await self._answer(request)
        if response.status_code >= 400:
            self._on_refused(response.status_code)
        return response

    async def _answer(self, request: Request) -> Response:
        refusal = self._refuse_early(request)
        if refusal is not None:
            return refusal
        try:
            raw = await read_within(request, self._max_body_bytes)
        except ClientDisconnect:
            return _error(400, "the client disconnected before the body was complete")
        except BodyTimeout as error:
            log.warning("refused an Alertmanager webhook: %s", error)
            return _error(408, str(error))
        if raw is None:
            return self._too_large()
        try:
            webhook = await self._parse(raw)
        except InputError as error:
            log.warning("refused an Alertmanager webhook: %s", error)
            return _error(400, str(error))
        return await self._store_and_signal(raw, webhook)

    def _refuse_early(self, request: Request) -> Response | None:
        """The checks that need only the headers."""
        if not self._auth.admits(request.headers.get("authorization")):
            log.warning("refused an Alertmanager webhook: missing or wrong credentials")
            return _error(401, "unauthorized", {"WWW-Authenticate": self._auth.challenge})
        if self._stopping():
            # Answered, not left to a closing connection: the sender knows for sure it was not stored.
            return _error(503, "proxybot is stopping; retry (another replica, or this one restarted)", RETRY)
        if not _is_json(request.headers.get("content-type", "")):
            return _error(415, "the body must be JSON (Content-Type: application/json)")
        declared = request.headers.get("content-length")
        if declared is not None and not is_length(declared):
            return _error(400, "Content-Length is not a number")
        return None

    async def _parse(self, raw: bytes) -> AlertmanagerWebhook:
        # A typical notification parses in tens of microseconds; one near the size limit takes
        # milliseconds, which would stall every other request, so big ones are parsed off the loop.
        if len(raw) <= PARSE_INLINE_BYTES:
            return parse_webhook(raw)
        return await asyncio.to_thread(parse_webhook, raw)

    def _too_large(self) -> Response:
        return _error(413, f"the body is larger than {self._max_body_bytes} bytes")

    async def _store_and_signal(self, raw: bytes, webhook: AlertmanagerWebhook) -> Response:
        try:
            accepted = await self._store.accept(raw, webhook, self._clock())
        except Exception as error:
            # Any store failure (disk full, locked, closed) must make Alertmanager retry, never lose it.
            # Only the error's class and message are logged: the payload stays out of the logs.
            log.error(
                "could not store notification of group %r: %s: %s",
                webhook.group_key,
                type(error).__name__,
                error,
            )
            return _error(503, "the notification could not be stored; retry later", RETRY)
        if webhook.truncated_alerts:
            log.warning(
                "group %r arrived with %d alerts truncated by Alertmanager's max_alerts",
                webhook.group_key,
                webhook.truncated_alerts,
            )
        if not accepted.duplicate:
            self._signal()
        body = {"status": "accepted", "id": accepted.id, "duplicate": accepted.duplicate}
        return JSONResponse(body, status_code=202)

    def _signal(self) -> None:
        try:
            self._on_accepted()
        except Exception:
            # The notification is already durable and the worker also drains pending ones when it
            # starts, so a failing signal delays processing at worst; the sender still gets its 2xx.
            log.exception("waking the notification worker failed")


def _is_json(content_type: str) -> bool:
    media_type = content_type.partition(";")[0].strip().lower()
    return media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )


def alertmanager_route(
    store: NotificationSink,
    on_accepted: Callable[[], None],
    *,
    auth: WebhookAuth | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    clock: Callable[[], float] = time.time,
    path: str = "/alertmanager",
    on_refused: Callable[[int], None] = lambda status: None,
    stopping: Callable[[], bool] = lambda: False,
) -> Route:
    """The `POST /alertmanager` route for `create_app`.

    `store.accept()` has committed before any 2xx; `on_accepted()` (e.g. `asyncio.Event.set`) is called
    for each new, non-duplicate notification, `on_refused(status)` for each refusal; while `stopping()`
    every notification is refused with 503. With `auth` unset or empty every caller is accepted.
    """
    endpoint = AlertmanagerIntake(
        store,
        on_accepted,
        auth=auth or WebhookAuth(),
        max_body_bytes=max_body_bytes,
        clock=clock,
        on_refused=on_refused,
        stopping=stopping,
    )
    return Route(path, endpoint.handle, methods=["POST"], name="alertmanager")
