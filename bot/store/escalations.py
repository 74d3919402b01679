"""SQL for escalations: one row per (channel, group, firing episode), pending until its deadline.

Statements are written once, with `?` parameters; each operation runs on both backends
(`bot.store.steps`). A row is made once (a second scheduling of the same episode keeps the first
deadline) and closed once (`outcome` set only while it is NULL), whichever replica asks.
"""

from __future__ import annotations

from typing import Any

from bot.domain.escalation import Escalation, EscalationOutcome
from bot.store.steps import Steps, changed_one, first_of, read, rows_of, write

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


def schedule(e: Escalation) -> Steps[Escalation]:
    yield write(SCHEDULE, schedule_params(e))
    row = (yield read(GET, where(e))).first()
    assert row is not None  # written, or kept, by the statement before in this transaction
    return from_row(row)


def due(now: float, limit: int) -> Steps[list[Escalation]]:
    return (yield from rows_of(read(DUE, (now, limit)), from_row))


def close(e: Escalation, outcome: EscalationOutcome, at: float) -> Steps[bool]:
    return (yield from changed_one(write(CLOSE, close_params(e, outcome, at))))


def get(e: Escalation) -> Steps[Escalation | None]:
    return (yield from first_of(read(GET, where(e)), from_row))
