"""Bad and unusual webhooks through the running `proxybot serve` (the intake's unit tests cover the detail).

Refusals (401, 413, 415, 400) store nothing and never 5xx; a notification with truncated alerts, an
alert proxybot does not know and an alert no configured cluster matches are all posted, plainly, to
`slack.default_channel`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sim.server import SimServer
from sim.slack_api import FakeSlack, Message, iter_texts
from tests.e2e.stack import (
    BOT_TOKEN,
    CHANNEL,
    WEBHOOK_TOKEN,
    BotProcess,
    StoreView,
    alert_entry,
    auth,
    notification,
    now,
    proxy_alert,
    write_bot_config,
)
from tests.waiting import wait_until

TIMEOUT = 20.0
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BotProcess, FakeSlack, StoreView]]:
    workdir = tmp_path_factory.mktemp("edges")
    with (
        SimServer(scenario="healthy", speed=20) as sim,
        FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack,
    ):
        config = write_bot_config(sim, workdir, slack.api_url)
        with BotProcess(config, workdir / "bot.log") as bot:
            yield bot, slack, StoreView(workdir / "bot.db")


def post(bot: BotProcess, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{bot.url}/alertmanager", content=body, headers=headers, timeout=10.0)


def body_of(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def text_of(message: Message) -> str:
    return "\n".join([message.text, *iter_texts(message.blocks)])


def posted_about(slack: FakeSlack, needle: str) -> Message:
    def found() -> Message | None:
        return next((m for m in slack.top_level(CHANNEL) if needle in text_of(m)), None)

    wait_until(found, TIMEOUT, f"a message about {needle}")
    message = found()
    assert message is not None
    return message


VALID = body_of(notification([alert_entry(proxy_alert(target="platform/edge-valid"), now())]))


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        pytest.param(JSON, VALID, 401, id="no-credentials"),
        pytest.param({**JSON, "Authorization": "Bearer wrong"}, VALID, 401, id="wrong-token"),
        pytest.param({**JSON, "Authorization": f"Basic {WEBHOOK_TOKEN}"}, VALID, 401, id="wrong-scheme"),
        pytest.param({**auth(), "Content-Type": "text/plain"}, VALID, 415, id="not-json"),
        pytest.param({**auth(), **JSON}, b"{" * 10, 400, id="malformed-json"),
        pytest.param({**auth(), **JSON}, b"[]", 400, id="not-an-object"),
        pytest.param({**auth(), **JSON}, b'{"version": "4"}', 400, id="missing-fields"),
        pytest.param({**auth(), **JSON}, b"\xff\xfe\x00", 400, id="not-utf8"),
        pytest.param({**auth(), **JSON}, b" " * (1024 * 1024 + 1), 413, id="oversize"),
    ],
)
def test_refusals_store_nothing(
    running: tuple[BotProcess, FakeSlack, StoreView], headers: dict[str, str], body: bytes, status: int
) -> None:
    bot, _, store = running
    before = store.notifications()
    response = post(bot, body, headers)
    assert response.status_code == status, response.text
    assert response.json()["error"]
    assert store.notifications() == before
    if status == 401:
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_an_oversize_body_without_content_length_is_cut_off(
    running: tuple[BotProcess, FakeSlack, StoreView],
) -> None:
    bot, _, store = running
    before = store.notifications()

    def chunks() -> Iterator[bytes]:
        for _ in range(40):
            yield b" " * 65536  # 2.5 MiB in all, streamed without a declared length

    response = httpx.post(f"{bot.url}/alertmanager", content=chunks(), headers={**auth(), **JSON}, timeout=10)
    assert response.status_code == 413
    assert store.notifications() == before


def test_a_missing_field_is_named_in_the_400(running: tuple[BotProcess, FakeSlack, StoreView]) -> None:
    bot, _, _ = running
    payload = notification([alert_entry(proxy_alert(target="platform/edge-400"), now())])
    del payload["alerts"][0]["startsAt"]
    response = post(bot, body_of(payload), {**auth(), **JSON})
    assert response.status_code == 400
    assert "alerts[0].startsAt" in response.json()["error"]


def test_truncated_alerts_are_accepted_and_said_in_the_message(
    running: tuple[BotProcess, FakeSlack, StoreView],
) -> None:
    bot, slack, _ = running
    payload = notification([alert_entry(proxy_alert(target="platform/edge-truncated"), now())], truncated=7)
    assert post(bot, body_of(payload), {**auth(), **JSON}).status_code == 202
    message = posted_about(slack, "platform/edge-truncated")
    assert "Alertmanager left 7 more alerts out" in text_of(message)
    assert "truncated" in bot.log_text()


def test_an_alert_proxybot_does_not_know_is_posted_plainly(
    running: tuple[BotProcess, FakeSlack, StoreView],
) -> None:
    bot, slack, _ = running
    labels = proxy_alert("TeamAHighMemory", target="platform/edge-unknown", severity="warning")
    payload = notification([alert_entry(labels, now())])
    assert post(bot, body_of(payload), {**auth(), **JSON}).status_code == 202
    message = posted_about(slack, "TeamAHighMemory")
    assert message.channel == slack.channel_id(CHANNEL)
    assert "platform/edge-unknown" in text_of(message)


def test_an_alert_no_cluster_matches_goes_to_the_default_channel(
    running: tuple[BotProcess, FakeSlack, StoreView],
) -> None:
    bot, slack, _ = running
    labels = proxy_alert(target="elsewhere/unmatched", cluster="team-zzz")
    payload = notification([alert_entry(labels, now())])
    assert post(bot, body_of(payload), {**auth(), **JSON}).status_code == 202
    message = posted_about(slack, "elsewhere/unmatched")
    assert message.channel == slack.channel_id(CHANNEL)
    assert "no configured cluster matches" in text_of(message)
