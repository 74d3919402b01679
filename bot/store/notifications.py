"""SQL for accepted Alertmanager notifications (run on the store thread)."""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass

from bot.domain.alerts import AlertmanagerWebhook, parse_webhook
from bot.errors import InputError
from bot.store.models import Accepted, StoredNotification
from bot.store.transaction import immediate

log = logging.getLogger(__name__)

_INSERT = """
INSERT INTO notifications
    (identity, group_key, status, receiver, alert_count, truncated_alerts, received_at, body)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (identity) DO UPDATE SET duplicates = duplicates + 1
RETURNING id, duplicates
"""
_PENDING = """
SELECT id, identity, received_at, body FROM notifications
WHERE processed_at IS NULL ORDER BY id LIMIT ?
"""


@dataclass(slots=True)
class Arrival:
    """A notification waiting to be committed, and what became of it once its batch ran."""

    raw: bytes
    webhook: AlertmanagerWebhook
    received_at: float
    accepted: Accepted | None = None
    error: BaseException | None = None


def accept_batch(conn: sqlite3.Connection, arrivals: list[Arrival]) -> None:
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


def _insert(conn: sqlite3.Connection, arrival: Arrival) -> Accepted:
    webhook = arrival.webhook
    row = (
        webhook.identity(),
        webhook.group_key,
        webhook.status.value,
        webhook.receiver,
        len(webhook.alerts),
        webhook.truncated_alerts,
        arrival.received_at,
        arrival.raw,
    )
    notification_id, duplicates = conn.execute(_INSERT, row).fetchone()
    return Accepted(id=notification_id, duplicate=duplicates > 0)


def pending(conn: sqlite3.Connection, limit: int | None, now: float) -> list[StoredNotification]:
    # LIMIT -1 is SQLite for "no limit".
    rows = conn.execute(_PENDING, (-1 if limit is None else limit,)).fetchall()
    stored: list[StoredNotification] = []
    for notification_id, identity, received_at, body in rows:
        raw = bytes(body)
        try:
            webhook = parse_webhook(raw)
        except InputError as error:
            _set_aside(conn, notification_id, str(error), now)
            continue
        stored.append(StoredNotification(notification_id, identity, received_at, raw, webhook))
    return stored


def _set_aside(conn: sqlite3.Connection, notification_id: int, problem: str, now: float) -> None:
    # Only possible when a newer proxybot reads rows a looser older one accepted. Retrying can never
    # succeed, so the row is closed with the reason kept next to the body for a person to look at.
    log.error("stored notification %d no longer validates and is set aside: %s", notification_id, problem)
    with immediate(conn):
        conn.execute(
            "UPDATE notifications SET processed_at = ?, error = ? WHERE id = ?",
            (now, problem, notification_id),
        )


def mark_processed(conn: sqlite3.Connection, notification_id: int, now: float) -> bool:
    with immediate(conn):
        cursor = conn.execute(
            "UPDATE notifications SET processed_at = ? WHERE id = ? AND processed_at IS NULL",
            (now, notification_id),
        )
    return cursor.rowcount == 1


def pending_count(conn: sqlite3.Connection) -> int:
    count: int = conn.execute("SELECT count(*) FROM notifications WHERE processed_at IS NULL").fetchone()[0]
    return count


def prune(conn: sqlite3.Connection, before: float) -> int:
    with immediate(conn):
        cursor = conn.execute(
            "DELETE FROM notifications WHERE processed_at IS NOT NULL AND processed_at < ?", (before,)
        )
    return cursor.rowcount
