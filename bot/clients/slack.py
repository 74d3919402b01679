"""A thin typed wrapper of slack_sdk's AsyncWebClient: the only code that talks to the Slack Web API.

Every call has a timeout. slack_sdk's own retry handlers are switched off (it installs a connection-error
retry by default), because the delivery worker owns every retry and its timing. What Slack answers is
converted here, at the boundary, into one of three errors the worker can act on:

    UpstreamError
    └── SlackError                 (method)
        ├── SlackRateLimited       429 / `ratelimited`: wait `retry_after` seconds, then try again
        ├── SlackTransient         5xx, Slack-side errors, timeouts, connection failures: back off and retry
        └── SlackRejected          `ok: false` that retrying cannot fix (invalid_blocks, invalid_auth, ...)

The bot token never appears in a message or a log line: errors carry the method and Slack's error code.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError, SlackRequestError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.clients.slack_timeouts import DEFAULT_TIMEOUT
from bot.errors import ConfigError, UpstreamError
from config.settings import SlackSettings

log = logging.getLogger(__name__)

T = TypeVar("T")


class SentMessage(Protocol):
    """What the client sends of a message (`bot.render.blocks.Message` is one); it knows no renderer."""

    @property
    def text(self) -> str: ...

    @property
    def blocks(self) -> tuple[dict[str, Any], ...]: ...

    def as_kwargs(self) -> dict[str, Any]: ...


# views.open must reach Slack within the trigger's 3 s: what is left of them once the press arrived.
VIEW_TIMEOUT = 2.5
# The `event_type` of the metadata every post carries: which outbox row made it (`find_marked`).
MARK_EVENT = "proxybot_message"
# conversations.history pages looked through for a marked message (200 messages each).
MARK_SEARCH_PAGES = 5
# Slack sends Retry-After with every 429; when a proxy in between drops it, one second is Slack's pace.
DEFAULT_RETRY_AFTER = 1.0
# `ok: false` codes that mean Slack itself failed, not the request: retrying can succeed.
TRANSIENT_CODES = frozenset(
    {"internal_error", "fatal_error", "service_unavailable", "request_timeout", "team_added_to_org"}
)
# Rejections that an operator fixes (token, scopes, inviting the bot), not the message's content.
OPERATOR_CODES = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "token_revoked",
        "token_expired",
        "account_inactive",
        "missing_scope",
        "not_in_channel",
        "channel_not_found",
        "ekm_access_denied",
    }
)
# Rejections of the message's content (its size or its blocks): the same message made smaller may pass.
CONTENT_CODES = frozenset({"invalid_blocks", "invalid_blocks_format", "msg_too_long", "msg_blocks_too_long"})
# What of Slack's `response_metadata.messages` (which place of the blocks is at fault) a refusal keeps.
MAX_DETAILS = 3
MAX_DETAIL_CHARS = 200
_UPLOAD_STATUS = re.compile(r"status: (\d{3})")
# A workspace host as auth.test names it (`acme.slack.com`, `acme.enterprise.slack.com`).
_HOST = re.compile(r"[a-z0-9-]+(\.[a-z0-9-]+)+")


class SlackError(UpstreamError):
    """A Slack Web API call did not succeed; `method` names the call."""

    def __init__(self, method: str, message: str) -> None:
        self.method = method
        super().__init__(f"Slack {method}: {message}")


class SlackRateLimited(SlackError):
    """Slack answered 429: nothing may be sent for `retry_after` seconds."""

    def __init__(self, method: str, retry_after: float) -> None:
        self.retry_after = retry_after
        super().__init__(method, f"rate limited, retry after {retry_after:g}s")


class SlackTransient(SlackError):
    """Slack failed or could not be reached (5xx, timeout, connection error): the same call may succeed."""


class SlackRejected(SlackError):
    """Slack refused the call with `error_code`; sending it again unchanged cannot succeed.

    `details` are Slack's own words on it (`response_metadata.messages`: for `invalid_blocks`, which
    place of which block), a few and cut short; they name places in the message, never the token."""

    def __init__(self, method: str, error_code: str, details: tuple[str, ...] = ()) -> None:
        self.error_code = error_code
        self.details = tuple(d[:MAX_DETAIL_CHARS] for d in details[:MAX_DETAILS])
        said = f" ({'; '.join(self.details)})" if self.details else ""
        super().__init__(method, f"rejected: {error_code}{said}")

    @property
    def needs_operator(self) -> bool:
        """True when the fix is in the Slack app or channel (token, scope, invite), not in the message."""
        return self.error_code in OPERATOR_CODES

    @property
    def about_content(self) -> bool:
        """True when Slack refused the message's size or blocks: a smaller form of it may be taken."""
        return self.error_code in CONTENT_CODES


@dataclass(frozen=True, slots=True)
class Posted:
    """Where Slack put a new message: the channel's ID (whatever the post named it by) and the `ts`.

    Only chat.postMessage takes a `#name`; every later call on the message or its thread (chat.update,
    files.completeUploadExternal, permalinks, history) wants the ID, so callers keep this one.
    """

    channel_id: str
    ts: str


class SlackClient:
    """Posts, edits, thread replies, file uploads and deletes; every failure is a `SlackError`."""

    def __init__(
        self,
        web: AsyncWebClient,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        upload_timeout: float | None = None,
        api_host: str = "slack.com",
    ) -> None:
        self._web = web
        # The workspace URL is trusted on slack.com or on the configured API's host (GovSlack, a fake).
        self._api_host = api_host
        self._workspace: str | None = None  # auth.test's `url`, once validated: kept for the process
        self._timeout = timeout
        # Told (method, outcome) after every call: the bot's own metrics count Slack calls by outcome.
        self.observe: Callable[[str, str], None] = lambda method, outcome: None
        # Told (method, error code) of every refusal (`SlackRejected`), for the refusals metric.
        self.refused: Callable[[str, str], None] = lambda method, error: None
        # An upload is three requests (get URL, send bytes, complete) under one deadline.
        self._upload_timeout = upload_timeout if upload_timeout is not None else max(timeout, 3 * timeout)

    @classmethod
    def from_settings(
        cls, settings: SlackSettings, *, timeout: float = DEFAULT_TIMEOUT, upload_timeout: float | None = None
    ) -> SlackClient:
        """A client for `settings.api_url` with the bot token; no retries of its own."""
        if settings.bot_token is None:
            raise ConfigError(["slack.bot_token: required to post to Slack"])
        web = AsyncWebClient(
            token=settings.bot_token.get_secret_value(),
            base_url=str(settings.api_url),
            timeout=math.ceil(max(timeout, upload_timeout or 0.0)),
            retry_handlers=[],
        )
        api_host = urlsplit(str(settings.api_url)).hostname or "slack.com"
        return cls(web, timeout=timeout, upload_timeout=upload_timeout, api_host=api_host)

    async def post(
        self, channel: str, message: SentMessage, thread_ts: str | None = None, *, mark: str | None = None
    ) -> Posted:
        """chat.postMessage to a channel ID or `#name`; returns the channel's ID and the new `ts`.

        `mark` goes into the message's metadata, so `find_marked` can tell later whether it arrived."""
        args: dict[str, Any] = {"channel": channel, **message.as_kwargs()}
        if thread_ts is not None:
            args["thread_ts"] = thread_ts
        if mark is not None:
            args["metadata"] = {"event_type": MARK_EVENT, "event_payload": {"mark": mark}}
        response = await self._call("chat.postMessage", lambda: self._web.chat_postMessage(**args))
        return _posted(response, "chat.postMessage")

    async def find_marked(
        self, channel_id: str, mark: str, oldest: float, thread_ts: str | None = None
    ) -> str | None:
        """The `ts` of a message posted with `mark` since `oldest` (in the thread of `thread_ts` when
        given), or None. Needs `channels:history` (`groups:history` in private channels)."""
        args: dict[str, Any] = {
            "channel": channel_id,
            "oldest": f"{max(0.0, oldest):.6f}",
            "include_all_metadata": True,
            "limit": 200,
        }
        method = "conversations.history" if thread_ts is None else "conversations.replies"
        if thread_ts is not None:
            args["ts"] = thread_ts
        for _ in range(MARK_SEARCH_PAGES):
            if thread_ts is None:
                response = await self._call(method, lambda: self._web.conversations_history(**args))
            else:
                response = await self._call(method, lambda: self._web.conversations_replies(**args))
            for found in response.get("messages") or []:
                if _marked(found, mark):
                    return str(found["ts"])
            cursor = (response.get("response_metadata") or {}).get("next_cursor")
            if not response.get("has_more") or not cursor:
                return None
            args["cursor"] = cursor
        return None

    async def update(self, channel_id: str, ts: str, message: SentMessage) -> None:
        """chat.update of the message at `ts` with new content (`channel_id`: an ID, never a name).

        `blocks` is always sent, empty for a text-only message: without it Slack may keep the old blocks."""
        args: dict[str, Any] = {"channel": channel_id, "ts": ts, "text": message.text}
        args["blocks"] = list(message.blocks)
        await self._call("chat.update", lambda: self._web.chat_update(**args))

    async def upload_png(
        self, channel_id: str, thread_ts: str, png: bytes, filename: str, title: str
    ) -> None:
        """files_upload_v2 of one PNG into a message's thread (`channel_id`: an ID, never a name)."""
        await self._call(
            "files_upload_v2",
            lambda: self._web.files_upload_v2(
                channel=channel_id, thread_ts=thread_ts, content=png, filename=filename, title=title
            ),
            timeout=self._upload_timeout,
        )

    async def upload_file(
        self, channel_id: str, thread_ts: str, content: bytes, filename: str, title: str
    ) -> tuple[str, ...]:
        """files_upload_v2 of one file into a message's thread; the IDs of the files Slack made."""
        response = await self._call(
            "files_upload_v2",
            lambda: self._web.files_upload_v2(
                channel=channel_id, thread_ts=thread_ts, content=content, filename=filename, title=title
            ),
            timeout=self._upload_timeout,
        )
        files = response.get("files")
        found = files if isinstance(files, list) else []
        return tuple(str(f["id"]) for f in found if isinstance(f, dict) and f.get("id"))

    async def open_view(self, trigger_id: str, view: Mapping[str, Any]) -> None:
        """views.open of a modal with the interaction's `trigger_id`. Called at once by the replica that got
        the press, never through the outbox: Slack takes the trigger for 3 s only (`expired_trigger_id`)."""
        await self._call(
            "views.open",
            lambda: self._web.views_open(trigger_id=trigger_id, view=dict(view)),
            timeout=VIEW_TIMEOUT,
        )

    async def delete_file(self, file_id: str) -> None:
        """files.delete of a file the bot uploaded (the files:write scope covers it)."""
        await self._call("files.delete", lambda: self._web.files_delete(file=file_id))

    async def auth_test(self) -> Mapping[str, Any]:
        """auth.test: who the token is (user_id, bot_id, team_id); a bad token is `SlackRejected`."""
        response = await self._who()
        return dict(response.data) if isinstance(response.data, dict) else {}

    async def granted_scopes(self) -> frozenset[str]:
        """The token's OAuth scopes, as Slack names them on every answer (`x-oauth-scopes`); a bad token
        is `SlackRejected`."""
        response = await self._who()
        headers = {str(k).lower(): v for k, v in (response.headers or {}).items()}
        raw = headers.get("x-oauth-scopes", "")
        if isinstance(raw, list):
            raw = ",".join(str(v) for v in raw)
        return frozenset(scope.strip() for scope in str(raw).split(",") if scope.strip())

    async def workspace_url(self) -> str | None:
        """The workspace's URL (`https://acme.slack.com/`) from auth.test, asked once per process; None
        while Slack cannot be asked, or when it answers a URL that is not on a Slack host."""
        if self._workspace is None:
            try:
                await self._who()
            except SlackError as error:
                log.warning("Slack: %s: messages are mentioned without links", error)
        return self._workspace

    async def _who(self) -> AsyncSlackResponse:
        """auth.test, keeping the workspace URL it answers (every auth.test answers it)."""
        response = await self._call("auth.test", self._web.auth_test)
        raw = response.data.get("url") if isinstance(response.data, dict) else None
        found = workspace_url(raw, self._api_host)
        if found is None:
            log.warning("Slack: auth.test named no workspace URL on a Slack host: messages are not linked")
        self._workspace = found or self._workspace
        return response

    async def _call(
        self,
        method: str,
        call: Callable[[], Awaitable[AsyncSlackResponse]],
        *,
        timeout: float | None = None,
    ) -> AsyncSlackResponse:
        try:
            response = await self._converted(method, call, timeout)
        except SlackError as error:
            self.observe(method, type(error).__name__)
            if isinstance(error, SlackRejected):
                self.refused(method, error.error_code)
            raise
        self.observe(method, "ok")
        return response

    async def _converted(
        self, method: str, call: Callable[[], Awaitable[AsyncSlackResponse]], timeout: float | None
    ) -> AsyncSlackResponse:
        limit = self._timeout if timeout is None else timeout
        try:
            async with asyncio.timeout(limit):
                return await call()
        except SlackApiError as error:
            raise _from_api_error(method, error) from None
        except SlackRequestError as error:
            raise _from_request_error(method, error) from None
        except TimeoutError:
            raise SlackTransient(method, f"timed out after {limit:g}s") from None
        except (aiohttp.ClientError, OSError) as error:
            raise SlackTransient(method, f"connection failed: {type(error).__name__}") from None
        except SlackClientError as error:
            raise SlackRejected(method, type(error).__name__) from None


def workspace_url(raw: object, api_host: str) -> str | None:
    """`https://HOST/` when `raw` is an https URL on slack.com or `api_host` (or a subdomain of either),
    with no user, port, query or fragment; None otherwise."""
    if not isinstance(raw, str):
        return None
    try:
        parts = urlsplit(raw.strip())
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if parts.scheme != "https" or parts.username or parts.password or port not in (None, 443):
        return None
    if parts.query or parts.fragment or not _HOST.fullmatch(host):
        return None
    trusted = {"slack.com", api_host.lower()}
    return f"https://{host}/" if any(host == t or host.endswith("." + t) for t in trusted) else None


def _from_api_error(method: str, error: SlackApiError) -> SlackError:
    response = error.response
    status = int(getattr(response, "status_code", 0) or 0)
    data = getattr(response, "data", None)
    code = str(data.get("error") or "") if isinstance(data, dict) else ""
    if status == 429 or code == "ratelimited":
        return SlackRateLimited(method, _retry_after(getattr(response, "headers", None) or {}))
    if status >= 500 or code in TRANSIENT_CODES:
        return SlackTransient(method, f"HTTP {status} {code}".rstrip())
    return SlackRejected(method, code or f"http_{status}", _details(data))


def _details(data: object) -> tuple[str, ...]:
    """Slack's `response_metadata.messages` of a refusal (strings only), e.g. the JSON pointer of a block."""
    meta = data.get("response_metadata") if isinstance(data, dict) else None
    messages = meta.get("messages") if isinstance(meta, dict) else None
    return tuple(str(m) for m in messages if isinstance(m, str)) if isinstance(messages, list) else ()


def _from_request_error(method: str, error: SlackRequestError) -> SlackError:
    # files_upload_v2 raises SlackRequestError when sending the bytes fails; its text holds the status.
    found = _UPLOAD_STATUS.search(str(error))
    status = int(found.group(1)) if found else 0
    if status == 429:
        return SlackRateLimited(method, DEFAULT_RETRY_AFTER)
    if status == 0 or status >= 500:
        return SlackTransient(method, f"file transfer failed (HTTP {status or '?'})")
    return SlackRejected(method, f"upload_http_{status}")


def _retry_after(headers: Mapping[str, Any]) -> float:
    raw = next((v for k, v in headers.items() if str(k).lower() == "retry-after"), None)
    try:
        seconds = float(raw) if raw is not None else DEFAULT_RETRY_AFTER
    except (TypeError, ValueError):
        return DEFAULT_RETRY_AFTER
    return seconds if math.isfinite(seconds) and seconds >= 0 else DEFAULT_RETRY_AFTER


def _marked(message: Any, mark: str) -> bool:
    if not isinstance(message, dict) or not isinstance(message.get("ts"), str):
        return False
    metadata = message.get("metadata")
    if not isinstance(metadata, dict) or metadata.get("event_type") != MARK_EVENT:
        return False
    payload = metadata.get("event_payload")
    return isinstance(payload, dict) and payload.get("mark") == mark


def _posted(response: AsyncSlackResponse, method: str) -> Posted:
    ts, channel = response.get("ts"), response.get("channel")
    if not isinstance(ts, str) or not ts:
        raise SlackRejected(method, "missing_ts")
    if not isinstance(channel, str) or not channel:
        raise SlackRejected(method, "missing_channel")
    return Posted(channel, ts)
