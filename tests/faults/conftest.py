"""The fault suite runs on the end-to-end stack: its simulator, fake Slack and `proxybot serve` launcher."""

from tests.e2e.conftest import bot_config, bots, sim, slack

__all__ = ["bot_config", "bots", "sim", "slack"]
