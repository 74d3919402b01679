"""SQL for acknowledgements: one row per (channel, group), the first press of an episode wins.

Statements are written once, with `?` parameters; each operation runs on both backends
(`bot.store.steps`). A row is the group's acknowledgement only while its `episode` is the group's
`first_firing_at`: a group that resolved and fires again starts a new episode, unacknowledged, and the
next press replaces the old row.
"""

from __future__ import annotations

from typing import Any

from bot.store.models import Acknowledgement
from bot.store.steps import Steps, changed_one, first_of, read, write

COLUMNS = "channel, group_key, episode, user_id, user_name, acked_at"

# Taken when nobody has this episode; a row of an earlier episode is replaced. Never overwrites a
# holder of the same episode: the second of two presses keeps the first one's row.
TAKE = f"""
INSERT INTO acknowledgements ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (channel, group_key) DO UPDATE SET
    episode = excluded.episode, user_id = excluded.user_id, user_name = excluded.user_name,
    acked_at = excluded.acked_at
WHERE acknowledgements.episode <> excluded.episode
"""  # noqa: S608 - column names are constants of this module, values are bound parameters

GET = f"SELECT {COLUMNS} FROM acknowledgements WHERE channel = ? AND group_key = ?"  # noqa: S608

# The group's acknowledgement if it is of the group's current episode.
CURRENT = (
    "SELECT a.channel, a.group_key, a.episode, a.user_id, a.user_name, a.acked_at"
    " FROM acknowledgements a JOIN alert_groups g"
    " ON g.channel = a.channel AND g.group_key = a.group_key AND g.first_firing_at = a.episode"
    " WHERE a.channel = ? AND a.group_key = ?"
)

DROP = "DELETE FROM acknowledgements WHERE channel = ? AND group_key = ? AND episode = ?"


def take_params(ack: Acknowledgement) -> tuple[Any, ...]:
    return (ack.channel, ack.group_key, ack.episode, ack.user, ack.user_name, ack.at)


def from_row(row: tuple[Any, ...]) -> Acknowledgement:
    channel, group_key, episode, user, name, at = row
    return Acknowledgement(str(channel), str(group_key), float(episode), str(user), str(name), float(at))


def take(ack: Acknowledgement) -> Steps[Acknowledgement]:
    """Acknowledge unless someone has this episode already; the episode's holder afterwards."""
    yield write(TAKE, take_params(ack))
    row = (yield read(GET, (ack.channel, ack.group_key))).first()
    assert row is not None  # written, or kept, by the statement before in this transaction
    return from_row(row)


def current(channel: str, group_key: str) -> Steps[Acknowledgement | None]:
    return (yield from first_of(read(CURRENT, (channel, group_key)), from_row))


def drop(channel: str, group_key: str, episode: float) -> Steps[bool]:
    return (yield from changed_one(write(DROP, (channel, group_key, episode))))
