"""What `proxybot serve` costs is visible: its memory in the start-up log line and on `/metrics`."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.e2e.conftest import BotLauncher


def test_serve_says_its_memory_at_start_and_on_metrics(bot_config: Path, bots: BotLauncher) -> None:
    doc = yaml.safe_load(bot_config.read_text())
    doc["digest"]["workers"] = 3
    bot_config.write_text(yaml.safe_dump(doc, sort_keys=False))
    bot = bots.start()
    rss = bot.metric("process_resident_memory_bytes")
    assert 10 * 2**20 < rss < 2**30
    assert bot.metric("process_open_fds") > 0
    logged = re.search(r"serve: RSS (\d+) MiB before serving; 3 digest worker process\(es\)", bot.log_text())
    assert logged is not None, bot.log_tail()
    assert 10 < int(logged[1]) < 1024
