"""`proxybot serve` on a config that names only the platform: the fleet discovered through the simulator's
platform stand-in, an alert for a discovered target posted with its live state, a target the platform
gains picked up within `platform.refresh` with no restart, a key the platform refuses stopping the start."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from sim.scenarios import GROWS_AT, LATE_GV, LATE_JOINER
from sim.server import ApiFault, SimServer
from sim.slack_api import FakeSlack, iter_texts
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import CHANNEL, REPO, alert_entry, auth, notification, now, proxy_alert, write_bot_config
from tests.waiting import wait_until

REFRESH = 5  # the shortest `platform.refresh`


@pytest.fixture
def platform_sim() -> Iterator[SimServer]:
    # fleet-grows at 10x, held at t=20 until the test lets it go: platform/late-joiner joins at t=30.
    with SimServer(scenario="fleet-grows", speed=10, platform=True, hold_at=20.0) as srv:
        yield srv


@pytest.fixture
def platform_bots(tmp_path: Path, platform_sim: SimServer, slack: FakeSlack) -> Iterator[BotLauncher]:
    config = write_bot_config(platform_sim, tmp_path, slack.api_url, refresh=REFRESH)
    doc = yaml.safe_load(config.read_text())
    assert "clusters" not in doc
    assert doc["platform"]["url"] == platform_sim.base_url
    launcher = BotLauncher(config, tmp_path)
    try:
        yield launcher
    finally:
        launcher.close()


def _post(url: str, labels: dict[str, str]) -> None:
    body = json.dumps(notification([alert_entry(labels, now())])).encode()
    headers = {**auth(), "Content-Type": "application/json"}
    assert httpx.post(f"{url}/alertmanager", content=body, headers=headers, timeout=10).status_code == 202


def _details(slack: FakeSlack, target: str) -> str:
    """The details reply of the message about `target`, once there."""
    messages = [m for m in slack.top_level(CHANNEL) if target in "\n".join(iter_texts(m.blocks))]
    if not messages:
        return ""
    replies = slack.thread(CHANNEL, messages[0].ts)
    return "\n".join(iter_texts(replies[0].blocks)) if replies else ""


def test_an_alert_for_a_discovered_target_and_a_target_the_platform_gains(
    platform_sim: SimServer, slack: FakeSlack, platform_bots: BotLauncher
) -> None:
    bot = platform_bots.start()
    _post(bot.url, proxy_alert(target="platform/crd-store"))
    text = wait_until(lambda: _details(slack, "platform/crd-store"), 30.0, "the crd-store alert's details")
    assert "no configured cluster" not in text
    assert "healthy 1, quarantined 0" in text  # team-a's peer cache, read through the platform's path

    assert "fleet: 2 clients" in bot.log_text()  # team-a and team-misconfigured: no late joiner yet
    platform_sim.hold_at = None  # the simulated clock catches up with the wall: past t=30 at once
    wait_until(lambda: platform_sim.world.now() > GROWS_AT, 30.0, "the late joiner to join")
    # Within `refresh` (and the rebuild), the bot serves the grown fleet, with no change to its config.
    wait_until(lambda: "fleet: changed" in bot.log_text(), 4 * REFRESH + 10, "the fleet change in the log")
    # Rebuilt in the same process: its second start logs its cost again, then it answers /healthz.
    wait_until(lambda: bot.log_text().count("serve: RSS") >= 2, 30.0, "the bot rebuilt over the new fleet")
    wait_until(lambda: _healthy_reply(bot.url), 30.0, "the rebuilt bot to answer")
    assert bot.running
    late = f"platform/{LATE_JOINER}"
    _post(bot.url, proxy_alert(target=late, group_version=LATE_GV))
    text = wait_until(lambda: _details(slack, late), 30.0, "the late joiner's details")
    assert "no configured cluster" not in text
    assert f"{late} {LATE_GV}: peers: healthy 1" in text or "healthy 1, quarantined 0" in text


def _healthy_reply(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_key_the_platform_refuses_stops_the_start_naming_the_platform(
    platform_sim: SimServer, slack: FakeSlack, tmp_path: Path
) -> None:
    config = write_bot_config(platform_sim, tmp_path, slack.api_url)
    key_file = tmp_path / yaml.safe_load(config.read_text())["platform"]["access_key_file"]
    wrong = "not-the-platforms-key-0123456789"
    key_file.write_text(wrong + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "bot", "serve", "--config", str(config), "--port", "9"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"platform.url {platform_sim.base_url}: 401" in done.stderr
    assert wrong not in done.stdout + done.stderr


def test_a_restart_while_the_platform_fails_serves_the_fleet_kept(
    platform_sim: SimServer, slack: FakeSlack, platform_bots: BotLauncher
) -> None:
    first = platform_bots.start()
    wait_until(lambda: "fleet: 2 clients" in first.log_text(), 10.0, "the first reading")
    assert first.stop() == 0
    platform_sim.set_platform_fault(ApiFault("error"))  # every platform path answers 500 from now on
    try:
        second = platform_bots.start()
        log = wait_until(
            lambda: "serving the fleet as read" in second.log_text() and second.log_text(),
            10.0,
            "the kept fleet",
        )
        assert "500" in log
        _post(second.url, proxy_alert(target="platform/crd-store"))
        message = wait_until(
            lambda: [
                m for m in slack.top_level(CHANNEL) if "platform/crd-store" in "\n".join(iter_texts(m.blocks))
            ],
            30.0,
            "the alert's message",
        )
        assert "no configured cluster" not in "\n".join(iter_texts(message[0].blocks))  # team-a's, as kept
    finally:
        platform_sim.set_platform_fault(None)


def test_check_config_serve_lists_the_fleet_live(
    platform_sim: SimServer, slack: FakeSlack, tmp_path: Path
) -> None:
    config = write_bot_config(platform_sim, tmp_path, slack.api_url)
    done = subprocess.run(
        [sys.executable, "-m", "bot", "check-config", "--serve", "--config", str(config)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Fleet: 2 clients, 1 target" in done.stdout
    assert "team-misconfigured" in done.stdout
    assert "warning: team-misconfigured: vCluster refuses its proxy section" in done.stderr
    assert done.stdout.rstrip().endswith(f"({config})")
    plain = subprocess.run(
        [sys.executable, "-m", "bot", "check-config", "--config", str(config)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f"ok: the fleet is discovered from {platform_sim.base_url} at start" in plain.stdout
