"""The root of proxybot's error hierarchy and the configuration's own error (drawn in bot/errors.py).

They live here because the settings layer is the lowest: config imports nothing of bot, and every other
error (bot/errors.py) derives from `ProxybotError`.
"""

from __future__ import annotations


class ProxybotError(Exception):
    """Base of every error proxybot raises on purpose."""


class ConfigError(ProxybotError):
    """The configuration is invalid; `problems` lists every `location: message`."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))
