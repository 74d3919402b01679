"""The seams the bot's parts share, in one place: the clock they are given and the long-running worker the
app runs. A part that needs one of these imports it from here, never declares its own.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

# A source of seconds: `time.time` for wall time, `time.monotonic` for intervals; tests pass their own.
Clock = Callable[[], float]

# A long-running task of the app (pipeline, delivery, scheduler, Socket Mode); it returns when cancelled.
Worker = Callable[[], Coroutine[Any, Any, None]]
