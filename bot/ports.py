"""The seams the bot's parts share, in one place: the clock they are given, the long-running worker the
app runs, Alertmanager's silences (made, listed, expired) and its silences as last read. A part that
needs one of these imports it from here, never declares its own.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bot.domain.silences import NewSilence, Silence

# A source of seconds: `time.time` for wall time, `time.monotonic` for intervals; tests pass their own.
Clock = Callable[[], float]

# A long-running task of the app (pipeline, delivery, scheduler, Socket Mode); it returns when cancelled.
Worker = Callable[[], Coroutine[Any, Any, None]]


class SilenceList(Protocol):
    """Alertmanager's silences as last read, every state (`bot.alerts.silences.SilenceWatch` is one): read by
    the resolution summaries and the digest, never waited for."""

    @property
    def silences(self) -> tuple[Silence, ...]: ...


class Silences(Protocol):
    """Alertmanager's silences: made, listed, expired (`bot.clients.alertmanager.AlertmanagerClient` and
    `bot.silence_makers.MadeSilences` are ones), for `/proxy silence`, *Silence…* and *Expire silence*."""

    async def create_silence(self, silence: NewSilence) -> str: ...

    async def silences(self) -> list[Silence]: ...

    async def expire_silence(self, silence: str) -> None: ...
