"""Slack inbound test kit: a bot config for Slack, button presses as Slack posts them, a Socket Mode fake.

    make_settings(tmp_path, api_url)       the bot's settings against a fake Slack Web API (HTTP mode, or
                                           Socket Mode with `app_token`)
    button_body(action_id, value, url)     a button press on an alert in #alerts, by Alice unless told
    fake, store                            fixtures: a strict fake Slack Web API, an open SQLite store
    SocketSlack                            `apps.connections.open`, one WebSocket, response URLs

Signing, slash-command bodies and `asgi` are in tests/fakes/slack_requests.py; `eventually` is in
tests/waiting.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot.domain.messages import ActionRef
from bot.store import Store, open_store
from config.loader import parse_config
from config.settings import Settings
from tests.fakes import slack_requests
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import BOT_TOKEN, SIGNING_SECRET

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
    trigger_id: str = "1.2.3",
) -> str:
    """A button press on an alert message in #alerts, by Alice unless told otherwise."""
    name = "alice" if user == ALICE else "bob"
    where = {"channel": channel, "channel_name": channel_name, "message_ts": message_ts}
    return slack_requests.button_body(
        action_id, value, response_url, user=user, user_name=name, trigger_id=trigger_id, **where
    )


def ref_value(cluster: str | None = "team-a", target: str | None = "platform/crd-store") -> str:
    return ActionRef.for_group(cluster, target, GROUP_KEY).encode()


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=BOT_TOKEN, channels={ALERTS: "#alerts"}) as slack:
        yield slack


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(str(tmp_path / "bot.db"))
    yield opened
    await opened.close()


class SocketSlack:
    """A fake Slack for Socket Mode: `apps.connections.open`, one WebSocket, response URLs."""

    def __init__(self) -> None:
        self.acks: asyncio.Queue[Mapping[str, Any]] = asyncio.Queue()
        self.responses: list[Mapping[str, Any]] = []
        self.opened_with: list[str] = []
        self.socket: web.WebSocketResponse | None = None
        self.connected = asyncio.Event()
        self.base_url = ""

    async def serve(self) -> web.AppRunner:
        """Listen on a free loopback port (`base_url`); the caller cleans the runner up."""
        runner = web.AppRunner(self.app())
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"
        return runner

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
