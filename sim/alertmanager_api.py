"""A strict stand-in for Alertmanager 0.25's v2 API: the subset proxybot calls, refusing what it refuses.

Silences: `POST /api/v2/silences` (create; update when `id` is given: in place when Alertmanager would,
else the old one expired and a new id), `GET /api/v2/silences` (with `filter`), `DELETE
/api/v2/silence/{id}`; alerts: `GET /api/v2/alerts` (with `filter`, `active`, `silenced`, `inhibited`,
`unprocessed`), the alerts `held()` lists (the demo's: what `sim.alerting.Notifier` holds firing),
each marked `status.silencedBy` by the active silences; and `/-/ready`.

Strict as 0.25 is (tests/sim/test_alertmanager_api.py sends the same requests to a real one): a missing
field is 422 with go-openapi's text, a bad matcher or times 400 with Alertmanager's sentence, an unknown id
on update 404 and on DELETE 500, a startsAt in the past becomes now, times are written to the millisecond.
`silenced_by(labels)` is what the notifier asks before it sends a webhook: Alertmanager notifies nothing
for silenced alerts, their resolution included.
"""

from __future__ import annotations

import json
import random
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from sim.alerting import ManagedAlert, fingerprint

LabelMap = Mapping[str, str]
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# labels.ParseMatcher (0.25): name, operator, value (optionally quoted).
_FILTER = re.compile(r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(=~|=|!=|!~)\s*((?s:.*?))\s*$")
_REQUIRED = ("comment", "createdBy", "endsAt", "matchers", "startsAt")  # go-openapi checks them in this order
_MATCHER_REQUIRED = ("isRegex", "name", "value")
# Prometheus sends firing alerts with an end 4 evaluation-resend periods ahead (4 x 1 min).
FIRING_ENDS_AHEAD = 240.0
START_TIMEOUT = 10.0


@dataclass(frozen=True)
class AmMatcher:
    """One matcher as Alertmanager keeps it."""

    name: str
    value: str
    is_regex: bool
    is_equal: bool = True

    def matches(self, value: str) -> bool:
        hit = re.fullmatch(self.value, value) is not None if self.is_regex else value == self.value
        return hit if self.is_equal else not hit

    def as_json(self) -> dict[str, Any]:
        return {"isEqual": self.is_equal, "isRegex": self.is_regex, "name": self.name, "value": self.value}


@dataclass(frozen=True)
class StoredSilence:
    """A silence as Alertmanager stores it (unix seconds)."""

    id: str
    matchers: tuple[AmMatcher, ...]
    starts_at: float
    ends_at: float
    updated_at: float
    created_by: str
    comment: str

    def state(self, now: float) -> str:
        if self.ends_at <= now:
            return "expired"
        return "pending" if self.starts_at > now else "active"

    def silences(self, labels: LabelMap) -> bool:
        return all(m.matches(labels.get(m.name, "")) for m in self.matchers)

    def as_json(self, now: float) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": {"state": self.state(now)},
            "updatedAt": millis(self.updated_at),
            "comment": self.comment,
            "createdBy": self.created_by,
            "endsAt": millis(self.ends_at),
            "matchers": [m.as_json() for m in self.matchers],
            "startsAt": millis(self.starts_at),
        }


class Refused(Exception):
    """An answer Alertmanager gives instead: its status and body (a JSON value)."""

    def __init__(self, status: int, body: object) -> None:
        super().__init__(str(body))
        self.status, self.body = status, body

    @classmethod
    def openapi(cls, status: int, code: int, message: str) -> Refused:
        return cls(status, {"code": code, "message": message})


def millis(unix: float) -> str:
    """Alertmanager's API time format (strfmt.DateTime): RFC 3339 in UTC, to the millisecond."""
    moment = datetime.fromtimestamp(unix, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class AlertmanagerApi:
    """The stand-in: silences kept in memory, alerts read from `held()`; a context manager serving it."""

    def __init__(
        self,
        held: Callable[[], Iterable[ManagedAlert]] = list,
        *,
        receiver: str = "proxybot",
        clock: Callable[[], float] = time.time,
        seed: int | None = None,
    ) -> None:
        self.held = held
        self.receiver = receiver
        self.clock = clock
        # A new silence's id: random, as Alertmanager's; from `seed`, the same sequence every run (the demo).
        self._ids = random.Random(seed) if seed is not None else random.SystemRandom()
        self._silences: dict[str, StoredSilence] = {}
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle ----------------------------------------------------------------------------------

    def __enter__(self) -> AlertmanagerApi:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app(), log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the Alertmanager stand-in did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def app(self) -> Starlette:
        routes = [
            Route("/api/v2/silences", self._list_silences, methods=["GET"]),
            Route("/api/v2/silences", self._post_silence, methods=["POST"]),
            Route("/api/v2/silence/{id}", self._delete_silence, methods=["DELETE"]),
            Route("/api/v2/alerts", self._list_alerts, methods=["GET"]),
            Route("/-/ready", lambda _: PlainTextResponse("OK"), methods=["GET"]),
            Route("/api/v2/{rest:path}", _not_found, methods=["GET", "POST", "DELETE"]),
        ]
        return Starlette(routes=routes)

    # -- what the simulator and tests read ------------------------------------------------------------

    def silences(self) -> list[StoredSilence]:
        with self._lock:
            return list(self._silences.values())

    def silenced_by(self, labels: LabelMap) -> list[str]:
        """The ids of the active silences that silence an alert with `labels`."""
        now = self.clock()
        return sorted(s.id for s in self.silences() if s.state(now) == "active" and s.silences(labels))

    # -- silences -----------------------------------------------------------------------------------

    async def _post_silence(self, request: Request) -> Response:
        try:
            body = _silence_body(await request.body())
            return JSONResponse({"silenceID": self._set(body)})
        except Refused as refused:
            return _refusal(refused)

    def _set(self, body: Mapping[str, Any]) -> str:
        now = self.clock()
        wanted = _checked_silence(body, now)
        with self._lock:
            old = self._silences.get(wanted.id) if wanted.id else None
            if wanted.id and old is None:
                raise Refused(404, "silence not found")
            if old is not None and _can_update(old, wanted, now):
                self._silences[old.id] = replace(wanted, id=old.id, updated_at=now)
                return old.id
            if old is not None:
                self._silences[old.id] = _expired(old, now)
            made = str(uuid.UUID(int=self._ids.getrandbits(128), version=4))
            new = replace(wanted, id=made, starts_at=max(wanted.starts_at, now), updated_at=now)
            self._silences[new.id] = new
            return new.id

    async def _list_silences(self, request: Request) -> Response:
        try:
            filters = [_parse_filter(f) for f in request.query_params.getlist("filter")]
        except Refused as refused:
            return _refusal(refused)
        now = self.clock()
        found = [s for s in self.silences() if _silence_matches_filter(s, filters)]
        return JSONResponse([s.as_json(now) for s in _sorted_silences(found, now)])

    async def _delete_silence(self, request: Request) -> Response:
        raw = request.path_params["id"]
        try:
            key = str(uuid.UUID(raw))
        except ValueError:
            message = f"silenceID in path must be of type uuid: {json.dumps(raw)}"
            return _refusal(Refused.openapi(422, 601, message))
        with self._lock:
            found = self._silences.get(key)
            if found is None:
                return _refusal(Refused(500, "silence not found"))
            if found.state(self.clock()) != "expired":
                self._silences[key] = _expired(found, self.clock())
        return Response(status_code=200)

    # -- alerts -------------------------------------------------------------------------------------

    async def _list_alerts(self, request: Request) -> Response:
        params = request.query_params
        try:
            filters = [_parse_filter(f) for f in params.getlist("filter")]
        except Refused as refused:
            return _refusal(refused)
        flags = {name: _flag(params.get(name)) for name in ("active", "silenced", "inhibited", "unprocessed")}
        now = self.clock()
        shown = []
        for alert in self._firing():
            silenced = self.silenced_by(alert.labels)
            if not (flags["silenced"] or not silenced) or not (flags["active"] or silenced):
                continue
            if all(m.matches(alert.labels.get(m.name, "")) for m in filters):
                shown.append(self._alert_json(alert, silenced, now))
        return JSONResponse(sorted(shown, key=lambda a: str(a["fingerprint"])))

    def _firing(self) -> list[ManagedAlert]:
        unique = {fingerprint(a.labels): a for a in self.held() if a.ends_at is None}
        return list(unique.values())

    def _alert_json(self, alert: ManagedAlert, silenced: Sequence[str], now: float) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "annotations": dict(sorted(alert.annotations.items())),
            "endsAt": millis(now + FIRING_ENDS_AHEAD),
            "fingerprint": fingerprint(alert.labels),
            "receivers": [{"name": self.receiver}],
            "startsAt": millis(alert.starts_at),
            "status": {
                "inhibitedBy": [],
                "silencedBy": list(silenced),
                "state": "suppressed" if silenced else "active",
            },
            "updatedAt": millis(now),
        }
        if alert.generator_url:
            shown["generatorURL"] = alert.generator_url
        return {**shown, "labels": dict(sorted(alert.labels.items()))}


# -- a silence checked as Alertmanager 0.25 checks it -----------------------------------------------


def _silence_body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError as err:
        raise Refused.openapi(400, 400, f'parsing silence body from "" failed, because {err}') from None
    if not isinstance(body, dict):
        raise Refused.openapi(400, 400, 'parsing silence body from "" failed, because it is not an object')
    for name in _REQUIRED:
        if name not in body or body[name] is None:
            raise Refused.openapi(422, 602, f"{name} in body is required")
        if name == "matchers" and not body[name]:
            raise Refused.openapi(422, 612, "matchers in body should have at least 1 items")
    for index, matcher in enumerate(body["matchers"]):
        for name in _MATCHER_REQUIRED:
            if not isinstance(matcher, dict) or matcher.get(name) is None:
                raise Refused.openapi(422, 602, f"matchers.{index}.{name} in body is required")
    return body


def _checked_silence(body: Mapping[str, Any], now: float) -> StoredSilence:
    try:
        starts, ends = _instant(body["startsAt"]), _instant(body["endsAt"])
        matchers = tuple(
            AmMatcher(str(m["name"]), str(m["value"]), bool(m["isRegex"]), bool(m.get("isEqual", True)))
            for m in body["matchers"]
        )
    except (TypeError, ValueError) as err:
        raise Refused.openapi(400, 400, f'parsing silence body from "" failed, because {err}') from None
    if starts >= ends:
        raise Refused(400, "Failed to create silence: start time must be before end time")
    if ends < now:
        raise Refused(400, "Failed to create silence: end time can't be in the past")
    for index, matcher in enumerate(matchers):
        problem = _matcher_problem(matcher)
        if problem:
            raise Refused(400, f"silence invalid: invalid label matcher {index}: {problem}")
    if all(m.matches("") for m in matchers):
        raise Refused(400, "silence invalid: at least one matcher must not match the empty string")
    given = body.get("id") or ""
    return StoredSilence(
        str(given), matchers, starts, ends, now, str(body["createdBy"]), str(body["comment"])
    )


def _instant(value: object) -> float:
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a date-time")
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"{value!r} carries no time zone")
    return moment.timestamp()


def _matcher_problem(matcher: AmMatcher) -> str | None:
    if not _LABEL_NAME.fullmatch(matcher.name):
        return f"invalid label name {json.dumps(matcher.name)}"
    if matcher.is_regex:
        try:
            re.compile(matcher.value)
        except re.error as err:
            return f"invalid regular expression {json.dumps(matcher.value)}: error parsing regexp: {err}"
    return None


def _can_update(old: StoredSilence, new: StoredSilence, now: float) -> bool:
    # silences.canUpdate: same matchers; an active one keeps its start and may not end in the past; a
    # pending one may not start in the past; an expired one is never changed.
    if old.matchers != new.matchers:
        return False
    state = old.state(now)
    if state == "active":
        return new.starts_at == old.starts_at and new.ends_at >= now
    return state == "pending" and new.starts_at >= now


def _expired(silence: StoredSilence, now: float) -> StoredSilence:
    if silence.state(now) == "pending":
        return replace(silence, starts_at=now, ends_at=now, updated_at=now)
    return replace(silence, ends_at=now, updated_at=now)


def _sorted_silences(silences: list[StoredSilence], now: float) -> list[StoredSilence]:
    # The API's SortSilences: active by end, then pending by start, then expired, latest end first.
    def key(s: StoredSilence) -> tuple[int, float]:
        state = s.state(now)
        if state == "active":
            return (0, s.ends_at)
        return (1, s.starts_at) if state == "pending" else (2, -s.ends_at)

    return sorted(silences, key=key)


# -- filters ----------------------------------------------------------------------------------------


def _parse_filter(text: str) -> AmMatcher:
    found = _FILTER.match(text)
    if found is None:
        raise Refused(400, f"bad matcher format: {text}")
    name, op, value = found.groups()
    if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
        value = _unescape(value[1:-1])
    matcher = AmMatcher(name, value, is_regex="~" in op, is_equal=op.startswith("="))
    if matcher.is_regex:
        try:
            re.compile(value)
        except re.error as err:
            raise Refused(400, f"error parsing regexp: {err}: `^(?:{value})$`") from None
    return matcher


def _unescape(value: str) -> str:
    # ParseMatcher unescapes a backslash, a double quote and `n` after a backslash; the rest stays.
    out, escaped = [], False
    for char in value:
        if escaped:
            out.append({"\\": "\\", '"': '"', "n": "\n"}.get(char, "\\" + char))
            escaped = False
        elif char == "\\":
            escaped = True
        else:
            out.append(char)
    return "".join(out) + ("\\" if escaped else "")


def _silence_matches_filter(silence: StoredSilence, filters: Sequence[AmMatcher]) -> bool:
    # 0.25 selects the silences that carry each filter as one of their own matchers (name, value and
    # operator alike): `target=~"platform/.*"` finds a silence made with exactly that regex, not one
    # whose `target="platform/t1"` it would match.
    return all(wanted in silence.matchers for wanted in filters)


def _flag(value: str | None) -> bool:
    # go-openapi's boolean query parameter: absent is the default (true); what is not "true"-like is false.
    return value is None or value.lower() in ("1", "t", "true", "y", "yes", "on")


def _refusal(refused: Refused) -> Response:
    return JSONResponse(refused.body, status_code=refused.status)


async def _not_found(request: Request) -> Response:
    message = f"path {request.url.path} was not found"
    return _refusal(Refused.openapi(404, 404, message))
