"""SQL for the durable queue of Slack operations (run on the store thread).

The statements are module constants with `?` parameters: the PostgreSQL backend runs the same text.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import Any

from bot.store.models import Enqueued, OutboxItem, OutboxKind, OutboxState
from bot.store.transaction import immediate

# Errors are kept for people reading the row, not for replay; a Slack error body can be long.
MAX_ERROR_CHARS = 2000

COLUMNS = (
    "id, key, channel, kind, payload, state, attempts, next_attempt_at, created_at, last_error, result,"
    " sent_at"
)
SELECT_KEY = "SELECT id, state FROM outbox WHERE key = ?"
# A key another process inserted meanwhile makes this a no-op (no row returned), never an error.
INSERT = (
    "INSERT INTO outbox (key, channel, kind, payload, state, next_attempt_at, created_at, updated_at)"
    " VALUES (?, ?, ?, ?, 'pending', ?, ?, ?) ON CONFLICT (key) DO NOTHING RETURNING id"
)
REPLACE = "UPDATE outbox SET channel = ?, kind = ?, payload = ?, updated_at = ? WHERE id = ?"
DUE = (
    f"SELECT {COLUMNS} FROM outbox WHERE state = 'pending' AND next_attempt_at <= ?"  # noqa: S608
    " ORDER BY next_attempt_at, id LIMIT ?"
)
BY_KEY = f"SELECT {COLUMNS} FROM outbox WHERE key = ?"  # noqa: S608 - constant columns
# The newest row of a channel keyed `key` or under a prefix: a message's content as last queued.
LAST_PAYLOAD = (
    "SELECT payload FROM outbox WHERE channel = ? AND (key = ? OR substr(key, 1, CAST(? AS INTEGER)) = ?)"
    " ORDER BY id DESC LIMIT 1"
)
NEXT_AT = "SELECT min(next_attempt_at) FROM outbox WHERE state = 'pending'"
OLDEST = "SELECT min(created_at) FROM outbox WHERE state = 'pending'"
DEPTH = "SELECT count(*) FROM outbox WHERE state = 'pending'"
PRUNE = "DELETE FROM outbox WHERE state != 'pending' AND updated_at < ?"
# Only a pending row moves: a late retry_later after complete must not resurrect a delivered op.
COMPLETE = "UPDATE outbox SET state = 'done', result = ?, updated_at = ? WHERE id = ? AND state = 'pending'"
MARK_SENDING = "UPDATE outbox SET sent_at = ?, updated_at = ? WHERE id = ? AND state = 'pending'"
# The same, only while the sender holds the named lease (a replica that lost it marks, so sends, nothing).
MARK_SENDING_FENCED = (
    MARK_SENDING + " AND EXISTS (SELECT 1 FROM leases WHERE name = ? AND owner = ? AND until > ?)"  # noqa: S608
)
RETRY = (
    "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ?, last_error = ?, updated_at = ?"
    " WHERE id = ? AND state = 'pending'"
)
GIVE_UP = (
    "UPDATE outbox SET state = 'failed', attempts = attempts + 1, last_error = ?, updated_at = ?"
    " WHERE id = ? AND state = 'pending'"
)

Op = tuple[str, str, OutboxKind, Mapping[str, Any]]


def enqueue(
    conn: sqlite3.Connection, op: Op, not_before: float, now: float, replace_pending: bool
) -> Enqueued:
    key, channel, kind, payload = op
    encoded = encode_payload(payload)
    with immediate(conn):
        row = conn.execute(INSERT, (key, channel, kind.value, encoded, not_before, now, now)).fetchone()
        if row is not None:
            return Enqueued(id=row[0], duplicate=False)
        row_id, state = conn.execute(SELECT_KEY, (key,)).fetchone()
        if not (replace_pending and state == OutboxState.PENDING.value):
            return Enqueued(id=row_id, duplicate=True)
        conn.execute(REPLACE, (channel, kind.value, encoded, now, row_id))
        return Enqueued(id=row_id, duplicate=True, replaced=True)


def encode_payload(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, sort_keys=True)


def due(conn: sqlite3.Connection, now: float, limit: int) -> list[OutboxItem]:
    return [item_from_row(row) for row in conn.execute(DUE, (now, limit)).fetchall()]


def by_key(conn: sqlite3.Connection, key: str) -> OutboxItem | None:
    row = conn.execute(BY_KEY, (key,)).fetchone()
    return None if row is None else item_from_row(row)


def next_attempt_at(conn: sqlite3.Connection) -> float | None:
    at: float | None = conn.execute(NEXT_AT).fetchone()[0]
    return at


def oldest_pending_at(conn: sqlite3.Connection) -> float | None:
    at: float | None = conn.execute(OLDEST).fetchone()[0]
    return at


def complete(conn: sqlite3.Connection, item_id: int, result: Mapping[str, Any] | None, now: float) -> bool:
    encoded = None if result is None else json.dumps(result, sort_keys=True)
    return _update(conn, COMPLETE, (encoded, now, item_id))


def mark_sending(
    conn: sqlite3.Connection, item_id: int, at: float | None, now: float, fence: tuple[str, str] | None
) -> bool:
    statement, values = mark_sending_statement(item_id, at, now, fence)
    return _update(conn, statement, values)


def mark_sending_statement(
    item_id: int, at: float | None, now: float, fence: tuple[str, str] | None
) -> tuple[str, tuple[Any, ...]]:
    """The statement and values of `mark_sending`; `fence` is (lease name, owner)."""
    if fence is None:
        return MARK_SENDING, (at, now, item_id)
    return MARK_SENDING_FENCED, (at, now, item_id, *fence, now)


def retry_later(conn: sqlite3.Connection, item_id: int, at: float, error: str, now: float) -> bool:
    return _update(conn, RETRY, (at, error[:MAX_ERROR_CHARS], now, item_id))


def give_up(conn: sqlite3.Connection, item_id: int, error: str, now: float) -> bool:
    return _update(conn, GIVE_UP, (error[:MAX_ERROR_CHARS], now, item_id))


def _update(conn: sqlite3.Connection, statement: str, values: tuple[Any, ...]) -> bool:
    with immediate(conn):
        cursor = conn.execute(statement, values)
    return cursor.rowcount == 1


def depth(conn: sqlite3.Connection) -> int:
    count: int = conn.execute(DEPTH).fetchone()[0]
    return count


def prune(conn: sqlite3.Connection, before: float) -> int:
    with immediate(conn):
        cursor = conn.execute(PRUNE, (before,))
    return cursor.rowcount


def item_from_row(row: tuple[Any, ...]) -> OutboxItem:
    item_id, key, channel, kind, payload, state, attempts, next_at, created_at, last_error, result, sent = row
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
        sent_at=sent,
    )


def last_payload_params(channel: str, key: str, prefix: str) -> tuple[Any, ...]:
    return (channel, key, len(prefix), prefix)


def last_payload(conn: sqlite3.Connection, channel: str, key: str, prefix: str) -> Mapping[str, Any] | None:
    row = conn.execute(LAST_PAYLOAD, last_payload_params(channel, key, prefix)).fetchone()
    return None if row is None else decode_payload(row[0])


def decode_payload(raw: str) -> Mapping[str, Any]:
    found = json.loads(raw)
    return found if isinstance(found, dict) else {}
