"""SQL for the write probe: `/readyz` commits one small write, so "ready" means a webhook could be stored now.

Reads keep working on a full disk, a read-only file or database (a PostgreSQL standby after a failover) and
behind another process's write lock, so a read would call such a store ready while every webhook got 503.
One row, rewritten by each probe: the table never grows. Same text on both backends (`bot.store.postgres.pg`).
"""

from __future__ import annotations

import sqlite3

from bot.store.transaction import immediate

WRITE = """
INSERT INTO write_probe (id, owner, at) VALUES (1, ?, ?)
ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, at = excluded.at
"""


def write(conn: sqlite3.Connection, owner: str, now: float) -> None:
    with immediate(conn):
        conn.execute(WRITE, (owner, now))
