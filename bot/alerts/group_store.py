"""What the alert side's desks (storms, incidents) need of the store: the alert groups' rows."""

from __future__ import annotations

from typing import Protocol

from bot.domain.alerts import AlertStatus
from bot.store.models import AlertGroupState


class GroupStore(Protocol):
    """Read and save alert groups' rows (`bot.store.Store` is one)."""

    async def get_group(self, channel: str, group_key: str) -> AlertGroupState | None: ...

    async def save_group(self, state: AlertGroupState) -> AlertGroupState: ...

    async def groups(
        self, channel: str | None = None, status: AlertStatus | None = None
    ) -> list[AlertGroupState]: ...
