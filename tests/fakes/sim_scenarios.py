"""Simulator scenarios started straight at their fault, for tests of the checks against a running simulator.

RecordingSimServer           the real simulator, keeping (method, path, query) of every request
started(tmp, scenario, ...)  one running, advanced to its fault, with the proxybot config pointing at it
AT                           where each scenario's fault is shown: (speed, simulated seconds)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import Response

from sim.server import SimServer

# The simulator's speed and the simulated second that show each scenario's fault.
AT: dict[str, tuple[float, float]] = {
    "healthy": (10, 120.0),
    "target-down": (20, 240.0),
    "ownership-masked": (10, 120.0),
    "relay-fallback": (2, 90.0),
    "dial-direct-off": (2, 90.0),
    "auth-failed": (10, 120.0),
    "ownership-get-denied": (10, 120.0),
    "name-collision": (10, 120.0),
    "ha-split": (20, 240.0),
    "peer-watch-dropped": (20, 240.0),
    "license-failure": (20, 240.0),
}


class RecordingSimServer(SimServer):
    """The real simulator, keeping (method, path, query) of every request that reached it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.requests: list[tuple[str, str, str]] = []

    async def _endpoint(self, request: Request) -> Response:
        self.requests.append((request.method, request.url.path, request.url.query))
        return await super()._endpoint(request)


def started(
    tmp: pytest.TempPathFactory, scenario: str, speed: float | None = None, at: float | None = None
) -> Iterator[tuple[RecordingSimServer, Path]]:
    """`scenario` running (at `AT` unless given), already at its fault, and the config that points at it."""
    if speed is None or at is None:
        default_speed, default_at = AT[scenario]
        speed, at = speed or default_speed, default_at if at is None else at
    server = RecordingSimServer(scenario=scenario, speed=speed)
    with server:
        with server.lock:
            server.world.advance_to(at)  # straight into the fault
        yield server, server.write_config(tmp.mktemp(scenario) / "proxybot.yaml")
