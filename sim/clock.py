"""Time for the model: injectable, so tests walk the guide's constants without sleeping."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Anything that tells the model the current time in seconds."""

    def now(self) -> float: ...


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock cannot run backwards")
        self._now += seconds

    def set(self, when: float) -> None:
        """Move to an absolute time, never backwards."""
        self.advance(max(0.0, when - self._now))


class ScaledWallClock:
    """Wall time since construction, multiplied by `speed`: the simulated seconds of a running server."""

    def __init__(self, speed: float) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self._start = time.monotonic()

    def now(self) -> float:
        return (time.monotonic() - self._start) * self.speed
