"""SQL for the on-call events of a group's firing episodes (`bot.domain.resolution.OncallEvent`).

One row per event, keyed once (`key`): a redelivered press, a re-run notification or two replicas
recording the same thing insert one row. Statements are written once with `?` parameters; each
operation runs on both backends (`bot.store.steps`). The buttons record the checks run from a message;
the resolution summary records the episode's record.
"""

from __future__ import annotations

from typing import Any

from bot.domain.resolution import EventKind, OncallEvent
from bot.store.steps import Steps, changed_one, read, rows_of, write

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


def record(event: OncallEvent) -> Steps[bool]:
    return (yield from changed_one(write(INSERT, params(event))))


def of_episode(channel: str, group_key: str, episode: float) -> Steps[list[OncallEvent]]:
    return (yield from rows_of(read(OF_EPISODE, (channel, group_key, episode)), from_row))


def of_kind(kind: EventKind, since: float) -> Steps[list[OncallEvent]]:
    return (yield from rows_of(read(OF_KIND, (kind.value, since)), from_row))
