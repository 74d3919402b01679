"""The seams the bot's parts share, in one place: the clock they are given, the long-running worker the
app runs, Alertmanager's silences (made, listed, expired) and its silences as last read (and read afresh,
for the escalation), and what the buttons use of Slack (views.open) and of the outbox (a thread reply). A
part that needs one of these imports it from here, never declares its own.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bot.domain.silences import NewSilence, Silence
    from bot.render.blocks import Message

# A source of seconds: `time.time` for wall time, `time.monotonic` for intervals; tests pass their own.
Clock = Callable[[], float]

# A long-running task of the app (pipeline, delivery, scheduler, Socket Mode); it returns when cancelled.
Worker = Callable[[], Coroutine[Any, Any, None]]


class SilenceList(Protocol):
    """Alertmanager's silences as last read, every state (`bot.alerts.silences.SilenceWatch` is one): read by
    the resolution summaries and the digest, never waited for."""

    @property
    def silences(self) -> tuple[Silence, ...]: ...


class FreshSilences(Protocol):
    """The silence watch as the escalation asks it before paging (`bot.alerts.silences.SilenceWatch` is one):
    the silence a message about these alerts shows, after a fresh read."""

    def shown_for(self, label_sets: Sequence[Mapping[str, str]]) -> Silence | None: ...

    async def refresh(self) -> None: ...


class Silences(Protocol):
    """Alertmanager's silences: made, listed, expired (`bot.clients.alertmanager.AlertmanagerClient` and
    `bot.silence_makers.MadeSilences` are ones), for `/proxy silence`, *Silence…* and *Expire silence*."""

    async def create_silence(self, silence: NewSilence) -> str: ...

    async def silences(self) -> list[Silence]: ...

    async def expire_silence(self, silence: str) -> None: ...


class ViewOpener(Protocol):
    """Slack's views.open (`bot.clients.slack.SlackClient` is one), for the *Silence…* modal."""

    async def open_view(self, trigger_id: str, view: Mapping[str, Any]) -> None: ...


class ThreadReplies(Protocol):
    """The outbox's side of the buttons: a reply in an alert's thread (`bot.delivery.worker.Delivery` is
    one)."""

    async def reply(self, channel: str, group_key: str, message: Message, revision: str) -> object: ...
