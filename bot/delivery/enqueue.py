"""Queueing Slack operations: every one is a row in the store's outbox first, and wakes the worker.

The keys (`bot.delivery.keys`) make each operation once per notification: a notification applied again
after a crash queues nothing new. `Delivery` (`bot.delivery.worker`) is an `Enqueuer` that also sends.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping
from typing import Any

from bot.delivery.keys import (
    delete_key,
    post_key,
    reply_edit_key,
    reply_key,
    show_key,
    update_key,
    upload_key,
)
from bot.delivery.plan import DEFERRED, SHOW_AGAIN, SHOWN_AT, group_of
from bot.ports import Clock
from bot.render.blocks import Message
from bot.store.base import Store
from bot.store.models import Enqueued, OutboxItem, OutboxKind, OutboxState, Withdrawal

# Far enough ahead that `Store.due(now + HORIZON)` lists every pending row, due or waiting.
HORIZON = 10 * 365 * 86400.0


class Enqueuer:
    """The outbox API the alert, command and digest sides use (the alert side calls it `Outbox`)."""

    def __init__(self, store: Store, clock: Clock, batch: int, shown: Clock | None = None) -> None:
        self._store = store
        self._clock = clock
        # The clock messages tell the time by (the demo's is the simulated world's): a content's `SHOWN_AT`.
        self._shown = shown or clock
        self._batch = batch
        self._wake = asyncio.Event()
        # The channels with rows as far as this process knows: those of the last read of the outbox, and
        # those enqueued to since (None: not known, the last read was cut at the batch size).
        self._channels_with_rows: set[str] | None = None

    async def post(self, channel: str, group_key: str, message: Message) -> Enqueued:
        """Queue the group's top-level message (once per channel and group; newer content replaces)."""
        payload = {"group_key": group_key, **message.as_kwargs(), SHOWN_AT: self._shown()}
        key = post_key(channel, group_key)
        return await self._enqueue(key, channel, OutboxKind.POST, payload, replace_pending=True)

    async def update(self, channel: str, group_key: str, message: Message, revision: str) -> Enqueued:
        """Queue an edit of the group's message; `revision` makes a redelivered notification a no-op."""
        payload = {"group_key": group_key, **message.as_kwargs(), SHOWN_AT: self._shown()}
        key = update_key(channel, group_key, revision)
        return await self._enqueue(key, channel, OutboxKind.UPDATE, payload)

    async def show_again(self, channel: str, group_key: str, revision: str) -> Enqueued:
        """Queue an edit showing the group's message as it is when the edit is sent: its newest content
        then, its ages told at that moment, with the acknowledgement and silence of that moment
        (`bot.delivery.send`). What changes no
        content (an acknowledgement, a silence) is queued so: content read now could be older, by then,
        than an edit queued meanwhile, and would undo it. `revision` makes it once."""
        payload = {"group_key": group_key, SHOW_AGAIN: True}
        return await self._enqueue(
            show_key(channel, group_key, revision), channel, OutboxKind.UPDATE, payload
        )

    async def reply(
        self,
        channel: str,
        group_key: str,
        message: Message,
        revision: str,
        *,
        not_before: float | None = None,
        replace_pending: bool = False,
    ) -> Enqueued:
        """Queue a reply in the group message's thread, sent no earlier than `not_before`; with
        `replace_pending`, a reply of the same revision that has not gone out yet gets the new content."""
        payload = {"group_key": group_key, **message.as_kwargs()}
        key = reply_key(channel, group_key, revision)
        return await self._enqueue(
            key, channel, OutboxKind.REPLY, payload, not_before=not_before, replace_pending=replace_pending
        )

    async def reply_queued(self, channel: str, group_key: str, revision: str) -> bool:
        """Whether the reply of `revision` in the group message's thread was ever queued."""
        return await self._store.outbox_item(reply_key(channel, group_key, revision)) is not None

    async def reply_in_place(
        self,
        channel: str,
        group_key: str,
        message: Message,
        *,
        reply: str,
        revision: str,
        defer: float = 0.0,
    ) -> Enqueued:
        """The group's one reply named `reply`: queued as a reply the first time, as an edit of that reply
        (once per `revision`) after; an edit due while its reply is still queued goes out as the reply.

        `defer` (seconds) holds the first post of the reply back that long, without holding back the
        message's other rows: reference material yields to what is urgent in the channel (a storm's
        summary and table, posted at Slack's pace of about one message a second)."""
        first = await self._store.outbox_item(reply_key(channel, group_key, reply))
        if first is None:
            payload: dict[str, Any] = {"group_key": group_key, "revision": revision, **message.as_kwargs()}
            key = reply_key(channel, group_key, reply)
            at = None
            if defer > 0:
                at, payload[DEFERRED] = self._clock() + defer, True
            return await self._enqueue(key, channel, OutboxKind.REPLY, payload, not_before=at)
        if first.payload.get("revision") == revision:
            return Enqueued(first.id, duplicate=True)  # the same revision again (a re-run): nothing new
        if _never_posted(first):
            # Given up, or withdrawn with its message (a storm carries it): no reply to edit, ever.
            return Enqueued(first.id, duplicate=True)
        payload = {"group_key": group_key, "reply": reply, **message.as_kwargs()}
        key = reply_edit_key(channel, group_key, reply, revision)
        return await self._enqueue(key, channel, OutboxKind.REPLY_EDIT, payload)

    async def upload_png(
        self, channel: str, group_key: str, png: bytes, *, filename: str, title: str, revision: str
    ) -> Enqueued:
        """Queue a PNG upload (a chart) into the group message's thread."""
        return await self._upload(channel, group_key, "png", png, filename, title, revision)

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
    ) -> Enqueued:
        """Queue a file upload into the group message's thread (its file IDs are kept with the row);
        `replaces`: the revision of the upload it replaces (where the files to delete are if this one
        is refused)."""
        extra = {} if replaces is None else {"replaces": replaces}
        return await self._upload(channel, group_key, "file", content, filename, title, revision, extra)

    async def _upload(
        self,
        channel: str,
        group_key: str,
        field: str,
        data: bytes,
        filename: str,
        title: str,
        revision: str,
        extra: Mapping[str, str] | None = None,
    ) -> Enqueued:
        # The sender tells them apart by `field`: a file's IDs are kept (a later row may delete them).
        payload = {
            "group_key": group_key,
            field: base64.b64encode(data).decode("ascii"),
            "filename": filename,
            "title": title,
            **(extra or {}),
        }
        return await self._enqueue(
            upload_key(channel, group_key, revision), channel, OutboxKind.UPLOAD, payload
        )

    async def delete_upload(
        self, channel: str, group_key: str, *, upload: str, replaced_by: str | None = None
    ) -> Enqueued:
        """Queue deleting the files of the group's upload of revision `upload`; with `replaced_by`, the
        revision of the upload that replaces it, only once that one went out (never the only table)."""
        payload: dict[str, Any] = {"group_key": group_key, "upload": upload}
        if replaced_by is not None:
            payload["replaced_by"] = replaced_by
        key = delete_key(channel, group_key, upload)
        return await self._enqueue(key, channel, OutboxKind.DELETE_FILE, payload)

    async def withdraw_post(self, channel: str, group_key: str, *, folded_into: str) -> Withdrawal:
        """Take the group's queued post back before it goes out (a storm carries the group instead), and
        what was queued in its thread (its details reply). Asked again for the same storm, the answer is
        the same: a storm restored after a crash finishes the folds it began."""
        item = await self._store.outbox_item(post_key(channel, group_key))
        if item is None:
            return Withdrawal.UNQUEUED
        if item.state is OutboxState.DONE and (item.result or {}).get("folded_into") == folded_into:
            return Withdrawal.FOLDED
        # Marked in flight (`mark_sending`): Slack may have it already, and its answer will record it.
        if item.state is not OutboxState.PENDING or item.sent_at is not None:
            return Withdrawal.OUT
        if not await self._store.complete(item.id, {"folded_into": folded_into}):
            return Withdrawal.OUT
        for row in await self._store.due(self._clock() + HORIZON, limit=self._batch):
            if row.channel == channel and group_of(row) == group_key and row.kind is not OutboxKind.POST:
                await self._store.complete(row.id, {"folded_into": folded_into})
        return Withdrawal.FOLDED

    async def _enqueue(
        self,
        key: str,
        channel: str,
        kind: OutboxKind,
        payload: Mapping[str, Any],
        *,
        not_before: float | None = None,
        replace_pending: bool = False,
    ) -> Enqueued:
        queued = await self._store.enqueue(
            key, channel, kind, payload, not_before=not_before, replace_pending=replace_pending
        )
        if self._channels_with_rows is not None:
            self._channels_with_rows.add(channel)
        self.notify()
        return queued

    def notify(self) -> None:
        """Something was enqueued: look at the outbox now."""
        self._wake.set()


def _never_posted(item: OutboxItem) -> bool:
    """Whether a reply's row is over without a message in Slack (failed, or completed without a `ts`)."""
    if item.state is OutboxState.FAILED:
        return True
    return item.state is OutboxState.DONE and not (item.result or {}).get("ts")
