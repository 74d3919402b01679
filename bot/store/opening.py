"""Open the store a URL names: `sqlite:///<path>` (one replica) or `postgresql://...` (several)."""

from __future__ import annotations

import os
import secrets
import socket
import time
from urllib.parse import urlsplit

from bot.ports import Clock
from bot.store.base import Store
from bot.store.errors import StoreError
from bot.store.sqlite import Synchronous, open_sqlite_store

POSTGRES_SCHEMES = ("postgresql", "postgres")


def default_owner() -> str:
    """This process in leases and claims: the pod's hostname, the pid, and a random part (a restarted
    process with the same pid is someone else)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def is_postgres_url(url: str) -> bool:
    return "://" in url and urlsplit(url).scheme in POSTGRES_SCHEMES


async def open_store(
    url: str, *, clock: Clock = time.time, owner: str | None = None, synchronous: Synchronous = "NORMAL"
) -> Store:
    """Open (creating and migrating as needed) the store at `url`; `synchronous` is SQLite's only."""
    who = owner or default_owner()
    if is_postgres_url(url):
        # Imported here: a SQLite deployment never loads the PostgreSQL driver.
        from bot.store.postgres import open_postgres_store

        return await open_postgres_store(url, clock=clock, owner=who)
    if "://" in url and not url.startswith("sqlite:///"):
        # The URL may carry a password: name only its scheme.
        scheme = urlsplit(url).scheme
        raise StoreError(
            f"store.url scheme {scheme!r} is not supported: use sqlite:///<path> or postgresql://..."
        )
    return await open_sqlite_store(url, clock=clock, owner=who, synchronous=synchronous)
