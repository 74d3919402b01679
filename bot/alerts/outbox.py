"""The Slack operations the alert side queues: `bot.delivery.Delivery` is the one implementation."""

from __future__ import annotations

from typing import Protocol

from bot.render.blocks import Message
from bot.store.models import Enqueued, Withdrawal

# The name of a group's details reply (`Outbox.reply_in_place`): one per group message, edited in place; a
# group that joined an incident has its own in the incident message's thread (`bot.alerts.incident`).
DETAILS_REPLY = "details"
# Seconds a details reply's first post waits: the message itself goes first, and a storm starting in the
# channel gets its summary and table out before it (they compete for Slack's ~1 post/s per channel).
DETAILS_DEFER = 5.0


class Outbox(Protocol):
    """Queues Slack operations for a group's message (each wakes the delivery worker)."""

    async def post(self, channel: str, group_key: str, message: Message) -> Enqueued: ...

    async def update(self, channel: str, group_key: str, message: Message, revision: str) -> Enqueued: ...

    async def reply(
        self,
        channel: str,
        group_key: str,
        message: Message,
        revision: str,
        *,
        not_before: float | None = None,
        replace_pending: bool = False,
    ) -> Enqueued: ...

    async def reply_in_place(
        self,
        channel: str,
        group_key: str,
        message: Message,
        *,
        reply: str,
        revision: str,
        defer: float = 0.0,
    ) -> Enqueued: ...

    async def upload_png(
        self, channel: str, group_key: str, png: bytes, *, filename: str, title: str, revision: str
    ) -> Enqueued: ...

    async def upload_file(
        self,
        channel: str,
        group_key: str,
        content: bytes,
        *,
        filename: str,
        title: str,
        revision: str,
        replaces: str | None = None,
    ) -> Enqueued: ...

    async def delete_upload(
        self, channel: str, group_key: str, *, upload: str, replaced_by: str | None = None
    ) -> Enqueued: ...

    async def withdraw_post(self, channel: str, group_key: str, *, folded_into: str) -> Withdrawal: ...

    async def show_again(self, channel: str, group_key: str, revision: str) -> Enqueued:
        """An edit showing the message as it is when sent (an acknowledgement, a silence: no new content)."""
        ...

    async def reply_queued(self, channel: str, group_key: str, revision: str) -> bool:
        """Whether the reply of `revision` in the group message's thread was ever queued."""
        ...
