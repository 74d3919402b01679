"""Slack inbound: signed requests through the real Starlette route and bolt's dispatch, and Socket Mode.

The helpers at the top (config, signing, button payloads) are shared with tests/handlers/test_actions.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import aiohttp
import httpx
import pytest
from aiohttp import web
from starlette.applications import Starlette

from bot.app import Deps, create_app
from bot.domain.messages import ActionRef
from bot.errors import ConfigError
from bot.inbound.slack import MAX_BODY_BYTES, build_slack_app, slack_routes_and_workers
from bot.render.slack import ACTION_SILENCE
from bot.store import Store, open_store
from config.loader import parse_config
from config.settings import Settings
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import BOT_TOKEN, SIGNING_SECRET, signed

APP_TOKEN = "xapp-1-A0TEST-123-socketsecret"
ALERTS = "C0ALERTS1"
GROUP_KEY = '{}:{alertname="ResourceProxyNoHealthyPeers", target="platform/crd-store"}'
ALICE, BOB = "U0ALICE01", "U0BOB0001"

CONFIG = """
slack: {{bot_token: "{bot}", signing_secret: "{secret}", api_url: "{api}", default_channel: "#alerts"{extra}}}
alertmanager: {{url: "http://127.0.0.1:9"}}
clusters:
  - name: team-a
    kubeconfig: team-a.yaml
    match: {{cluster: team-a}}
    targets:
      - name: platform/crd-store
        group_versions: [example.com/v1]
        probe: {{group_version: example.com/v1, resource: widgets, namespace: default}}
      - name: platform/other
        group_versions: [example.com/v1]
        probe: {{group_version: example.com/v1, resource: widgets, namespace: default}}
digest: {{enabled: false}}
access:
  silencers: ["{alice}"]
"""


def make_settings(tmp_path: Path, api_url: str, *, app_token: str | None = None) -> Settings:
    extra = f', app_token: "{app_token}"' if app_token else ""
    text = CONFIG.format(bot=BOT_TOKEN, secret=SIGNING_SECRET, api=api_url, extra=extra, alice=ALICE)
    return parse_config(text, base_dir=tmp_path, env={}, purpose="demo").settings


def button_body(
    action_id: str,
    value: str,
    response_url: str,
    *,
    user: str = ALICE,
    channel: str = ALERTS,
    channel_name: str = "alerts",
    message_ts: str = "1700000001.000100",
) -> str:
    """A `block_actions` payload as Slack posts it for a button on a message, form-encoded."""
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": "alice" if user == ALICE else "bob", "team_id": "T0TEAM001"},
        "api_app_id": "A0APP0001",
        "team": {"id": "T0TEAM001", "domain": "example"},
        "container": {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel,
            "is_ephemeral": False,
        },
        "trigger_id": "1.2.3",
        "channel": {"id": channel, "name": channel_name},
        "message": {"type": "message", "ts": message_ts, "text": "FIRING: ResourceProxyNoHealthyPeers"},
        "response_url": response_url,
        "actions": [
            {"action_id": action_id, "block_id": "proxy_alert_actions", "type": "button", "value": value}
        ],
    }
    return urlencode({"payload": json.dumps(payload)})


def ref_value(cluster: str | None = "team-a", target: str | None = "platform/crd-store") -> str:
    return ActionRef.for_group(cluster, target, GROUP_KEY).encode()


def asgi(app: Starlette) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bot")


async def eventually(check: Callable[[], Any], what: str, timeout: float = 10.0) -> Any:
    """Wait (bounded) until `check()` is truthy: the buttons' work runs after the ack."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        await asyncio.sleep(0.02)
    return found


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=BOT_TOKEN, channels={ALERTS: "#alerts"}) as slack:
        yield slack


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(str(tmp_path / "bot.db"))
    yield opened
    await opened.close()


# -- tests ---------------------------------------------------------------------------------------------


async def http_app(tmp_path: Path, fake: FakeSlack, store: Store) -> Starlette:
    settings = make_settings(tmp_path, fake.api_url)
    deps = Deps(settings=settings, store=store)
    routes, workers = slack_routes_and_workers(settings, deps)
    assert [getattr(r, "path", None) for r in routes] == ["/slack/events"]
    return create_app(deps, workers, extra=routes)


async def test_signed_button_press_is_acknowledged_and_answered(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    body = button_body(ACTION_SILENCE, ref_value(), fake.response_url("k1"), user=BOB)
    async with asgi(await http_app(tmp_path, fake, store)) as http:
        answer = await http.post("/slack/events", content=body, headers=signed(body))
        assert (answer.status_code, answer.text) == (200, "")
        # Bob is no silencer: the refusal reaches him through response_url, after the ack.
        [response] = await eventually(lambda: fake.responses, "the refusal")
    assert response["key"] == "k1"
    assert "not in `access.silencers`" in response["text"]


@pytest.mark.parametrize(
    "headers",
    [
        {"secret": "not-the-signing-secret"},
        {"skew": -310},  # outside bolt's five-minute window, either way
        {"skew": 310},
    ],
)
async def test_bad_signature_and_stale_timestamp_are_401(
    tmp_path: Path, fake: FakeSlack, store: Store, headers: dict[str, Any]
) -> None:
    body = button_body(ACTION_SILENCE, ref_value(), fake.response_url("k1"))
    async with asgi(await http_app(tmp_path, fake, store)) as http:
        answer = await http.post("/slack/events", content=body, headers=signed(body, **headers))
        unsigned = await http.post("/slack/events", content=body, headers={"Content-Type": "text/plain"})
        tampered = await http.post("/slack/events", content=body + "&x=1", headers=signed(body))
    assert [answer.status_code, unsigned.status_code, tampered.status_code] == [401, 401, 401]
    assert fake.responses == []
    assert fake.calls == []


async def test_bodies_bolt_cannot_take_are_refused_not_500(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    async with asgi(await http_app(tmp_path, fake, store)) as http:
        latin = await http.post("/slack/events", content=b"payload=caf\xe9", headers=signed("payload=caf"))
        huge_body = "x" * (MAX_BODY_BYTES + 1)
        huge = await http.post("/slack/events", content=huge_body, headers=signed(huge_body))

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(MAX_BODY_BYTES // 65536 + 2):
                yield b"y" * 65536

        streamed = await http.post("/slack/events", content=chunks(), headers=signed(""))
        get = await http.get("/slack/events")
    assert [latin.status_code, huge.status_code, streamed.status_code, get.status_code] == [
        400,
        413,
        413,
        405,
    ]


async def test_url_verification_is_answered_for_a_signed_request(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    body = json.dumps({"type": "url_verification", "token": "t", "challenge": "abc123"})
    headers = {**signed(body), "Content-Type": "application/json"}
    async with asgi(await http_app(tmp_path, fake, store)) as http:
        answer = await http.post("/slack/events", content=body, headers=headers)
    assert (answer.status_code, answer.json()) == (200, {"challenge": "abc123"})


async def test_no_token_or_secret_is_logged(
    tmp_path: Path, fake: FakeSlack, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    body = button_body(ACTION_SILENCE, ref_value(), fake.response_url("k1"))
    async with asgi(await http_app(tmp_path, fake, store)) as http:
        await http.post("/slack/events", content=body, headers=signed(body))
        await http.post("/slack/events", content=body, headers=signed(body, secret="wrong"))
        await eventually(lambda: fake.responses, "the answer")
    assert caplog.records, "debug logging was captured"
    for secret in (BOT_TOKEN, SIGNING_SECRET):
        assert secret not in caplog.text


def test_http_mode_needs_the_signing_secret(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, "http://127.0.0.1:9/api/")
    without = settings.model_copy(
        update={"slack": settings.slack.model_copy(update={"signing_secret": None})}
    )
    with pytest.raises(ConfigError, match=r"slack\.signing_secret"):
        build_slack_app(without, [])
    no_token = settings.model_copy(update={"slack": settings.slack.model_copy(update={"bot_token": None})})
    with pytest.raises(ConfigError, match=r"slack\.bot_token"):
        build_slack_app(no_token, [])


async def test_registrations_are_called_with_the_app(tmp_path: Path, fake: FakeSlack, store: Store) -> None:
    settings = make_settings(tmp_path, fake.api_url)
    seen: list[object] = []
    routes, _ = slack_routes_and_workers(settings, Deps(settings, store), registrations=[seen.append])
    assert len(seen) == 1
    assert len(routes) == 1


# -- Socket Mode ---------------------------------------------------------------------------------------


class SocketSlack:
    """A fake Slack for Socket Mode: `apps.connections.open`, one WebSocket, response URLs."""

    def __init__(self) -> None:
        self.acks: asyncio.Queue[Mapping[str, Any]] = asyncio.Queue()
        self.responses: list[Mapping[str, Any]] = []
        self.opened_with: list[str] = []
        self.socket: web.WebSocketResponse | None = None
        self.connected = asyncio.Event()
        self.base_url = ""

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/api/apps.connections.open", self.open)
        app.router.add_post("/api/auth.test", self.auth_test)
        app.router.add_get("/link", self.link)
        app.router.add_post("/response/{key}", self.response)
        return app

    async def open(self, request: web.Request) -> web.Response:
        self.opened_with.append(request.headers.get("Authorization", ""))
        return web.json_response({"ok": True, "url": f"{self.base_url.replace('http', 'ws')}/link"})

    async def auth_test(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "user_id": "UBOT", "bot_id": "BBOT", "team_id": "T0TEAM001"})

    async def link(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self.socket = socket
        await socket.send_json({"type": "hello", "num_connections": 1})
        self.connected.set()
        async for message in socket:
            if message.type is aiohttp.WSMsgType.TEXT:
                await self.acks.put(json.loads(message.data))
        return socket

    async def response(self, request: web.Request) -> web.Response:
        self.responses.append(await request.json())
        return web.json_response({"ok": True})


async def test_socket_mode_connects_with_the_app_token_and_acks_envelopes(
    tmp_path: Path, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    slack = SocketSlack()
    runner = web.AppRunner(slack.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    slack.base_url = f"http://127.0.0.1:{port}"
    settings = make_settings(tmp_path, f"{slack.base_url}/api/", app_token=APP_TOKEN)
    # Socket Mode requests are not signed: the signing secret is not needed there.
    settings = settings.model_copy(
        update={"slack": settings.slack.model_copy(update={"signing_secret": None})}
    )
    routes, workers = slack_routes_and_workers(settings, Deps(settings, store))
    assert routes == []
    tasks = [asyncio.create_task(work()) for work in workers]
    try:
        await asyncio.wait_for(slack.connected.wait(), timeout=10)
        assert slack.opened_with == [f"Bearer {APP_TOKEN}"]
        body = button_body(ACTION_SILENCE, ref_value(), f"{slack.base_url}/response/k1", user=BOB)
        payload = json.loads(dict(parse_qsl(body))["payload"])
        assert slack.socket is not None
        await slack.socket.send_json(
            {
                "envelope_id": "env-1",
                "type": "interactive",
                "payload": payload,
                "accepts_response_payload": False,
            }
        )
        ack = await asyncio.wait_for(slack.acks.get(), timeout=10)
        assert ack["envelope_id"] == "env-1"
        [response] = await eventually(lambda: slack.responses, "the refusal over response_url")
        assert "not in `access.silencers`" in response["text"]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await runner.cleanup()
    for secret in (APP_TOKEN, BOT_TOKEN):
        assert secret not in caplog.text
