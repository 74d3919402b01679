"""What every `proxybot` subcommand is given: its environment and output streams, and its own shape."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True)
class Console:
    """What a subcommand may touch besides its arguments: the environment and the two output streams."""

    env: Mapping[str, str]
    out: TextIO
    err: TextIO

    def say(self, line: str) -> None:
        print(line, file=self.out)

    def warn(self, line: str) -> None:
        print(line, file=self.err)


@dataclass(frozen=True)
class ConsoleCommand:
    """One `proxybot` subcommand's implementation (its help line is bot/subcommands.py's)."""

    name: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Console], int]
