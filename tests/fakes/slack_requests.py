"""Signed Slack requests as Slack sends them, for tests and benchmarks that push them through the real route.

The signing follows Slack's scheme (`v0=` HMAC-SHA256 of `v0:timestamp:body`), which bolt verifies.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from urllib.parse import urlencode

import httpx
from starlette.types import ASGIApp

from tests.waiting import eventually as eventually  # still imported from here by test_actions, test_commands

BOT_TOKEN = "xoxb-test-token"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TEAM = "T0TEAM001"
_PRESSES = (f"1700000100.{n:06d}" for n in itertools.count(1))  # `action_ts` of each press


def signed(body: str, *, secret: str = SIGNING_SECRET, skew: float = 0.0) -> dict[str, str]:
    """Headers Slack sends with a form-encoded body, signed with `secret` at now + `skew` seconds."""
    timestamp = str(int(time.time() + skew))
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return {
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": f"v0={digest}",
        "Content-Type": "application/x-www-form-urlencoded",
    }


def command_body(
    text: str,
    response_url: str,
    *,
    user: str,
    channel: str,
    channel_name: str,
    user_name: str = "someone",
    command: str = "/proxy",
) -> str:
    """A slash-command payload as Slack posts it, form-encoded."""
    return urlencode(
        {
            "token": "legacy-verification-token",
            "team_id": TEAM,
            "team_domain": "example",
            "channel_id": channel,
            "channel_name": channel_name,
            "user_id": user,
            "user_name": user_name,
            "command": command,
            "text": text,
            "api_app_id": "A0APP0001",
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": "1.2.3",
        }
    )


def button_body(
    action_id: str,
    value: str,
    response_url: str,
    *,
    user: str,
    channel: str,
    channel_name: str,
    message_ts: str,
    user_name: str = "someone",
    trigger_id: str = "1.2.3",
) -> str:
    """A `block_actions` payload for a button on a message, form-encoded."""
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": user_name, "team_id": TEAM},
        "api_app_id": "A0APP0001",
        "team": {"id": TEAM, "domain": "example"},
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel},
        "trigger_id": trigger_id,
        "channel": {"id": channel, "name": channel_name},
        "message": {"type": "message", "ts": message_ts, "text": "FIRING"},
        "response_url": response_url,
        "actions": [
            {
                "action_id": action_id,
                "block_id": "b",
                "type": "button",
                "value": value,
                "action_ts": next(_PRESSES),
            }
        ],
    }
    return urlencode({"payload": json.dumps(payload)})


def asgi(app: ASGIApp) -> httpx.AsyncClient:
    """An HTTP client calling the app in-process."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bot")
