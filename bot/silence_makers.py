"""Which silences proxybot made: the only ones attributed to a Slack user.

Alertmanager's `createdBy` is free text: anyone who may create a silence can write "alice (Slack U0ALICE)"
into it. So proxybot records the id of each silence it makes, with the author it wrote, in its store
(`silences_made`), and `MadeSilences` marks the silences it lists: one whose id is recorded is `made_here`,
its author the recorded one; any other is shown as made outside proxybot, its `createdBy` plain text.
Every part that makes or lists silences goes through one `MadeSilences` (`bot.compose`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Protocol

from bot.domain.silences import NewSilence, Silence
from bot.ports import Silences
from bot.store.errors import StoreError

log = logging.getLogger(__name__)


class SilenceRecords(Protocol):
    """The store's record of the silences proxybot made (`bot.store.base.GroupStore`)."""

    async def record_silence_made(self, silence_id: str, created_by: str) -> None: ...

    async def silences_made(self, ids: Sequence[str]) -> dict[str, str]: ...


@dataclasses.dataclass(frozen=True)
class MadeSilences:
    """Alertmanager's silences, each one proxybot makes recorded, each one listed marked if it was."""

    alertmanager: Silences
    records: SilenceRecords

    async def create_silence(self, silence: NewSilence) -> str:
        made = await self.alertmanager.create_silence(silence)
        await self.made(made, silence.created_by)
        return made

    async def made(self, silence_id: str, created_by: str) -> None:
        """Record a silence proxybot made (also one a lost answer left made, found again). Not recorded
        (the store failing), it is shown as made outside proxybot: never attributed wrongly."""
        try:
            await self.records.record_silence_made(silence_id, created_by)
        except StoreError as err:
            log.warning(
                "silence %s made but not recorded as proxybot's (shown as made outside): %s", silence_id, err
            )

    async def silences(self) -> list[Silence]:
        """Every silence Alertmanager lists, those proxybot made `made_here` with the author it wrote;
        a StoreError when the store cannot say which (nothing is attributed on a guess)."""
        listed = await self.alertmanager.silences()
        ours = await self.records.silences_made([s.id for s in listed])
        return [
            dataclasses.replace(s, created_by=ours[s.id], made_here=True) if s.id in ours else s
            for s in listed
        ]

    async def expire_silence(self, silence: str) -> None:
        await self.alertmanager.expire_silence(silence)
