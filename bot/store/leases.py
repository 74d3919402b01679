"""SQL for leases: one named piece of work (the alert pipeline, the outbox) runs in one process at a time.

Statements are written once, with `?` parameters; the PostgreSQL backend runs the same text
(`bot.store.postgres.pg`).
A lease is taken when nobody holds it or its holder let it expire, and renewed by its holder; the expiry
is the holder's clock plus the TTL, so replicas need clocks within a fraction of the TTL (NTP gives
milliseconds).
"""

from __future__ import annotations

import sqlite3

from bot.store.transaction import immediate

# Takes a free or expired lease, renews our own; returns a row only when we hold it afterwards.
HOLD = """
INSERT INTO leases (name, owner, until) VALUES (?, ?, ?)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until
WHERE leases.owner = excluded.owner OR leases.until < ?
RETURNING until
"""
RELEASE = "DELETE FROM leases WHERE name = ? AND owner = ?"


def hold(conn: sqlite3.Connection, name: str, owner: str, now: float, ttl: float) -> float | None:
    with immediate(conn):
        row = conn.execute(HOLD, (name, owner, now + ttl, now)).fetchone()
    return None if row is None else float(row[0])


def release(conn: sqlite3.Connection, name: str, owner: str) -> None:
    with immediate(conn):
        conn.execute(RELEASE, (name, owner))
