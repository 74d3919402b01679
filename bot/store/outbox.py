"""SQL for the durable queue of Slack operations: the statements and the operations (`bot.store.steps`)
both backends run."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bot.store.models import Enqueued, OutboxItem, OutboxKind, OutboxState
from bot.store.steps import Steps, changed_one, first_of, lock, read, rows_of, write

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


def enqueue(op: Op, not_before: float, now: float, replace_pending: bool) -> Steps[Enqueued]:
    key, channel, kind, payload = op
    encoded = encode_payload(payload)
    row = (yield write(INSERT, (key, channel, kind.value, encoded, not_before, now, now))).first()
    if row is not None:
        return Enqueued(id=row[0], duplicate=False)
    # Locked: a replace must not race the worker completing the row.
    existing = (yield lock(SELECT_KEY, (key,))).first()
    assert existing is not None  # the conflicting row exists: rows are never deleted while pending
    row_id, state = existing
    if not (replace_pending and state == OutboxState.PENDING.value):
        return Enqueued(id=row_id, duplicate=True)
    yield write(REPLACE, (channel, kind.value, encoded, now, row_id))
    return Enqueued(id=row_id, duplicate=True, replaced=True)


def encode_payload(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, sort_keys=True)


def due(now: float, limit: int) -> Steps[list[OutboxItem]]:
    return (yield from rows_of(read(DUE, (now, limit)), item_from_row))


def by_key(key: str) -> Steps[OutboxItem | None]:
    return (yield from first_of(read(BY_KEY, (key,)), item_from_row))


def next_attempt_at() -> Steps[float | None]:
    return (yield from _earliest(NEXT_AT))


def oldest_pending_at() -> Steps[float | None]:
    return (yield from _earliest(OLDEST))


def _earliest(statement: str) -> Steps[float | None]:
    row = (yield read(statement)).first()
    return None if row is None or row[0] is None else float(row[0])


def complete(item_id: int, result: Mapping[str, Any] | None, now: float) -> Steps[bool]:
    encoded = None if result is None else json.dumps(result, sort_keys=True)
    return (yield from changed_one(write(COMPLETE, (encoded, now, item_id))))


def mark_sending(item_id: int, at: float | None, now: float, fence: tuple[str, str] | None) -> Steps[bool]:
    """Mark the row in flight; `fence` is (lease name, owner): only while that owner holds the lease."""
    if fence is None:
        return (yield from changed_one(write(MARK_SENDING, (at, now, item_id))))
    return (yield from changed_one(write(MARK_SENDING_FENCED, (at, now, item_id, *fence, now))))


def retry_later(item_id: int, at: float, error: str, now: float) -> Steps[bool]:
    return (yield from changed_one(write(RETRY, (at, error[:MAX_ERROR_CHARS], now, item_id))))


def give_up(item_id: int, error: str, now: float) -> Steps[bool]:
    return (yield from changed_one(write(GIVE_UP, (error[:MAX_ERROR_CHARS], now, item_id))))


def depth() -> Steps[int]:
    row = (yield read(DEPTH)).first()
    return 0 if row is None else int(row[0])


def prune(before: float) -> Steps[int]:
    return (yield write(PRUNE, (before,))).changed


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


def last_payload(channel: str, key: str, prefix: str) -> Steps[Mapping[str, Any] | None]:
    """The payload of the newest row of `channel` keyed `key` or under `prefix`."""
    params = (channel, key, len(prefix), prefix)
    return (yield from first_of(read(LAST_PAYLOAD, params), _payload_of))


def _payload_of(row: tuple[Any, ...]) -> Mapping[str, Any]:
    found = json.loads(row[0])
    return found if isinstance(found, dict) else {}
