"""SQL for the silences proxybot made (`bot.silence_makers`): one row per silence id, with the author
proxybot wrote into it. Only a silence listed here is attributed to a Slack user: Alertmanager's own
`createdBy` is whatever its maker typed. Statements are written once with `?` parameters; the PostgreSQL
backend runs the same text (`bot.store.postgres.pg`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from bot.store.transaction import immediate

INSERT = """
INSERT INTO silences_made (silence_id, created_by, made_at) VALUES (?, ?, ?)
ON CONFLICT (silence_id) DO NOTHING
"""


def of_ids(count: int) -> str:
    """The statement reading the rows of `count` ids (at least one)."""
    marks = ", ".join("?" * count)
    return f"SELECT silence_id, created_by FROM silences_made WHERE silence_id IN ({marks})"  # noqa: S608


def record(conn: sqlite3.Connection, silence_id: str, created_by: str, at: float) -> None:
    with immediate(conn):
        conn.execute(INSERT, (silence_id, created_by, at))


def makers(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, str]:
    if not ids:
        return {}
    return {str(i): str(by) for i, by in conn.execute(of_ids(len(ids)), tuple(ids)).fetchall()}
