"""Fixtures of the end-to-end suite: the simulator, the fake Slack, and `proxybot serve` processes.

Every process a test starts is ended in the fixture's teardown, also when the test fails.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from sim.server import SimServer
from sim.slack_api import FakeSlack
from tests.e2e.stack import BOT_TOKEN, CHANNEL, BotProcess, write_bot_config


class BotLauncher:
    """Starts `proxybot serve` processes on one config and kills every one of them at `close()`."""

    def __init__(self, config: Path, workdir: Path) -> None:
        self.config = config
        self.workdir = workdir
        self.started: list[BotProcess] = []

    def start(self, *, port: int | None = None, command: Sequence[str] | None = None) -> BotProcess:
        log = self.workdir / f"bot-{len(self.started)}.log"
        bot = BotProcess(self.config, log, port=port, command=command)
        self.started.append(bot)
        return bot.start()

    def close(self) -> None:
        for bot in self.started:
            bot.kill()


@pytest.fixture
def sim() -> Iterator[SimServer]:
    # target-down at 20x: the target's endpoints stop answering 3 s in, so live reads show degradation.
    with SimServer(scenario="target-down", speed=20) as srv:
        yield srv


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as fake:
        yield fake


@pytest.fixture
def bot_config(tmp_path: Path, sim: SimServer, slack: FakeSlack) -> Path:
    return write_bot_config(sim, tmp_path, slack.api_url)


@pytest.fixture
def bots(tmp_path: Path, bot_config: Path) -> Iterator[BotLauncher]:
    launcher = BotLauncher(bot_config, tmp_path)
    try:
        yield launcher
    finally:
        launcher.close()
