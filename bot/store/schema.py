"""The schema as an ordered list of migrations; `PRAGMA user_version` records how many have run.

Each migration runs in its own IMMEDIATE transaction together with the user_version bump, so a crash
mid-migration leaves the database at the previous version, never half-migrated. Append new migrations;
never edit one that has shipped.
"""

from __future__ import annotations

import sqlite3

from bot.store.errors import StoreError

MIGRATIONS: tuple[str, ...] = (
    # 1: accepted notifications, alert group lifecycle, Slack outbox.
    """
    CREATE TABLE notifications (
        id INTEGER PRIMARY KEY,
        identity TEXT NOT NULL UNIQUE,
        group_key TEXT NOT NULL,
        status TEXT NOT NULL,
        receiver TEXT NOT NULL,
        alert_count INTEGER NOT NULL,
        truncated_alerts INTEGER NOT NULL,
        received_at REAL NOT NULL,
        body BLOB NOT NULL,
        duplicates INTEGER NOT NULL DEFAULT 0,
        processed_at REAL,
        error TEXT
    );
    CREATE INDEX notifications_pending ON notifications (id) WHERE processed_at IS NULL;

    CREATE TABLE alert_groups (
        channel TEXT NOT NULL,
        group_key TEXT NOT NULL,
        status TEXT NOT NULL,
        ts TEXT,
        first_firing_at REAL,
        resolved_at REAL,
        firing_fingerprints TEXT NOT NULL,
        details TEXT NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (channel, group_key)
    );

    CREATE TABLE outbox (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL UNIQUE,
        channel TEXT NOT NULL,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'done', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at REAL NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        last_error TEXT,
        result TEXT
    );
    CREATE INDEX outbox_due ON outbox (next_attempt_at, id) WHERE state = 'pending';
    """,
    # 2: fleet digests: one row per digest period (so a restart never posts a period twice, and the
    # next digest knows what changed), and small fleet samples for the digest's chart.
    """
    CREATE TABLE digest_runs (
        period TEXT PRIMARY KEY,
        state TEXT NOT NULL CHECK (state IN ('started', 'posted')),
        started_at REAL NOT NULL,
        posted_at REAL,
        summary TEXT
    );
    CREATE INDEX digest_runs_posted ON digest_runs (posted_at) WHERE state = 'posted';

    CREATE TABLE digest_samples (
        id INTEGER PRIMARY KEY,
        at REAL NOT NULL,
        sample TEXT NOT NULL
    );
    CREATE INDEX digest_samples_at ON digest_samples (at);
    """,
    # 3: the Slack channel ID of a group's message. Slack answers chat.postMessage with the ID whatever
    # the post named the channel by, and chat.update and uploads take only the ID. NULL for messages
    # posted before this migration: the delivery worker learns their channel's ID from the next post.
    """
    ALTER TABLE alert_groups ADD COLUMN channel_id TEXT;
    """,
    # 4: several processes on one store. Leases name the process that runs a worker; a digest period is
    # claimed by one process until its claim expires; a post's in-flight mark (`sent_at`) makes the next
    # sender look for the message in Slack before posting it again.
    """
    CREATE TABLE leases (
        name TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        until REAL NOT NULL
    );
    ALTER TABLE outbox ADD COLUMN sent_at REAL;
    ALTER TABLE digest_runs ADD COLUMN claimed_by TEXT;
    ALTER TABLE digest_runs ADD COLUMN lease_until REAL;
    """,
    # 5: the write probe behind /readyz: one row, rewritten by each probe, so "ready" means a write commits
    # now (a full disk, a read-only file or a held write lock leave reads working).
    """
    CREATE TABLE write_probe (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        owner TEXT NOT NULL,
        at REAL NOT NULL
    );
    """,
    # 6: acknowledgements ("I have it"): one row per channel and group, of the firing episode it was
    # pressed in (the group's first_firing_at then), so it survives restarts and every replica shows it.
    """
    CREATE TABLE acknowledgements (
        channel TEXT NOT NULL,
        group_key TEXT NOT NULL,
        episode REAL NOT NULL,
        user_id TEXT NOT NULL,
        user_name TEXT NOT NULL,
        acked_at REAL NOT NULL,
        PRIMARY KEY (channel, group_key)
    );
    """,
    # 7: escalations: one row per firing episode of a message, its deadline, and how it ended (NULL while
    # pending), so a restart or another leader neither loses nor repeats it.
    """
    CREATE TABLE escalations (
        channel TEXT NOT NULL,
        group_key TEXT NOT NULL,
        episode REAL NOT NULL,
        due_at REAL NOT NULL,
        outcome TEXT,
        closed_at REAL,
        PRIMARY KEY (channel, group_key, episode)
    );
    CREATE INDEX escalations_due ON escalations (due_at) WHERE outcome IS NULL;
    """,
    # 8: the on-call events of a group's firing episodes (a check run from its thread, the episode's
    # record once it resolved), keyed once.
    """
    CREATE TABLE oncall_events (
        key TEXT PRIMARY KEY,
        channel TEXT NOT NULL,
        group_key TEXT NOT NULL,
        episode REAL NOT NULL,
        kind TEXT NOT NULL,
        at REAL NOT NULL,
        actor TEXT NOT NULL,
        detail TEXT NOT NULL
    );
    CREATE INDEX oncall_events_episode ON oncall_events (channel, group_key, episode);
    CREATE INDEX oncall_events_kind ON oncall_events (kind, at);
    """,
    # 9: the silences proxybot made, by id, with the author it wrote (who they are attributed to).
    """
    CREATE TABLE silences_made (
        silence_id TEXT PRIMARY KEY,
        created_by TEXT NOT NULL,
        made_at REAL NOT NULL
    );
    """,
    # 10: the last fleet read from each platform, so a restart while it is unreachable serves that.
    """
    CREATE TABLE fleet_readings (
        platform TEXT PRIMARY KEY,
        prefix TEXT NOT NULL,
        instances TEXT NOT NULL,
        read_at REAL NOT NULL
    );
    """,
    # 11: verifications after resolve: one row per resolved episode of a message, when it is due, and how
    # it ended (NULL while pending), so a restart or another leader neither loses nor repeats it.
    """
    CREATE TABLE verifications (
        channel TEXT NOT NULL,
        group_key TEXT NOT NULL,
        episode REAL NOT NULL,
        due_at REAL NOT NULL,
        outcome TEXT,
        closed_at REAL,
        PRIMARY KEY (channel, group_key, episode)
    );
    CREATE INDEX verifications_due ON verifications (due_at) WHERE outcome IS NULL;
    """,
    # 12: each platform instance's history of what defines its proxy: one row per version of its facts.
    """
    CREATE TABLE instance_changes (
        platform TEXT NOT NULL,
        instance TEXT NOT NULL,
        seq INTEGER NOT NULL,
        at REAL NOT NULL,
        digest TEXT NOT NULL,
        facts TEXT NOT NULL,
        PRIMARY KEY (platform, instance, seq)
    );
    CREATE INDEX instance_changes_at ON instance_changes (platform, instance, at);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    version: int = conn.execute("PRAGMA user_version").fetchone()[0]
    return version


def migrate(conn: sqlite3.Connection, migrations: tuple[str, ...] = MIGRATIONS) -> int:
    """Bring the database up to the last migration; returns the version it started from."""
    start = schema_version(conn)
    if start > len(migrations):
        raise StoreError(
            f"the database is at schema version {start}, newer than this proxybot knows "
            f"({len(migrations)}); upgrade proxybot or point store.url at another file"
        )
    for version in range(start + 1, len(migrations) + 1):
        _apply(conn, version, migrations[version - 1])
    return start


def _apply(conn: sqlite3.Connection, version: int, script: str) -> None:
    # executescript() would COMMIT on its own; running statement by statement keeps the migration and
    # its version bump in one transaction.
    conn.execute("BEGIN IMMEDIATE")
    try:
        if schema_version(conn) < version:  # another process may have migrated meanwhile
            for statement in _statements(script):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {int(version)}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    # Migrations are plain DDL without string literals holding ';', so a split is exact here.
    return [statement.strip() for statement in script.split(";") if statement.strip()]
