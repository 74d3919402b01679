"""SQL for accepted Alertmanager notifications (run on the store thread)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from bot.domain.alerts import AlertmanagerWebhook, parse_webhook
from bot.errors import InputError
from bot.store.models import Accepted, StoredNotification
from bot.store.transaction import immediate

log = logging.getLogger(__name__)

INSERT = """
INSERT INTO notifications
    (identity, group_key, status, receiver, alert_count, truncated_alerts, received_at, body)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (identity) DO UPDATE SET duplicates = notifications.duplicates + 1
RETURNING id, duplicates
"""
PENDING = """
SELECT id, identity, received_at, body FROM notifications
WHERE processed_at IS NULL ORDER BY id LIMIT ?
"""
SET_ASIDE = "UPDATE notifications SET processed_at = ?, error = ? WHERE id = ?"
MARK_PROCESSED = "UPDATE notifications SET processed_at = ? WHERE id = ? AND processed_at IS NULL"
# One notification by id, processed or not (a silenced group's last one: `bot.alerts.silenced_end`).
BY_ID = "SELECT id, identity, received_at, body FROM notifications WHERE id = ?"
PENDING_COUNT = "SELECT count(*) FROM notifications WHERE processed_at IS NULL"
PRUNE = "DELETE FROM notifications WHERE processed_at IS NOT NULL AND processed_at < ?"


@dataclass(slots=True)
class PendingNotification:
    """A notification waiting to be committed, and what became of it once its batch ran."""

    raw: bytes
    webhook: AlertmanagerWebhook
    received_at: float
    accepted: Accepted | None = None
    error: BaseException | None = None


def accept_batch(conn: sqlite3.Connection, arrivals: list[PendingNotification]) -> None:
    """Commit several arrivals in one transaction (one WAL append, at most one fsync) and record outcomes.

    A failure fails the whole batch: every arrival in it gets the error and its sender retries.
    """
    try:
        with immediate(conn):
            outcomes = [_insert(conn, arrival) for arrival in arrivals]
    except BaseException as error:
        for arrival in arrivals:
            arrival.error = error
        raise
    for arrival, accepted in zip(arrivals, outcomes, strict=True):
        arrival.accepted = accepted


def _insert(conn: sqlite3.Connection, arrival: PendingNotification) -> Accepted:
    notification_id, duplicates = conn.execute(INSERT, insert_row(arrival)).fetchone()
    return Accepted(id=notification_id, duplicate=duplicates > 0)


def insert_row(arrival: PendingNotification) -> tuple[object, ...]:
    webhook = arrival.webhook
    return (
        webhook.identity(),
        webhook.group_key,
        webhook.status.value,
        webhook.receiver,
        len(webhook.alerts),
        webhook.truncated_alerts,
        arrival.received_at,
        arrival.raw,
    )


def pending(
    conn: sqlite3.Connection, limit: int | None, now: float, besides: AbstractSet[int] = frozenset()
) -> list[StoredNotification]:
    # LIMIT -1 is SQLite for "no limit".
    fetched = conn.execute(PENDING, (-1 if limit is None else limit + len(besides),)).fetchall()
    stored, unreadable = parse_rows(kept_rows(fetched, besides, limit))
    for notification_id, problem in unreadable:
        with immediate(conn):
            conn.execute(SET_ASIDE, (now, problem, notification_id))
    return stored


def kept_rows(
    rows: list[tuple[Any, ...]], besides: AbstractSet[int], limit: int | None
) -> list[tuple[Any, ...]]:
    """The pending rows (id first, oldest first) whose id is not in `besides`, at most `limit`: the rows
    were fetched `len(besides)` beyond the limit. Those are left unparsed: in a storm the alert worker
    holds hundreds of applied notifications open (until their storm's row counts them), and parsing each
    again on every fetch cost more than parsing the new ones."""
    kept = [row for row in rows if row[0] not in besides]
    return kept if limit is None else kept[:limit]


def parse_rows(rows: list[tuple[Any, ...]]) -> tuple[list[StoredNotification], list[tuple[int, str]]]:
    """Pending rows as notifications, and the (id, problem) of rows that no longer validate.

    Those are only possible when a newer proxybot reads rows a looser older one accepted. Retrying can
    never succeed, so the caller closes them with the reason kept next to the body for a person to read.
    """
    stored: list[StoredNotification] = []
    unreadable: list[tuple[int, str]] = []
    for notification_id, identity, received_at, body in rows:
        raw = bytes(body)
        try:
            webhook = parse_webhook(raw)
        except InputError as error:
            log.error("stored notification %d no longer validates, set aside: %s", notification_id, error)
            unreadable.append((notification_id, str(error)))
            continue
        stored.append(StoredNotification(notification_id, identity, received_at, raw, webhook))
    return stored, unreadable


def by_id(conn: sqlite3.Connection, notification_id: int) -> StoredNotification | None:
    stored, _ = parse_rows(conn.execute(BY_ID, (notification_id,)).fetchall())
    return stored[0] if stored else None


def mark_processed(conn: sqlite3.Connection, notification_id: int, now: float) -> bool:
    with immediate(conn):
        cursor = conn.execute(MARK_PROCESSED, (now, notification_id))
    return cursor.rowcount == 1


def pending_count(conn: sqlite3.Connection) -> int:
    count: int = conn.execute(PENDING_COUNT).fetchone()[0]
    return count


def prune(conn: sqlite3.Connection, before: float) -> int:
    with immediate(conn):
        cursor = conn.execute(PRUNE, (before,))
    return cursor.rowcount
