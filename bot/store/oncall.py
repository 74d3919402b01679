"""SQL for the on-call events of a group's firing episodes (`bot.domain.resolution.OncallEvent`).

One row per event, keyed once (`key`): a redelivered press, a re-run notification or two replicas
recording the same thing insert one row. Statements are written once with `?` parameters; the PostgreSQL
backend runs the same text (`bot.store.postgres.pg`). The buttons record the checks run from a message;
the resolution summary records the episode's record.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from bot.domain.resolution import EventKind, OncallEvent
from bot.store.transaction import immediate

COLUMNS = "key, channel, group_key, episode, kind, at, actor, detail"

INSERT = f"""
INSERT INTO oncall_events ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (key) DO NOTHING
"""  # noqa: S608 - column names are constants of this module, values are bound parameters

OF_EPISODE = (
    f"SELECT {COLUMNS} FROM oncall_events"  # noqa: S608
    " WHERE channel = ? AND group_key = ? AND episode = ? ORDER BY at, key"
)

OF_KIND = f"SELECT {COLUMNS} FROM oncall_events WHERE kind = ? AND at >= ? ORDER BY at, key"  # noqa: S608


def params(event: OncallEvent) -> tuple[Any, ...]:
    return (
        event.key,
        event.channel,
        event.group_key,
        event.episode,
        event.kind.value,
        event.at,
        event.actor,
        event.detail,
    )


def from_row(row: tuple[Any, ...]) -> OncallEvent:
    key, channel, group_key, episode, kind, at, actor, detail = row
    return OncallEvent(
        str(key),
        str(channel),
        str(group_key),
        float(episode),
        EventKind(kind),
        float(at),
        str(actor),
        str(detail),
    )


def record(conn: sqlite3.Connection, event: OncallEvent) -> bool:
    with immediate(conn):
        cursor = conn.execute(INSERT, params(event))
    return cursor.rowcount == 1


def of_episode(conn: sqlite3.Connection, channel: str, group_key: str, episode: float) -> list[OncallEvent]:
    return [from_row(r) for r in conn.execute(OF_EPISODE, (channel, group_key, episode)).fetchall()]


def of_kind(conn: sqlite3.Connection, kind: EventKind, since: float) -> list[OncallEvent]:
    return [from_row(r) for r in conn.execute(OF_KIND, (kind.value, since)).fetchall()]
