"""Slack inbound: signed requests through the real Starlette route and bolt's dispatch, and Socket Mode.

The config, button payloads, fixtures and the Socket Mode fake are in tests/fakes/slack_app.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest
from starlette.applications import Starlette

from bot.app import Deps, create_app
from bot.compose import slack_endpoints
from bot.errors import ConfigError
from bot.inbound.slack import MAX_BODY_BYTES, build_slack_app
from bot.render.slack import ACTION_SILENCE
from bot.store import Store
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_app import (
    APP_TOKEN,
    BOB,
    SocketSlack,
    button_body,
    fake,
    make_settings,
    ref_value,
    store,
)
from tests.fakes.slack_requests import BOT_TOKEN, SIGNING_SECRET, asgi, signed
from tests.waiting import eventually

__all__ = ["fake", "store"]  # fixtures


async def http_app(tmp_path: Path, fake: FakeSlack, store: Store) -> Starlette:
    settings = make_settings(tmp_path, fake.api_url)
    deps = Deps(settings=settings, store=store)
    routes, workers = slack_endpoints(settings, deps)
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


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        # Unsigned, a payload that is not JSON: bolt parsed it before verifying and answered 500.
        ("payload=%7Bnot-json\nINFO forged log line", {"Content-Type": "application/x-www-form-urlencoded"}),
        # A timestamp that is not a number: slack_sdk's int() raised, 500.
        ("payload=%7B%7D", {"X-Slack-Request-Timestamp": "abc", "X-Slack-Signature": "v0=00"}),
        ("payload=%7B%7D", {"X-Slack-Request-Timestamp": "1e3", "X-Slack-Signature": "v0=00"}),
        # Genuine but too old (clock skew): its response_url, a capability, was logged by bolt.
        ("stale", {}),
    ],
)
async def test_an_unverified_request_is_401_before_anything_parses_or_logs_its_body(
    tmp_path: Path,
    fake: FakeSlack,
    store: Store,
    caplog: pytest.LogCaptureFixture,
    body: str,
    headers: dict[str, str],
) -> None:
    caplog.set_level(logging.DEBUG)
    if body == "stale":
        body = button_body(ACTION_SILENCE, ref_value(), fake.response_url("capability-k1"))
        headers = signed(body, skew=-400)
    async with asgi(await http_app(tmp_path, fake, store)) as http:
        answer = await http.post("/slack/events", content=body, headers=headers)
    assert answer.status_code == 401
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "payload" not in logged
    assert "capability-k1" not in logged
    assert "forged" not in logged
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
    routes, _ = slack_endpoints(settings, Deps(settings, store), registrations=[seen.append])
    assert len(seen) == 1
    assert len(routes) == 1


# -- Socket Mode ---------------------------------------------------------------------------------------


async def test_socket_mode_connects_with_the_app_token_and_acks_envelopes(
    tmp_path: Path, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    slack = SocketSlack()
    runner = await slack.serve()
    settings = make_settings(tmp_path, f"{slack.base_url}/api/", app_token=APP_TOKEN)
    # Socket Mode requests are not signed: the signing secret is not needed there.
    settings = settings.model_copy(
        update={"slack": settings.slack.model_copy(update={"signing_secret": None})}
    )
    routes, workers = slack_endpoints(settings, Deps(settings, store))
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
