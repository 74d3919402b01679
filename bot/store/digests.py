"""SQL for fleet digests: which periods were posted (with their summary), and fleet samples for charts.

Both tables stay small on purpose: runs beyond `KEEP_RUNS` and samples older than the retention the
caller passes (or beyond `MAX_SAMPLES` rows) are deleted on every write.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bot.store.models import DigestClaim
from bot.store.steps import Steps, changed_one, first_of, read, rows_of, write

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


def claim(period: str, owner: str, now: float, ttl: float) -> Steps[tuple[DigestClaim, float | None]]:
    """Claim the period for `ttl` s; POSTED when it went out (a restart must not post it again), BUSY
    (with its expiry) while another process's claim is live."""
    if (yield write(CLAIM, (period, now, owner, now + ttl, now))).first() is not None:
        return DigestClaim.CLAIMED, now + ttl
    row = (yield read(CLAIM_STATE, (period,))).first()
    assert row is not None  # the claim conflicted with this row
    state, until = row
    if state == DigestState.POSTED.value:
        return DigestClaim.POSTED, None
    return DigestClaim.BUSY, until


def renew(period: str, owner: str, until: float) -> Steps[bool]:
    return (yield from changed_one(write(RENEW, (until, period, owner))))


def finish(period: str, summary: Mapping[str, Any], now: float) -> Steps[None]:
    """Record the period as posted, with the summary the next digest compares against."""
    yield write(FINISH, (period, now, now, json.dumps(summary, sort_keys=True)))
    yield write(KEEP_LATEST, (KEEP_RUNS,))


def last_posted(other_than: str | None) -> Steps[DigestRun | None]:
    """The most recently posted run, other than `other_than` (the period being built now)."""
    return (yield from first_of(read(LAST_POSTED, (other_than, other_than)), run_from_row))


def add_sample(sample: FleetSample, keep_after: float) -> Steps[None]:
    """Store one fleet sample; drop samples older than `keep_after` and beyond `MAX_SAMPLES` rows."""
    yield write(ADD_SAMPLE, (sample.at, json.dumps(sample.sample, sort_keys=True)))
    yield write(DROP_OLD_SAMPLES, (keep_after,))
    yield write(KEEP_SAMPLES, (MAX_SAMPLES,))


def samples(since: float) -> Steps[list[FleetSample]]:
    return (yield from rows_of(read(SAMPLES, (since,)), lambda row: FleetSample(row[0], json.loads(row[1]))))


def run_from_row(row: tuple[Any, ...]) -> DigestRun:
    period, state, started_at, posted_at, summary = row
    return DigestRun(period, DigestState(state), started_at, posted_at, json.loads(summary or "{}"))
