"""A thin typed client of the Alertmanager v2 API, over httpx: silences (create, list, expire) and the
alerts it lists active (the stale-copy check, `bot.alerts.stale_check`).

Every call has a timeout. Every failure (unreachable, timeout, a refusal, an answer that is not the API's
shape) becomes an `UpstreamError` whose message says which operation failed and why, so a handler can
answer a person with it as is. Request paths are module constants; the only variable part, a silence id,
must parse as a UUID first, so nothing a user types can reach another path. The base URL comes from the
configuration alone; its credentials (userinfo) are never shown in a message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import httpx
from pydantic import TypeAdapter, ValidationError

from bot.clients.credentials import http_security
from bot.domain.alerts import Instant
from bot.domain.silences import Matcher, NewSilence, Silence, silence_id
from bot.errors import ConfigError, InputError, UpstreamError
from config.settings import AlertmanagerSettings

DEFAULT_TIMEOUT = 10.0
SILENCES_PATH = "api/v2/silences"
SILENCE_PATH = "api/v2/silence/"  # + a validated UUID
ALERTS_PATH = "api/v2/alerts"
# The stale-copy check holds a notification while it asks: a short wait, then the notification is applied.
ACTIVE_TIMEOUT = 2.0
# Every alert not resolved, whatever silences and inhibitions do to its notifications.
_ACTIVE_ONLY = (("active", "true"), ("silenced", "true"), ("inhibited", "true"), ("unprocessed", "true"))
# startsAt parsed as the webhook's is (as JSON, strict), so the two compare equal for the same alert.
_INSTANT: TypeAdapter[datetime] = TypeAdapter(Instant)
MAX_ERROR_TEXT = 300


class AlertmanagerClient:
    """Silences (create, list, expire) and active alerts; every failure is an `UpstreamError` with a clear
    message."""

    def __init__(self, http: httpx.AsyncClient, *, shown_as: str) -> None:
        self._http = http
        self._shown_as = shown_as

    @classmethod
    def from_settings(
        cls,
        settings: AlertmanagerSettings,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> AlertmanagerClient:
        """A client of `alertmanager.url`; ConfigError when it is not set."""
        if settings.url is None:
            raise ConfigError(["alertmanager.url: required to create, list or expire silences"])
        base = httpx.URL(settings.url)
        security = http_security(settings, "alertmanager")
        http = httpx.AsyncClient(
            base_url=base,
            timeout=httpx.Timeout(timeout),
            transport=transport,
            auth=security.auth,
            verify=security.verify,
        )
        return cls(http, shown_as=str(base.copy_with(username=None, password=None)))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def create_silence(self, silence: NewSilence) -> str:
        """POST a silence; returns its id."""
        if not silence.matchers:
            raise InputError("a silence needs at least one matcher")
        body = {
            "matchers": [m.as_json() for m in silence.matchers],
            "startsAt": _rfc3339(silence.starts_at),
            "endsAt": _rfc3339(silence.ends_at),
            "createdBy": silence.created_by,
            "comment": silence.comment,
        }
        answer = await self._call("creating a silence", "POST", SILENCES_PATH, body)
        if not isinstance(answer, dict) or not isinstance(answer.get("silenceID"), str):
            raise self._error("creating a silence", "the answer carries no silenceID")
        return str(answer["silenceID"])

    async def silences(self) -> list[Silence]:
        """Every silence Alertmanager knows (active, pending and recently expired)."""
        answer = await self._call("listing silences", "GET", SILENCES_PATH)
        if not isinstance(answer, list):
            raise self._error("listing silences", "the answer is not a list")
        try:
            return [_silence(raw) for raw in answer]
        except (KeyError, TypeError, ValueError) as exc:
            raise self._error("listing silences", f"unexpected silence shape ({exc})") from None

    async def expire_silence(self, silence: str) -> None:
        """Expire the silence with this id (InputError unless it is a UUID)."""
        path = SILENCE_PATH + silence_id(silence)
        await self._call(f"expiring silence {silence_id(silence)}", "DELETE", path)

    async def active_alerts(
        self, matchers: Sequence[Matcher], *, timeout: float = ACTIVE_TIMEOUT
    ) -> list[tuple[str, datetime]]:
        """`(fingerprint, startsAt)` of every alert Alertmanager lists active (silenced and inhibited
        ones too; resolved ones it leaves out) that `matchers` select, asked within `timeout` seconds.
        The API writes startsAt to the millisecond (truncated), the webhook to the nanosecond."""
        params = [*_ACTIVE_ONLY, *(("filter", m.as_filter()) for m in matchers)]
        answer = await self._call("listing active alerts", "GET", ALERTS_PATH, params=params, timeout=timeout)
        if not isinstance(answer, list):
            raise self._error("listing active alerts", "the answer is not a list")
        try:
            return [
                (str(raw["fingerprint"]), _INSTANT.validate_json(json.dumps(raw["startsAt"])))
                for raw in answer
            ]
        except (KeyError, TypeError, ValidationError) as exc:
            why = f"unexpected alert shape ({type(exc).__name__})"
            raise self._error("listing active alerts", why) from None

    async def _call(
        self,
        doing: str,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Sequence[tuple[str, str]] = (),
        timeout: float | None = None,
    ) -> Any:
        wait = httpx.USE_CLIENT_DEFAULT if timeout is None else httpx.Timeout(timeout)
        try:
            response = await self._http.request(method, path, json=body, params=list(params), timeout=wait)
        except httpx.TimeoutException:
            raise self._error(doing, "timed out") from None
        except httpx.HTTPError as exc:
            raise self._error(doing, f"could not connect ({type(exc).__name__})") from None
        if response.status_code == 404 and method == "DELETE":
            raise self._error(doing, "no such silence")
        if not response.is_success:
            raise self._error(doing, f"HTTP {response.status_code}: {_excerpt(response.text)}")
        try:
            return response.json() if response.content else None
        except ValueError:
            raise self._error(doing, "the answer is not JSON") from None

    def _error(self, doing: str, why: str) -> UpstreamError:
        return UpstreamError(f"Alertmanager at {self._shown_as} failed {doing}: {why}")


def _rfc3339(at: datetime) -> str:
    if at.tzinfo is None:
        raise InputError("silence times must carry a time zone")
    return at.isoformat()


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_ERROR_TEXT else flat[:MAX_ERROR_TEXT] + "…"


def _silence(raw: Mapping[str, Any]) -> Silence:
    matchers = tuple(
        Matcher(str(m["name"]), str(m["value"]), bool(m["isRegex"]), bool(m.get("isEqual", True)))
        for m in raw["matchers"]
    )
    return Silence(
        id=str(raw["id"]),
        state=str(raw["status"]["state"]),
        matchers=matchers,
        starts_at=datetime.fromisoformat(str(raw["startsAt"])),
        ends_at=datetime.fromisoformat(str(raw["endsAt"])),
        created_by=str(raw["createdBy"]),
        comment=str(raw.get("comment", "")),
    )
