"""SQL for verifications after resolve: one row per (channel, group, resolved episode), pending until due.

Statements are written once, with `?` parameters; each operation runs on both backends
(`bot.store.steps`). A row is made once (a second scheduling of the same episode keeps the first due
time) and closed once (`outcome` set only while it is NULL), whichever replica asks.
"""

from __future__ import annotations

from typing import Any

from bot.domain.verification import Verification, VerificationOutcome
from bot.store.steps import Steps, changed_one, first_of, read, rows_of, write

COLUMNS = "channel, group_key, episode, due_at, outcome, closed_at"

SCHEDULE = (
    "INSERT INTO verifications (channel, group_key, episode, due_at) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (channel, group_key, episode) DO NOTHING"
)
GET = f"SELECT {COLUMNS} FROM verifications WHERE channel = ? AND group_key = ? AND episode = ?"  # noqa: S608
DUE = (
    f"SELECT {COLUMNS} FROM verifications"  # noqa: S608
    " WHERE outcome IS NULL AND due_at <= ? ORDER BY due_at, channel, group_key LIMIT ?"
)
CLOSE = (
    "UPDATE verifications SET outcome = ?, closed_at = ?"
    " WHERE channel = ? AND group_key = ? AND episode = ? AND outcome IS NULL"
)


def from_row(row: tuple[Any, ...]) -> Verification:
    channel, group_key, episode, due_at, outcome, closed_at = row
    return Verification(
        str(channel),
        str(group_key),
        float(episode),
        float(due_at),
        None if outcome is None else VerificationOutcome(str(outcome)),
        None if closed_at is None else float(closed_at),
    )


def where(v: Verification) -> tuple[Any, ...]:
    return (v.channel, v.group_key, v.episode)


def schedule(v: Verification) -> Steps[Verification]:
    yield write(SCHEDULE, (*where(v), v.due_at))
    row = (yield read(GET, where(v))).first()
    assert row is not None  # written, or kept, by the statement before in this transaction
    return from_row(row)


def due(now: float, limit: int) -> Steps[list[Verification]]:
    return (yield from rows_of(read(DUE, (now, limit)), from_row))


def close(v: Verification, outcome: VerificationOutcome, at: float) -> Steps[bool]:
    return (yield from changed_one(write(CLOSE, (outcome.value, at, *where(v)))))


def get(v: Verification) -> Steps[Verification | None]:
    return (yield from first_of(read(GET, where(v)), from_row))
