"""SQL for escalations: one row per (channel, group, firing episode), pending until its deadline.

Statements are written once, with `?` parameters; the PostgreSQL backend runs the same text
(`bot.store.postgres.pg`). A row is made once (a second scheduling of the same episode keeps the first
deadline) and closed once (`outcome` set only while it is NULL), whichever replica asks.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from bot.domain.escalation import Escalation, EscalationOutcome
from bot.store.transaction import immediate

COLUMNS = "channel, group_key, episode, due_at, outcome, closed_at"

SCHEDULE = (
    "INSERT INTO escalations (channel, group_key, episode, due_at) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (channel, group_key, episode) DO NOTHING"
)
GET = f"SELECT {COLUMNS} FROM escalations WHERE channel = ? AND group_key = ? AND episode = ?"  # noqa: S608
DUE = (
    f"SELECT {COLUMNS} FROM escalations"  # noqa: S608
    " WHERE outcome IS NULL AND due_at <= ? ORDER BY due_at, channel, group_key LIMIT ?"
)
CLOSE = (
    "UPDATE escalations SET outcome = ?, closed_at = ?"
    " WHERE channel = ? AND group_key = ? AND episode = ? AND outcome IS NULL"
)


def from_row(row: tuple[Any, ...]) -> Escalation:
    channel, group_key, episode, due_at, outcome, closed_at = row
    return Escalation(
        str(channel),
        str(group_key),
        float(episode),
        float(due_at),
        None if outcome is None else EscalationOutcome(str(outcome)),
        None if closed_at is None else float(closed_at),
    )


def schedule_params(e: Escalation) -> tuple[Any, ...]:
    return (e.channel, e.group_key, e.episode, e.due_at)


def where(e: Escalation) -> tuple[Any, ...]:
    return (e.channel, e.group_key, e.episode)


def close_params(e: Escalation, outcome: EscalationOutcome, at: float) -> tuple[Any, ...]:
    return (outcome.value, at, *where(e))


def schedule(conn: sqlite3.Connection, e: Escalation) -> Escalation:
    with immediate(conn):
        conn.execute(SCHEDULE, schedule_params(e))
        row = conn.execute(GET, where(e)).fetchone()
    return from_row(row)


def due(conn: sqlite3.Connection, now: float, limit: int) -> list[Escalation]:
    return [from_row(row) for row in conn.execute(DUE, (now, limit)).fetchall()]


def close(conn: sqlite3.Connection, e: Escalation, outcome: EscalationOutcome, at: float) -> bool:
    with immediate(conn):
        cursor = conn.execute(CLOSE, close_params(e, outcome, at))
    return cursor.rowcount == 1


def get(conn: sqlite3.Connection, e: Escalation) -> Escalation | None:
    row = conn.execute(GET, where(e)).fetchone()
    return None if row is None else from_row(row)
