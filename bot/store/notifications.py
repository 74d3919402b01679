"""SQL for accepted Alertmanager notifications: the statements and the operations both backends run."""

from __future__ import annotations

import logging
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from bot.domain.alerts import AlertmanagerWebhook, parse_webhook
from bot.errors import InputError
from bot.store.models import Accepted, StoredNotification
from bot.store.steps import Steps, changed_one, read, write

log = logging.getLogger(__name__)

INSERT = """
INSERT INTO notifications
    (identity, group_key, status, receiver, alert_count, truncated_alerts, received_at, body)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (identity) DO UPDATE SET duplicates = notifications.duplicates + 1
RETURNING id, duplicates
"""
PENDING_ALL = """
SELECT id, identity, received_at, body FROM notifications
WHERE processed_at IS NULL ORDER BY id
"""
PENDING = PENDING_ALL + "LIMIT ?"
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


def accept(arrivals: list[PendingNotification]) -> Steps[list[Accepted]]:
    """Insert the arrivals (one or a batch, in one transaction); an equal notification is kept once."""
    accepted: list[Accepted] = []
    for arrival in arrivals:
        row = (yield write(INSERT, insert_row(arrival))).first()
        assert row is not None  # INSERT ... ON CONFLICT DO UPDATE ... RETURNING always returns the row
        accepted.append(Accepted(id=row[0], duplicate=row[1] > 0))
    return accepted


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
    limit: int | None, now: float, besides: AbstractSet[int] = frozenset()
) -> Steps[list[StoredNotification]]:
    # Fetched `len(besides)` beyond the limit: those rows are left out below.
    statement = read(PENDING_ALL) if limit is None else read(PENDING, (limit + len(besides),))
    stored, unreadable = parse_rows(kept_rows((yield statement).rows, besides, limit))
    for notification_id, problem in unreadable:
        yield write(SET_ASIDE, (now, problem, notification_id))
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


def by_id(notification_id: int) -> Steps[StoredNotification | None]:
    stored, _ = parse_rows((yield read(BY_ID, (notification_id,))).rows)
    return stored[0] if stored else None


def mark_processed(notification_id: int, now: float) -> Steps[bool]:
    return (yield from changed_one(write(MARK_PROCESSED, (now, notification_id))))


def pending_count() -> Steps[int]:
    row = (yield read(PENDING_COUNT)).first()
    return 0 if row is None else int(row[0])


def prune(before: float) -> Steps[int]:
    return (yield write(PRUNE, (before,))).changed
