"""SQL for the write probe: `/readyz` commits one small write, so "ready" means a webhook could be stored now.

Reads keep working on a full disk, a read-only file or database (a PostgreSQL standby after a failover) and
behind another process's write lock, so a read would call such a store ready while every webhook got 503.
One row, rewritten by each probe: the table never grows. Both backends run it (`bot.store.steps`).
"""

from __future__ import annotations

from bot.store.steps import Steps, write

WRITE = """
INSERT INTO write_probe (id, owner, at) VALUES (1, ?, ?)
ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, at = excluded.at
"""


def probe(owner: str, now: float) -> Steps[None]:
    yield write(WRITE, (owner, now))
