"""Verified after resolve end to end: a real Alertmanager (0.25) delivers to `proxybot serve` (SQLite), which
posts to the strict fake Slack. `resolution.verify_after` (2 s here, on the bot's clock) after a group
resolves, the bot probes its target again through the client and checks the path, and says in the
message's thread whether the resolve held: "✅ verified" when the simulator's target answers, "⚠️ resolved,
but the probe … still fails" while it is still down (which reopens nothing).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from sim.server import SimServer
from sim.slack_api import FakeSlack, Message, iter_texts
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import (
    CHANNEL,
    CLIENT,
    TARGET,
    WEBHOOK_TOKEN,
    BotProcess,
    StoreView,
    now,
    proxy_alert,
    proxybot_command,
    rfc3339,
    summary_of,
    wait_degraded,
    write_bot_config,
)
from tests.e2e.test_alertmanager_flow import ROUTE
from tests.harness.alertmanager import Alertmanager
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

TIMEOUT = 30.0
VERIFY_AFTER = 2.0
VERIFIED = re.compile(rf"✅ verified \d\d:\d\d UTC: probe 200 in \d+ ms from {CLIENT}, (direct|relayed) path")


@pytest.fixture
def scenario() -> str:
    """The simulator's scenario (a test parametrizes it): `healthy` answers, `target-down` does not."""
    return "healthy"


@pytest.fixture
def sim(scenario: str) -> Iterator[SimServer]:
    with SimServer(scenario=scenario, speed=20) as srv:
        yield srv


@pytest.fixture
def bot_config(tmp_path: Path, sim: SimServer, slack: FakeSlack) -> Path:
    path = write_bot_config(sim, tmp_path, slack.api_url)
    doc = yaml.safe_load(path.read_text())
    doc["resolution"] = {"verify_after": f"{VERIFY_AFTER:g}s"}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture
def bot(sim: SimServer, scenario: str, bots: BotLauncher) -> BotProcess:
    if scenario == "target-down":
        wait_degraded(sim)
    return bots.start(command=proxybot_command())


@pytest.fixture
def alertmanager(tmp_path: Path, bot: BotProcess) -> Iterator[Alertmanager]:
    workdir = tmp_path / "alertmanager"
    workdir.mkdir()
    with Alertmanager(workdir, f"{bot.url}/alertmanager", WEBHOOK_TOKEN, route=ROUTE) as am:
        yield am


@pytest.fixture
def store(tmp_path: Path, bots: BotLauncher) -> StoreView:
    return StoreView(tmp_path / "bot.db")


def fire_and_resolve(slack: FakeSlack, alertmanager: Alertmanager) -> tuple[Message, float]:
    """The alert fires, is posted, then resolves; its message and when the resolve was sent."""
    labels = proxy_alert(target=TARGET, severity="warning")
    alert = {"labels": labels, "annotations": {"summary": summary_of(labels)}, "startsAt": rfc3339(now())}
    alertmanager.post_alerts([alert])
    wait_until(lambda: slack.top_level(CHANNEL), TIMEOUT, "the group's message")
    [message] = slack.top_level(CHANNEL)
    resolved_at = time.time()
    alertmanager.post_alerts([{**alert, "endsAt": rfc3339(now())}])
    wait_until(lambda: message.text.startswith("RESOLVED"), TIMEOUT, "the resolved edit")
    return message, resolved_at


def verified_count(bot: BotProcess, outcome: str) -> float:
    """Verifications the bot settled with `outcome`, from its `/metrics` (0 before the first)."""
    sample = f'proxybot_verifications_total{{outcome="{outcome}"}} '
    text = httpx.get(f"{bot.url}/metrics", timeout=5.0).text
    return next((float(line.split()[-1]) for line in text.splitlines() if line.startswith(sample)), 0.0)


def verification_replies(slack: FakeSlack, message: Message) -> list[Message]:
    return [m for m in slack.thread(CHANNEL, message.ts) if m.text.startswith(("✅", "⚠️", "🔁"))]


def test_a_resolve_that_holds_is_verified_in_its_thread_at_verify_after(
    slack: FakeSlack, bot: BotProcess, alertmanager: Alertmanager, store: StoreView
) -> None:
    message, resolved_at = fire_and_resolve(slack, alertmanager)
    [reply] = wait_until(lambda: verification_replies(slack, message), TIMEOUT, "the verification reply")
    assert time.time() >= resolved_at + VERIFY_AFTER, "verified before verify_after"
    assert VERIFIED.fullmatch(reply.text), reply.text
    assert reply.thread_ts == message.ts
    assert not reply.broadcast
    assert [outcome for _, outcome, _ in store.verifications()] == ["verified"]
    assert message.text.startswith("RESOLVED"), "the verification reopened the message"
    assert slack.top_level(CHANNEL) == [message], "the verification made a message of its own"
    # The resolved message says it too, and the bot counts it.
    shown = wait_until(
        lambda: next((t for t in iter_texts(message.blocks) if t.startswith("✅ verified")), None),
        TIMEOUT,
        "the verification's line on the resolved message",
    )
    assert VERIFIED.fullmatch(shown), shown
    wait_until(lambda: verified_count(bot, "verified") == 1, TIMEOUT, "proxybot_verifications_total")


@pytest.mark.parametrize("scenario", ["target-down"])
def test_a_target_still_down_at_verify_after_is_reported_and_nothing_reopens(
    slack: FakeSlack, bot: BotProcess, alertmanager: Alertmanager, store: StoreView
) -> None:
    message, resolved_at = fire_and_resolve(slack, alertmanager)
    [reply] = wait_until(lambda: verification_replies(slack, message), TIMEOUT, "the verification reply")
    assert time.time() >= resolved_at + VERIFY_AFTER, "verified before verify_after"
    text = reply.text
    assert text.startswith(f"⚠️ resolved, but the probe from {CLIENT} still fails ("), text
    assert [outcome for _, outcome, _ in store.verifications()] == ["unverified"]
    assert message.text.startswith("RESOLVED"), "the unverified resolve reopened the message"
    wait_until(
        lambda: any(t.startswith("⚠️ resolved, but the probe") for t in iter_texts(message.blocks)),
        TIMEOUT,
        "the unverified line on the resolved message",
    )
    assert verified_count(bot, "unverified") == 1
    assert slack.top_level(CHANNEL) == [message]
