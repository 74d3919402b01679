"""SQL for leases: one named piece of work (the alert pipeline, the outbox) runs in one process at a time.

Statements are written once, with `?` parameters; each operation runs on both backends
(`bot.store.steps`).
A lease is taken when nobody holds it or its holder let it expire, and renewed by its holder; the expiry
is the holder's clock plus the TTL, so replicas need clocks within a fraction of the TTL (NTP gives
milliseconds).
"""

from __future__ import annotations

from bot.store.steps import Steps, write

# Takes a free or expired lease, renews our own; returns a row only when we hold it afterwards.
HOLD = """
INSERT INTO leases (name, owner, until) VALUES (?, ?, ?)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until
WHERE leases.owner = excluded.owner OR leases.until < ?
RETURNING until
"""
RELEASE = "DELETE FROM leases WHERE name = ? AND owner = ?"


def hold(name: str, owner: str, now: float, ttl: float) -> Steps[float | None]:
    row = (yield write(HOLD, (name, owner, now + ttl, now))).first()
    return None if row is None else float(row[0])


def release(name: str, owner: str) -> Steps[None]:
    yield write(RELEASE, (name, owner))
