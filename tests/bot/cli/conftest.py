"""A simulator that records every request it receives, and one running instance per scenario."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import Response

from bot.cli import netpol, probe, status
from bot.cli.console import Console
from bot.cli.main import build_parser
from sim.server import SimServer

PARSER_SUBCOMMANDS = (*probe.SUBCOMMANDS, *status.SUBCOMMANDS, *netpol.SUBCOMMANDS)


class RecordingSimServer(SimServer):
    """The real simulator, keeping (method, path, query) of every request that reached it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.requests: list[tuple[str, str, str]] = []

    async def _endpoint(self, request: Request) -> Response:
        self.requests.append((request.method, request.url.path, request.url.query))
        return await super()._endpoint(request)


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


def _sim(tmp: pytest.TempPathFactory, scenario: str, speed: float, at: float) -> Iterator[Sim]:
    srv = RecordingSimServer(scenario=scenario, speed=speed)
    with srv:
        with srv.lock:
            srv.world.advance_to(at)  # straight into the fault, without waiting for it
        yield Sim(srv, srv.write_config(tmp.mktemp(scenario) / "proxybot.yaml"))


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from _sim(tmp_path_factory, "healthy", 10, 120.0)


@pytest.fixture(scope="module")
def target_down(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from _sim(tmp_path_factory, "target-down", 20, 240.0)


@pytest.fixture(scope="module")
def ownership_masked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from _sim(tmp_path_factory, "ownership-masked", 10, 120.0)
