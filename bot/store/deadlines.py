"""SQL for a deadline per (channel, group, episode), the shape escalations and verifications after resolve
share: one row, pending until its due time, made once (a second scheduling of the same episode keeps the
first due time) and closed once (`outcome` set only while it is NULL), whichever replica asks.

Statements are written once, with `?` parameters, per table; each operation runs on both backends
(`bot.store.steps`). The table name is the module's own constant, never input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from bot.domain.deadline import EpisodeDeadline
from bot.store.steps import Steps, changed_one, first_of, read, rows_of, write

COLUMNS = "channel, group_key, episode, due_at, outcome, closed_at"


D = TypeVar("D", bound=EpisodeDeadline[Any])
E = TypeVar("E", bound=StrEnum)  # how a deadline ended


@dataclass(frozen=True)
class DeadlineTable(Generic[D, E]):
    """One table of deadlines: its name, and how a row becomes its domain value."""

    table: str
    make: Callable[[str, str, float, float, E | None, float | None], D]
    outcome: Callable[[str], E]

    def _row(self, row: tuple[Any, ...]) -> D:
        channel, group_key, episode, due_at, outcome, closed_at = row
        ended = None if outcome is None else self.outcome(str(outcome))
        closed = None if closed_at is None else float(closed_at)
        return self.make(str(channel), str(group_key), float(episode), float(due_at), ended, closed)

    def schedule(self, d: D) -> Steps[D]:
        insert = (
            f"INSERT INTO {self.table} (channel, group_key, episode, due_at) VALUES (?, ?, ?, ?)"  # noqa: S608
            " ON CONFLICT (channel, group_key, episode) DO NOTHING"
        )
        yield write(insert, (*_where(d), d.due_at))
        row = (yield read(self._get, _where(d))).first()
        assert row is not None  # written, or kept, by the statement before in this transaction
        return self._row(row)

    def due(self, now: float, limit: int) -> Steps[list[D]]:
        select = (
            f"SELECT {COLUMNS} FROM {self.table}"  # noqa: S608
            " WHERE outcome IS NULL AND due_at <= ? ORDER BY due_at, channel, group_key LIMIT ?"
        )
        return (yield from rows_of(read(select, (now, limit)), self._row))

    def close(self, d: D, outcome: E, at: float) -> Steps[bool]:
        update = (
            f"UPDATE {self.table} SET outcome = ?, closed_at = ?"  # noqa: S608
            " WHERE channel = ? AND group_key = ? AND episode = ? AND outcome IS NULL"
        )
        return (yield from changed_one(write(update, (outcome.value, at, *_where(d)))))

    def get(self, d: D) -> Steps[D | None]:
        return (yield from first_of(read(self._get, _where(d)), self._row))

    @property
    def _get(self) -> str:
        return f"SELECT {COLUMNS} FROM {self.table} WHERE channel = ? AND group_key = ? AND episode = ?"  # noqa: S608


def _where(d: EpisodeDeadline[Any]) -> tuple[Any, ...]:
    return (d.channel, d.group_key, d.episode)
