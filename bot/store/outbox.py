"""SQL for the durable queue of Slack operations (run on the store thread)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import Any

from bot.store.models import Enqueued, OutboxItem, OutboxKind, OutboxState
from bot.store.transaction import immediate

# Errors are kept for people reading the row, not for replay; a Slack error body can be long.
MAX_ERROR_CHARS = 2000

_COLUMNS = "id, key, channel, kind, payload, state, attempts, next_attempt_at, created_at, last_error, result"


def enqueue(
    conn: sqlite3.Connection,
    op: tuple[str, str, OutboxKind, Mapping[str, Any]],
    not_before: float,
    now: float,
    replace_pending: bool,
) -> Enqueued:
    key, channel, kind, payload = op
    encoded = json.dumps(payload, sort_keys=True)
    with immediate(conn):
        existing = conn.execute("SELECT id, state FROM outbox WHERE key = ?", (key,)).fetchone()
        if existing is None:
            return Enqueued(
                id=_insert(conn, (key, channel, kind.value, encoded, not_before, now)), duplicate=False
            )
        row_id, state = existing
        if not (replace_pending and state == OutboxState.PENDING.value):
            return Enqueued(id=row_id, duplicate=True)
        conn.execute(
            "UPDATE outbox SET channel = ?, kind = ?, payload = ?, updated_at = ? WHERE id = ?",
            (channel, kind.value, encoded, now, row_id),
        )
        return Enqueued(id=row_id, duplicate=True, replaced=True)


def _insert(conn: sqlite3.Connection, values: tuple[str, str, str, str, float, float]) -> int:
    key, channel, kind, payload, not_before, now = values
    cursor = conn.execute(
        "INSERT INTO outbox (key, channel, kind, payload, state, next_attempt_at, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, 'pending', ?, ?, ?)",
        (key, channel, kind, payload, not_before, now, now),
    )
    row_id = cursor.lastrowid
    assert row_id is not None  # an INSERT that succeeded always has one
    return row_id


def due(conn: sqlite3.Connection, now: float, limit: int) -> list[OutboxItem]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM outbox WHERE state = 'pending' AND next_attempt_at <= ?"  # noqa: S608
        " ORDER BY next_attempt_at, id LIMIT ?",
        (now, limit),
    ).fetchall()
    return [_item(row) for row in rows]


def by_key(conn: sqlite3.Connection, key: str) -> OutboxItem | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM outbox WHERE key = ?", (key,)).fetchone()  # noqa: S608
    return None if row is None else _item(row)


def next_attempt_at(conn: sqlite3.Connection) -> float | None:
    row = conn.execute("SELECT min(next_attempt_at) FROM outbox WHERE state = 'pending'").fetchone()
    at: float | None = row[0]
    return at


def complete(conn: sqlite3.Connection, item_id: int, result: Mapping[str, Any] | None, now: float) -> bool:
    encoded = None if result is None else json.dumps(result, sort_keys=True)
    return _update_pending(conn, "state = 'done', result = ?, updated_at = ?", (encoded, now), item_id)


def retry_later(conn: sqlite3.Connection, item_id: int, at: float, error: str, now: float) -> bool:
    return _update_pending(
        conn,
        "attempts = attempts + 1, next_attempt_at = ?, last_error = ?, updated_at = ?",
        (at, error[:MAX_ERROR_CHARS], now),
        item_id,
    )


def give_up(conn: sqlite3.Connection, item_id: int, error: str, now: float) -> bool:
    return _update_pending(
        conn,
        "state = 'failed', attempts = attempts + 1, last_error = ?, updated_at = ?",
        (error[:MAX_ERROR_CHARS], now),
        item_id,
    )


def _update_pending(
    conn: sqlite3.Connection, assignments: str, values: tuple[Any, ...], item_id: int
) -> bool:
    # Only a pending row moves: a late retry_later after complete must not resurrect a delivered op.
    with immediate(conn):
        cursor = conn.execute(
            f"UPDATE outbox SET {assignments} WHERE id = ? AND state = 'pending'",  # noqa: S608
            (*values, item_id),
        )
    return cursor.rowcount == 1


def depth(conn: sqlite3.Connection) -> int:
    count: int = conn.execute("SELECT count(*) FROM outbox WHERE state = 'pending'").fetchone()[0]
    return count


def prune(conn: sqlite3.Connection, before: float) -> int:
    with immediate(conn):
        cursor = conn.execute("DELETE FROM outbox WHERE state != 'pending' AND updated_at < ?", (before,))
    return cursor.rowcount


def _item(row: tuple[Any, ...]) -> OutboxItem:
    item_id, key, channel, kind, payload, state, attempts, next_at, created_at, last_error, result = row
    return OutboxItem(
        id=item_id,
        key=key,
        channel=channel,
        kind=OutboxKind(kind),
        payload=json.loads(payload),
        state=OutboxState(state),
        attempts=attempts,
        next_attempt_at=next_at,
        created_at=created_at,
        last_error=last_error,
        result=None if result is None else json.loads(result),
    )
