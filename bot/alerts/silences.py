"""The silences that cover an alert message, as Alertmanager lists them, wherever they were made.

`SilenceWatch` asks Alertmanager for its silences (`GET /api/v2/silences`) every `every` seconds
(`alertmanager.poll_interval`, at most a minute) and keeps
the answer: nothing reads Alertmanager on a post's way out (the delivery worker asks `shown_for`, which
reads this copy). When the silences covering a firing message change (one made by the modal, amtool or
Alertmanager's page; one expired by time, by *Expire silence* or in Alertmanager), the message is edited
through the outbox, once per change: the edit's revision is the change itself, the same on every replica.
After each read, `ends` (`bot.alerts.silenced_end`) asks whether the silenced groups still fire.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bot.alerts.outbox import Outbox
from bot.domain.silences import Matcher, Silence
from bot.errors import UpstreamError
from bot.store.base import GroupStore
from bot.store.errors import StoreError
from bot.store.models import AlertGroupState

log = logging.getLogger(__name__)

LIVE = ("active",)


def matches(matcher: Matcher, labels: Mapping[str, str]) -> bool:
    """Whether one of Alertmanager's matchers selects an alert with `labels` (a missing label is "")."""
    value = labels.get(matcher.name, "")
    if matcher.is_regex:
        try:
            hit = re.fullmatch(matcher.value, value) is not None
        except re.error:
            return False
    else:
        hit = value == matcher.value
    return hit if matcher.is_equal else not hit


def covering(silences: Iterable[Silence], label_sets: Sequence[Mapping[str, str]]) -> list[Silence]:
    """The silences (any state) whose matchers select every one of the alerts."""
    if not label_sets:
        return []
    return [s for s in silences if all(all(matches(m, labels) for m in s.matchers) for labels in label_sets)]


def shown(silences: Iterable[Silence]) -> Silence | None:
    """The silence a message shows: of the active ones, the one that ends last."""
    live = [s for s in silences if s.state in LIVE]
    return max(live, key=lambda s: s.ends_at) if live else None


class SilencedGroups(Protocol):
    """What is done with each read about the silenced groups (`bot.alerts.silenced_end.SilencedEnds`)."""

    async def check(self, silences: Iterable[Silence]) -> None: ...


class SilenceSource(Protocol):
    """Alertmanager's silences (`bot.clients.alertmanager.AlertmanagerClient` is one)."""

    async def silences(self) -> list[Silence]: ...


@dataclass
class SilenceWatch:
    """Alertmanager's silences, kept fresh; firing messages edited when their silences change."""

    source: SilenceSource
    store: GroupStore
    edits: Outbox
    every: float
    ends: SilencedGroups | None = None
    silences: tuple[Silence, ...] = ()
    _seen: dict[tuple[str, str], str] = field(default_factory=dict)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)

    def shown_for(self, label_sets: Sequence[Mapping[str, str]]) -> Silence | None:
        """The silence a message about these alerts shows now (from the last read; never waits)."""
        return shown(covering(self.silences, label_sets))

    def soon(self) -> None:
        """Read again now (a silence was just made or expired here)."""
        self._wake.set()

    async def run(self) -> None:
        while True:
            try:
                await self.refresh()
                await self._check_ends()
            except Exception:  # the watch never ends: the next read may work
                log.exception("reading Alertmanager's silences failed")
            self._wake.clear()
            try:
                async with asyncio.timeout(self.every):
                    await self._wake.wait()
            except TimeoutError:
                pass

    async def refresh(self) -> None:
        """Read the silences; edit each firing message whose covering silences changed."""
        try:
            self.silences = tuple(await self.source.silences())
        except UpstreamError as err:
            log.warning("silences not read (messages keep showing the last read): %s", err)
            return
        try:
            for group in await self.store.firing_posts():
                await self._edit_if_changed(group)
        except StoreError as err:
            log.warning("silence changes not applied to messages this time: %s", err)

    async def _check_ends(self) -> None:
        """Whether the silenced groups still fire (in the loop only: a caller of `refresh`, such as the
        escalation about to page, does not wait for those reads)."""
        if self.ends is None:
            return
        try:
            await self.ends.check(self.silences)
        except StoreError as err:
            log.warning("silenced groups not checked for their end this time: %s", err)

    async def _edit_if_changed(self, group: AlertGroupState) -> None:
        found = covering(self.silences, group.facts.firing_labels)
        change = _signature(found)
        where = (group.channel, group.group_key)
        before = self._seen.get(where)
        self._seen[where] = change
        # First sight in this process: only a message that must show a silence is edited (once: the key).
        if change == before or (before is None and shown(found) is None):
            return
        await self.edits.show_again(group.channel, group.group_key, f"silences:{change}")


def _signature(silences: Iterable[Silence]) -> str:
    parts = sorted(f"{s.id}:{s.state}:{s.ends_at.timestamp():.0f}" for s in silences)
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]
