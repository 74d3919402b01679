"""The durable state of proxybot: accepted notifications, alert group lifecycle, the Slack outbox."""

from __future__ import annotations

from bot.store.errors import StoreError
from bot.store.models import (
    Accepted,
    AlertGroupState,
    Enqueued,
    OutboxItem,
    OutboxKind,
    OutboxState,
    StoredNotification,
)
from bot.store.sqlite import Store, open_store

__all__ = [
    "Accepted",
    "AlertGroupState",
    "Enqueued",
    "OutboxItem",
    "OutboxKind",
    "OutboxState",
    "Store",
    "StoreError",
    "StoredNotification",
    "open_store",
]
