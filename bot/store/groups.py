"""SQL for the lifecycle of alert groups per Slack channel (run on the store thread)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from bot.domain.alerts import AlertStatus
from bot.store.models import AlertGroupState
from bot.store.transaction import immediate

_COLUMNS = (
    "channel, group_key, status, ts, first_firing_at, resolved_at, firing_fingerprints, details, updated_at,"
    " channel_id"
)

_UPSERT = f"""
INSERT INTO alert_groups ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (channel, group_key) DO UPDATE SET
    status = excluded.status, ts = COALESCE(excluded.ts, alert_groups.ts),
    channel_id = COALESCE(excluded.channel_id, alert_groups.channel_id),
    first_firing_at = excluded.first_firing_at,
    resolved_at = excluded.resolved_at, firing_fingerprints = excluded.firing_fingerprints,
    details = excluded.details, updated_at = excluded.updated_at
"""  # noqa: S608 - column names are constants of this module, values are bound parameters


def get(conn: sqlite3.Connection, channel: str, group_key: str) -> AlertGroupState | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM alert_groups WHERE channel = ? AND group_key = ?",  # noqa: S608
        (channel, group_key),
    ).fetchone()
    return None if row is None else _state(row)


def save(conn: sqlite3.Connection, state: AlertGroupState, now: float) -> AlertGroupState:
    """Upsert a group. A message `ts` (and channel ID) once stored is kept when `state.ts` is None: the
    pipeline may save a state it read before the delivery worker stored the ts of the post it just made."""
    saved = AlertGroupState(
        channel=state.channel,
        group_key=state.group_key,
        status=state.status,
        ts=state.ts,
        first_firing_at=state.first_firing_at,
        resolved_at=state.resolved_at,
        firing_fingerprints=frozenset(state.firing_fingerprints),
        details=dict(state.details),
        updated_at=now,
        channel_id=state.channel_id,
    )
    with immediate(conn):
        conn.execute(_UPSERT, _row(saved, now))
    return saved


def listing(
    conn: sqlite3.Connection, channel: str | None, status: AlertStatus | None
) -> list[AlertGroupState]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM alert_groups"  # noqa: S608
        " WHERE (?1 IS NULL OR channel = ?1) AND (?2 IS NULL OR status = ?2)"
        " ORDER BY updated_at, channel, group_key",
        (channel, None if status is None else status.value),
    ).fetchall()
    return [_state(row) for row in rows]


def _row(state: AlertGroupState, now: float) -> tuple[Any, ...]:
    return (
        state.channel,
        state.group_key,
        state.status.value,
        state.ts,
        state.first_firing_at,
        state.resolved_at,
        json.dumps(sorted(state.firing_fingerprints)),
        json.dumps(state.details, sort_keys=True),
        now,
        state.channel_id,
    )


def _state(row: tuple[Any, ...]) -> AlertGroupState:
    channel, group_key, status, ts, first_firing_at, resolved_at, fingerprints, details, updated_at = row[:9]
    return AlertGroupState(
        channel=channel,
        group_key=group_key,
        status=AlertStatus(status),
        ts=ts,
        first_firing_at=first_firing_at,
        resolved_at=resolved_at,
        firing_fingerprints=frozenset(json.loads(fingerprints)),
        details=json.loads(details),
        updated_at=updated_at,
        channel_id=row[9],
    )
