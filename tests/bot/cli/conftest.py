"""A simulator that records every request it receives, and one running instance per scenario."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.cli import digest, logs, netpol, probe, status, verify
from bot.cli.console import Console
from bot.cli.main import build_parser
from tests.fakes.sim_scenarios import RecordingSimServer, started

PARSER_SUBCOMMANDS = (
    *probe.CONSOLE_COMMANDS,
    *status.CONSOLE_COMMANDS,
    *netpol.CONSOLE_COMMANDS,
    *verify.CONSOLE_COMMANDS,
    *digest.CONSOLE_COMMANDS,
    *logs.CONSOLE_COMMANDS,
)


@dataclass
class Sim:
    """A running scenario and the proxybot config that points at it."""

    server: RecordingSimServer
    config: Path

    def run(self, *argv: str) -> tuple[int, str, str]:
        """One CLI command in-process against this simulator: exit status, stdout, stderr."""
        return run_cli(*argv, "--config", str(self.config))


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    args = build_parser(PARSER_SUBCOMMANDS).parse_args(list(argv))
    status_code: int = args.run(args, Console({}, out, err))
    return status_code, out.getvalue(), err.getvalue()


def run_json(sim: Sim, *argv: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = sim.run(*argv, "--json")
    lines = out.strip().splitlines()
    assert len(lines) == 1, out  # exactly one JSON object on stdout
    loaded: dict[str, Any] = json.loads(lines[0])
    return code, loaded


def scenario(tmp: pytest.TempPathFactory, name: str, speed: float | None = None) -> Iterator[Sim]:
    for server, config in started(tmp, name, speed):
        yield Sim(server, config)


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from scenario(tmp_path_factory, "healthy")


@pytest.fixture(scope="module")
def target_down(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from scenario(tmp_path_factory, "target-down")


@pytest.fixture(scope="module")
def ownership_masked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from scenario(tmp_path_factory, "ownership-masked")
