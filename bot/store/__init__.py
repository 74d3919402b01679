"""The durable state of proxybot: accepted notifications, alert group lifecycle, the Slack outbox."""

from __future__ import annotations

from bot.store.base import Store
from bot.store.errors import StoreError
from bot.store.models import (
    Accepted,
    AlertGroupState,
    DigestClaim,
    Enqueued,
    OutboxItem,
    OutboxKind,
    OutboxState,
    StoredNotification,
)
from bot.store.opening import open_store

__all__ = [
    "Accepted",
    "AlertGroupState",
    "DigestClaim",
    "Enqueued",
    "OutboxItem",
    "OutboxKind",
    "OutboxState",
    "Store",
    "StoreError",
    "StoredNotification",
    "open_store",
]
