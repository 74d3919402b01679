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

from bot.store.models import DigestClaim
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


RUN_COLUMNS = "period, state, started_at, posted_at, summary"

# Takes a period nobody has claimed, or whose claim expired, or that is ours; never a posted one.
CLAIM = """
INSERT INTO digest_runs (period, state, started_at, claimed_by, lease_until) VALUES (?, 'started', ?, ?, ?)
ON CONFLICT (period) DO UPDATE SET
    started_at = excluded.started_at, claimed_by = excluded.claimed_by, lease_until = excluded.lease_until
WHERE digest_runs.state = 'started' AND (
    digest_runs.claimed_by IS NULL OR digest_runs.claimed_by = excluded.claimed_by
    OR digest_runs.lease_until IS NULL OR digest_runs.lease_until < ?)
RETURNING period
"""
CLAIM_STATE = "SELECT state, lease_until FROM digest_runs WHERE period = ?"
RENEW = "UPDATE digest_runs SET lease_until = ? WHERE period = ? AND claimed_by = ? AND state = 'started'"
FINISH = (
    "INSERT INTO digest_runs (period, state, started_at, posted_at, summary)"
    " VALUES (?, 'posted', ?, ?, ?)"
    " ON CONFLICT (period) DO UPDATE SET state = 'posted', posted_at = excluded.posted_at,"
    " summary = excluded.summary"
)
KEEP_LATEST = (
    "DELETE FROM digest_runs WHERE period NOT IN"
    " (SELECT period FROM digest_runs ORDER BY started_at DESC LIMIT ?)"
)
LAST_POSTED = (
    f"SELECT {RUN_COLUMNS} FROM digest_runs"  # noqa: S608 - constant columns
    " WHERE state = 'posted' AND (CAST(? AS TEXT) IS NULL OR period != ?) ORDER BY posted_at DESC LIMIT 1"
)
ADD_SAMPLE = "INSERT INTO digest_samples (at, sample) VALUES (?, ?)"
DROP_OLD_SAMPLES = "DELETE FROM digest_samples WHERE at < ?"
KEEP_SAMPLES = (
    "DELETE FROM digest_samples WHERE id NOT IN"
    " (SELECT id FROM digest_samples ORDER BY at DESC, id DESC LIMIT ?)"
)
SAMPLES = "SELECT at, sample FROM digest_samples WHERE at >= ? ORDER BY at, id"


def claim(
    conn: sqlite3.Connection, period: str, owner: str, now: float, ttl: float
) -> tuple[DigestClaim, float | None]:
    """Claim the period for `ttl` s; POSTED when it went out (a restart must not post it again), BUSY
    (with its expiry) while another process's claim is live."""
    with immediate(conn):
        if conn.execute(CLAIM, (period, now, owner, now + ttl, now)).fetchone() is not None:
            return DigestClaim.CLAIMED, now + ttl
        state, until = conn.execute(CLAIM_STATE, (period,)).fetchone()
    return claim_refusal(state, until)


def claim_refusal(state: str, until: float | None) -> tuple[DigestClaim, float | None]:
    if state == DigestState.POSTED.value:
        return DigestClaim.POSTED, None
    return DigestClaim.BUSY, until


def renew(conn: sqlite3.Connection, period: str, owner: str, until: float) -> bool:
    with immediate(conn):
        cursor = conn.execute(RENEW, (until, period, owner))
    return cursor.rowcount == 1


def finish(conn: sqlite3.Connection, period: str, summary: Mapping[str, Any], now: float) -> None:
    """Record the period as posted, with the summary the next digest compares against."""
    with immediate(conn):
        conn.execute(FINISH, (period, now, now, json.dumps(summary, sort_keys=True)))
        conn.execute(KEEP_LATEST, (KEEP_RUNS,))


def last_posted(conn: sqlite3.Connection, other_than: str | None) -> DigestRun | None:
    """The most recently posted run, other than `other_than` (the period being built now)."""
    row = conn.execute(LAST_POSTED, (other_than, other_than)).fetchone()
    return None if row is None else run_from_row(row)


def add_sample(conn: sqlite3.Connection, sample: FleetSample, keep_after: float) -> None:
    """Store one fleet sample; drop samples older than `keep_after` and beyond `MAX_SAMPLES` rows."""
    with immediate(conn):
        conn.execute(ADD_SAMPLE, (sample.at, json.dumps(sample.sample, sort_keys=True)))
        conn.execute(DROP_OLD_SAMPLES, (keep_after,))
        conn.execute(KEEP_SAMPLES, (MAX_SAMPLES,))


def samples(conn: sqlite3.Connection, since: float) -> list[FleetSample]:
    return [FleetSample(at, json.loads(sample)) for at, sample in conn.execute(SAMPLES, (since,)).fetchall()]


def run_from_row(row: tuple[Any, ...]) -> DigestRun:
    period, state, started_at, posted_at, summary = row
    return DigestRun(period, DigestState(state), started_at, posted_at, json.loads(summary or "{}"))
