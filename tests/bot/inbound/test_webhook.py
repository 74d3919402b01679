"""POST /alertmanager through Starlette's real dispatch: auth, limits, validation, durability, signalling."""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
import logging
import socket
import sqlite3
from collections.abc import AsyncIterator, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from starlette.applications import Starlette

from bot.domain.alerts import AlertmanagerWebhook
from bot.inbound.webhook import DEFAULT_MAX_BODY_BYTES, PARSE_INLINE_BYTES, WebhookAuth, alertmanager_route
from bot.store import Accepted, Store, StoreError, open_store
from config.settings import AlertmanagerSettings
from tests.bot.domain import alertmanager_samples as samples
from tests.harness.alertmanager import Alertmanager

TOKEN = "am-webhook-token-7f3a"
JSON = {"Content-Type": "application/json"}


class RecordingSink:
    """A notification sink that keeps what it accepts in memory and deduplicates like the store."""

    def __init__(self) -> None:
        self.accepted: list[tuple[bytes, AlertmanagerWebhook, float]] = []
        self._ids: dict[str, int] = {}

    async def accept(self, raw: bytes, webhook: AlertmanagerWebhook, received_at: float) -> Accepted:
        identity = webhook.identity()
        if identity in self._ids:
            return Accepted(self._ids[identity], duplicate=True)
        self.accepted.append((raw, webhook, received_at))
        self._ids[identity] = len(self.accepted)
        return Accepted(len(self.accepted), duplicate=False)


class BrokenSink:
    """A sink whose disk is full."""

    async def accept(self, raw: bytes, webhook: AlertmanagerWebhook, received_at: float) -> Accepted:
        raise StoreError("sqlite: database or disk is full")


class Signals:
    """Counts how often the intake woke the worker."""

    def __init__(self, fail: bool = False) -> None:
        self.count = 0
        self.fail = fail

    def __call__(self) -> None:
        self.count += 1
        if self.fail:
            raise RuntimeError("worker is gone")


def app_for(sink: Any, signals: Signals | None = None, **options: Any) -> Starlette:
    route = alertmanager_route(sink, signals or Signals(), clock=lambda: 42.0, **options)
    return Starlette(routes=[route])


def client_for(app: Starlette) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://proxybot")


async def post(app: Starlette, body: Any, headers: Mapping[str, str | bytes] | None = None) -> httpx.Response:
    async with client_for(app) as client:
        merged = {**JSON, **(headers or {})}
        # As raw bytes, so a test can send header values that are not ASCII.
        raw = [(name.encode(), _latin1(value)) for name, value in merged.items()]
        return await client.post("/alertmanager", content=body, headers=raw)


def _latin1(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("latin-1")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def basic(user: str, password: str) -> dict[str, str]:
    encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {encoded}"}


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(f"sqlite:///{tmp_path / 'proxybot.db'}")
    yield opened
    await opened.close()


# -- acceptance and durability ------------


async def test_a_real_notification_is_stored_before_the_202(store: Store, tmp_path: Path) -> None:
    signals = Signals()
    response = await post(app_for(store, signals), samples.FIRING)
    assert response.status_code == 202
    assert response.json() == {"status": "accepted", "id": 1, "duplicate": False}
    # Committed: another connection to the file sees the row as soon as the answer is out.
    with closing(sqlite3.connect(tmp_path / "proxybot.db")) as conn:
        assert conn.execute("SELECT body, received_at FROM notifications").fetchall() == [
            (samples.FIRING, 42.0)
        ]
    assert signals.count == 1


async def test_the_same_notification_twice_is_one_row_and_one_signal(store: Store) -> None:
    signals = Signals()
    app = app_for(store, signals)
    first = await post(app, samples.FIRING)
    again = await post(app, samples.FIRING)
    assert (first.status_code, again.status_code) == (202, 202)
    assert again.json() == {"status": "accepted", "id": first.json()["id"], "duplicate": True}
    assert len(await store.pending()) == 1
    assert signals.count == 1


async def test_an_ha_peer_delivering_the_same_notification_is_a_duplicate(store: Store) -> None:
    app = app_for(store)
    await post(app, samples.FIRING)
    response = await post(app, samples.ha_peer_copy(samples.FIRING))
    assert response.status_code == 202
    assert response.json()["duplicate"] is True
    assert [stored.raw for stored in await store.pending()] == [samples.FIRING]


async def test_each_step_of_a_group_is_stored(store: Store) -> None:
    app = app_for(store)
    for body in (samples.FIRING, samples.ONE_RESOLVED, samples.ALL_RESOLVED):
        assert (await post(app, body)).status_code == 202
    assert [stored.raw for stored in await store.pending()] == [
        samples.FIRING,
        samples.ONE_RESOLVED,
        samples.ALL_RESOLVED,
    ]


async def test_truncated_alerts_are_accepted_and_recorded(store: Store) -> None:
    payload = samples.as_dict(samples.FIRING)
    payload["truncatedAlerts"] = 998
    response = await post(app_for(store), samples.encode(payload))
    assert response.status_code == 202
    [stored] = await store.pending()
    assert stored.webhook.truncated_alerts == 998


async def test_a_store_failure_is_a_503_that_logs_no_payload(caplog: pytest.LogCaptureFixture) -> None:
    signals = Signals()
    app = app_for(BrokenSink(), signals, auth=WebhookAuth(token=TOKEN))
    with caplog.at_level(logging.INFO):
        response = await post(app, samples.FIRING, bearer(TOKEN))
    assert response.status_code == 503
    assert response.json() == {"error": "the notification could not be stored; retry later"}
    assert signals.count == 0
    logged = caplog.text
    assert "database or disk is full" in logged
    assert "no fully healthy peers" not in logged
    assert TOKEN not in logged


async def test_a_failing_signal_does_not_undo_the_acceptance() -> None:
    sink = RecordingSink()
    response = await post(app_for(sink, Signals(fail=True)), samples.FIRING)
    assert response.status_code == 202
    assert len(sink.accepted) == 1


async def test_only_post_is_routed() -> None:
    async with client_for(app_for(RecordingSink())) as client:
        assert (await client.get("/alertmanager")).status_code == 405


# -- authentication ------------


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        (bearer(TOKEN), 202),
        ({"Authorization": f"bearer   {TOKEN} "}, 202),
        (bearer(TOKEN + "x"), 401),
        (bearer(TOKEN[:-1]), 401),
        (bearer(""), 401),
        ({}, 401),
        (basic("proxybot", TOKEN), 401),
        ({"Authorization": TOKEN}, 401),
    ],
)
async def test_a_bearer_token_is_required_when_configured(headers: dict[str, str], status: int) -> None:
    sink = RecordingSink()
    response = await post(app_for(sink, auth=WebhookAuth(token=TOKEN)), samples.FIRING, headers)
    assert response.status_code == status
    if status == 401:
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="proxybot"'
        assert response.json() == {"error": "unauthorized"}
        assert sink.accepted == []


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        (basic("alertmanager", "pa:ss"), 202),
        (basic("alertmanager", "pa:sS"), 401),
        (basic("alertmanagerx", "pa:ss"), 401),
        (basic("", ""), 401),
        ({"Authorization": "Basic not-base64!"}, 401),
        ({"Authorization": "Basic " + base64.b64encode(b"no-colon").decode()}, 401),
        ({"Authorization": "Basic ¡ñ".encode("latin-1")}, 401),
        (bearer("pa:ss"), 401),
        ({}, 401),
    ],
)
async def test_basic_credentials_are_required_when_configured(
    headers: dict[str, str | bytes], status: int
) -> None:
    auth = WebhookAuth(username="alertmanager", password="pa:ss")
    response = await post(app_for(RecordingSink(), auth=auth), samples.FIRING, headers)
    assert response.status_code == status
    if status == 401:
        assert response.headers["WWW-Authenticate"] == 'Basic realm="proxybot"'


async def test_no_configured_credentials_admit_anyone() -> None:
    assert (await post(app_for(RecordingSink()), samples.FIRING)).status_code == 202


class RecordingCompare:
    """Wraps the real constant-time comparison and records what it compared."""

    def __init__(self) -> None:
        self.calls: list[tuple[bytes, bytes]] = []

    def __call__(self, presented: bytes, expected: bytes) -> bool:
        self.calls.append((presented, expected))
        return hmac.compare_digest(presented, expected)


async def test_tokens_are_compared_in_constant_time() -> None:
    assert WebhookAuth(token=TOKEN).compare is hmac.compare_digest
    compare = RecordingCompare()
    app = app_for(RecordingSink(), auth=WebhookAuth(token=TOKEN, compare=compare))
    assert (await post(app, samples.FIRING, bearer("wrong"))).status_code == 401
    assert (await post(app, samples.FIRING, bearer(TOKEN))).status_code == 202
    assert compare.calls == [(b"wrong", TOKEN.encode()), (TOKEN.encode(), TOKEN.encode())]


async def test_both_halves_of_basic_credentials_are_always_compared() -> None:
    compare = RecordingCompare()
    auth = WebhookAuth(username="alertmanager", password="secret", compare=compare)
    response = await post(app_for(RecordingSink(), auth=auth), samples.FIRING, basic("intruder", "guess"))
    assert response.status_code == 401
    assert compare.calls == [(b"intruder", b"alertmanager"), (b"guess", b"secret")]


def test_auth_comes_from_the_alertmanager_settings() -> None:
    by_token = WebhookAuth.from_settings(AlertmanagerSettings(webhook_token=SecretStr(TOKEN)))
    assert (by_token.token, by_token.username, by_token.password) == (TOKEN, None, None)
    by_basic = WebhookAuth.from_settings(
        AlertmanagerSettings(webhook_username="am", webhook_password=SecretStr("pw"))
    )
    assert (by_basic.token, by_basic.username, by_basic.password) == (None, "am", "pw")
    assert not WebhookAuth.from_settings(AlertmanagerSettings()).configured


@pytest.mark.parametrize(
    "options",
    [{"token": ""}, {"username": "am"}, {"password": "pw"}, {"token": "t", "username": "a", "password": "p"}],
)
def test_unusable_credentials_are_refused_at_construction(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"webhook|username|token"):
        WebhookAuth(**options)


# -- content type and size ------------


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "", "json"])
async def test_a_body_that_is_not_declared_json_is_415(content_type: str) -> None:
    response = await post(app_for(RecordingSink()), samples.FIRING, {"Content-Type": content_type})
    assert response.status_code == 415


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "APPLICATION/JSON", "application/vnd.x+json"]
)
async def test_json_media_types_with_parameters_are_accepted(content_type: str) -> None:
    response = await post(app_for(RecordingSink()), samples.FIRING, {"Content-Type": content_type})
    assert response.status_code == 202


async def test_the_default_body_limit_is_one_mebibyte() -> None:
    assert DEFAULT_MAX_BODY_BYTES == 1024 * 1024
    padded = samples.FIRING + b" " * (DEFAULT_MAX_BODY_BYTES - len(samples.FIRING))
    assert (await post(app_for(RecordingSink()), padded)).status_code == 202
    assert (await post(app_for(RecordingSink()), padded + b" ")).status_code == 413


@pytest.mark.parametrize("declared", ["abc", "-1", "\u00b2", "1e3", ""])
async def test_a_content_length_that_is_not_a_number_is_400(declared: str) -> None:
    headers = {"Content-Length": declared}
    response = await post(app_for(RecordingSink()), CountingBody(chunks=1), headers)
    assert response.status_code == 400
    assert response.json() == {"error": "Content-Length is not a number"}


async def test_a_large_body_within_the_limit_is_parsed_and_stored() -> None:
    payload = samples.as_dict(samples.FIRING)
    payload["alerts"] = payload["alerts"] * 300
    body = samples.encode(payload)
    assert PARSE_INLINE_BYTES < len(body) < DEFAULT_MAX_BODY_BYTES
    sink = RecordingSink()
    assert (await post(app_for(sink), body)).status_code == 202
    assert len(sink.accepted[0][1].alerts) == 600


class CountingBody:
    """A request body streamed in chunks, counting how many the server pulled."""

    def __init__(self, chunks: int, size: int = 256) -> None:
        self.chunks = chunks
        self.size = size
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for _ in range(self.chunks):
            self.pulled += 1
            yield b" " * self.size


async def test_an_oversized_content_length_is_413_before_reading_the_body() -> None:
    body = CountingBody(chunks=40)
    headers = {"Content-Length": str(40 * 256)}
    response = await post(app_for(RecordingSink(), max_body_bytes=1000), body, headers)
    assert response.status_code == 413
    assert response.json() == {"error": "the body is larger than 1000 bytes"}
    assert body.pulled == 0


async def test_an_oversized_chunked_body_is_413_after_reading_just_past_the_limit() -> None:
    body = CountingBody(chunks=400)
    sink = RecordingSink()
    response = await post(app_for(sink, max_body_bytes=1000), body)
    assert response.status_code == 413
    # Three chunks of 256 fit in 1000 bytes; the fourth crosses the limit and nothing after it is read.
    assert body.pulled == 4
    assert sink.accepted == []


async def test_a_chunked_body_within_the_limit_is_accepted() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(samples.FIRING), 100):
            yield samples.FIRING[start : start + 100]

    sink = RecordingSink()
    assert (await post(app_for(sink), chunks())).status_code == 202
    assert sink.accepted[0][0] == samples.FIRING


# -- malformed bodies ------------


def _with(path: tuple[str | int, ...], value: Any) -> bytes:
    payload = samples.as_dict(samples.FIRING)
    node: Any = payload
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return samples.encode(payload)


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"{not json", "body: Invalid JSON"),
        (b"[]", "body: Input should be an object"),
        (_with(("alerts", 0, "startsAt"), "soon"), "alerts[0].startsAt: "),
        (_with(("alerts", 1, "labels", "target"), ["team-a/billing"]), "alerts[1].labels.target: "),
        (_with(("alerts",), []), "alerts: List should have at least 1 item"),
        (_with(("groupKey",), None), "groupKey: "),
        (_with(("truncatedAlerts",), 1.5), "truncatedAlerts: "),
        (_with(("version",), "5"), "version: expected '4' (Alertmanager webhook version 4)"),
    ],
)
async def test_a_malformed_body_is_400_naming_the_field(body: bytes, error: str) -> None:
    sink = RecordingSink()
    response = await post(app_for(sink), body)
    assert response.status_code == 400
    assert response.json()["error"].startswith(error)
    assert sink.accepted == []


# -- never a 500 ------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
content_types = st.sampled_from(["application/json", "text/plain", "", "application/json; charset=latin-1"])


NEVER_FAILS = app_for(RecordingSink(), max_body_bytes=2048)


def assert_answered(body: bytes, content_type: str = "application/json") -> None:
    # ASGITransport re-raises any exception from the app, so a crash fails here as well as a 5xx would.
    # asyncio.run per example: hypothesis drives synchronous tests.
    response = asyncio.run(post(NEVER_FAILS, body, {"Content-Type": content_type}))
    assert response.status_code < 500
    assert response.status_code in (202, 400, 413, 415)
    if response.status_code != 202:
        assert response.json()["error"]


@settings(max_examples=150)
@given(body=st.binary(max_size=3000), content_type=content_types)
def test_random_bytes_never_cause_a_5xx(body: bytes, content_type: str) -> None:
    assert_answered(body, content_type)


@settings(max_examples=150)
@given(value=json_values)
def test_random_json_never_causes_a_5xx(value: Any) -> None:
    assert_answered(json.dumps(value).encode())


@settings(max_examples=150)
@given(
    path=st.sampled_from(
        [
            ("alerts",),
            ("alerts", 0),
            ("alerts", 0, "labels"),
            ("alerts", 1, "endsAt"),
            ("groupKey",),
            ("status",),
        ]
    ),
    value=json_values,
)
def test_real_bodies_with_a_part_replaced_never_cause_a_5xx(path: tuple[str | int, ...], value: Any) -> None:
    assert_answered(_with(path, value))


# -- a real Alertmanager ------------------------------------------------------------------------------


@pytest.mark.slow
async def test_alertmanager_0_25_delivers_into_the_store_with_its_bearer_token(
    store: Store, tmp_path: Path
) -> None:
    accepted = asyncio.Event()
    app = Starlette(routes=[alertmanager_route(store, accepted.set, auth=WebhookAuth(token=TOKEN))])
    # A socket bound up front: its port is known at once and connections wait in its backlog until
    # uvicorn accepts them, so there is no start-up race to poll for.
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    config = uvicorn.Config(app, lifespan="off", ws="none", log_level="warning")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    labels = {
        "alertname": "ResourceProxyPeerCacheUnsynced",
        "target": "team-b/ledger",
        "severity": "critical",
    }
    try:
        url = f"http://127.0.0.1:{port}/alertmanager"
        with Alertmanager(tmp_path, url, bearer_token=TOKEN) as am:
            await asyncio.to_thread(
                am.post_alerts, [{"labels": {**labels, "group_version": "x.example.com/v1"}}]
            )
            await asyncio.wait_for(accepted.wait(), timeout=30)
    finally:
        server.should_exit = True
        await serving
        listener.close()
    [stored] = await store.pending()
    assert (
        stored.webhook.group_key == '{}:{alertname="ResourceProxyPeerCacheUnsynced", target="team-b/ledger"}'
    )
    assert stored.webhook.alerts[0].labels["group_version"] == "x.example.com/v1"
    assert stored.webhook.alerts[0].ends_at is None
    assert stored.raw.startswith(b'{"receiver":"proxybot","status":"firing"')


def _ten_thousand_alerts() -> bytes:
    payload = samples.as_dict(samples.FIRING)
    first = payload["alerts"][0]
    payload["alerts"] = [dict(first, fingerprint=f"{n:016x}") for n in range(10_000)]
    return json.dumps(payload).encode()


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (b"[" * 200_000 + b"]" * 200_000, 400, "recursion limit exceeded"),
        (b'{"a":' * 50_000 + b"1" + b"}" * 50_000, 400, "recursion limit exceeded"),
        (b'{"version": "4", "groupKey": "\xff\xfe"}', 400, "invalid unicode"),
        (_ten_thousand_alerts(), 413, "larger than"),
    ],
    ids=["nested-arrays", "nested-objects", "invalid-utf8", "10000-alerts"],
)
async def test_hostile_bodies_are_a_clear_4xx_and_store_nothing(body: bytes, status: int, says: str) -> None:
    sink = RecordingSink()
    response = await post(app_for(sink), body)
    assert response.status_code == status
    assert says in response.json()["error"]
    assert sink.accepted == []
