"""The store's one error: the database could not be opened, read or written."""

from __future__ import annotations

from bot.errors import ProxybotError


class StoreError(ProxybotError):
    """The state store failed (disk full, locked, unreadable, schema from a newer proxybot)."""
