"""SQL for fleet digests: which periods were posted (with their summary), and fleet samples for charts.

Both tables stay small on purpose: runs beyond `KEEP_RUNS` and samples older than the retention the
caller passes (or beyond `MAX_SAMPLES` rows) are deleted on every write.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bot.store.transaction import immediate

KEEP_RUNS = 200
MAX_SAMPLES = 2000


class DigestState(StrEnum):
    """Where one digest period stands."""

    STARTED = "started"
    POSTED = "posted"


@dataclass(frozen=True, slots=True)
class DigestRun:
    """One digest period: when it started, when it was posted, and what it said (for the next one)."""

    period: str
    state: DigestState
    started_at: float
    posted_at: float | None
    summary: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class FleetSample:
    """A small summary of the fleet at one instant (JSON-shaped), for the digest's chart."""

    at: float
    sample: Mapping[str, Any]


_RUN_COLUMNS = "period, state, started_at, posted_at, summary"


def claim(conn: sqlite3.Connection, period: str, now: float) -> bool:
    """Start the period's run; False when it was already posted (a restart must not post it again)."""
    with immediate(conn):
        row = conn.execute("SELECT state FROM digest_runs WHERE period = ?", (period,)).fetchone()
        if row is not None and row[0] == DigestState.POSTED.value:
            return False
        conn.execute(
            "INSERT INTO digest_runs (period, state, started_at) VALUES (?, 'started', ?)"
            " ON CONFLICT (period) DO UPDATE SET started_at = excluded.started_at",
            (period, now),
        )
    return True


def finish(conn: sqlite3.Connection, period: str, summary: Mapping[str, Any], now: float) -> None:
    """Record the period as posted, with the summary the next digest compares against."""
    encoded = json.dumps(summary, sort_keys=True)
    with immediate(conn):
        conn.execute(
            "INSERT INTO digest_runs (period, state, started_at, posted_at, summary)"
            " VALUES (?, 'posted', ?, ?, ?)"
            " ON CONFLICT (period) DO UPDATE SET state = 'posted', posted_at = excluded.posted_at,"
            " summary = excluded.summary",
            (period, now, now, encoded),
        )
        conn.execute(
            "DELETE FROM digest_runs WHERE period NOT IN"
            " (SELECT period FROM digest_runs ORDER BY started_at DESC LIMIT ?)",
            (KEEP_RUNS,),
        )


def last_posted(conn: sqlite3.Connection, other_than: str | None) -> DigestRun | None:
    """The most recently posted run, other than `other_than` (the period being built now)."""
    row = conn.execute(
        f"SELECT {_RUN_COLUMNS} FROM digest_runs"  # noqa: S608 - constant columns
        " WHERE state = 'posted' AND (?1 IS NULL OR period != ?1) ORDER BY posted_at DESC LIMIT 1",
        (other_than,),
    ).fetchone()
    return None if row is None else _run(row)


def add_sample(conn: sqlite3.Connection, sample: FleetSample, keep_after: float) -> None:
    """Store one fleet sample; drop samples older than `keep_after` and beyond `MAX_SAMPLES` rows."""
    with immediate(conn):
        conn.execute(
            "INSERT INTO digest_samples (at, sample) VALUES (?, ?)",
            (sample.at, json.dumps(sample.sample, sort_keys=True)),
        )
        conn.execute("DELETE FROM digest_samples WHERE at < ?", (keep_after,))
        conn.execute(
            "DELETE FROM digest_samples WHERE id NOT IN"
            " (SELECT id FROM digest_samples ORDER BY at DESC, id DESC LIMIT ?)",
            (MAX_SAMPLES,),
        )


def samples(conn: sqlite3.Connection, since: float) -> list[FleetSample]:
    rows = conn.execute(
        "SELECT at, sample FROM digest_samples WHERE at >= ? ORDER BY at, id", (since,)
    ).fetchall()
    return [FleetSample(at, json.loads(sample)) for at, sample in rows]


def _run(row: tuple[Any, ...]) -> DigestRun:
    period, state, started_at, posted_at, summary = row
    return DigestRun(period, DigestState(state), started_at, posted_at, json.loads(summary or "{}"))
