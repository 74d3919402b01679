"""The PostgreSQL schema as an ordered list of migrations, applied at start under an advisory lock.

The tables and columns are those of the SQLite schema (`bot.store.schema`, at its version 5), so both
backends run the same statements; types are PostgreSQL's (`DOUBLE PRECISION` for times: `REAL` would be
single precision there). `proxybot_schema` holds how many migrations have run. Replicas starting together
serialise on `pg_advisory_xact_lock`, so exactly one applies each migration and the others find it done.
Append new migrations; never edit one that has shipped.
"""

from __future__ import annotations

from psycopg import AsyncConnection

from bot.store.errors import StoreError

# Any constant unique to proxybot: the key of the advisory lock the migrations take.
MIGRATION_LOCK = 0x70726F787962  # "proxyb"

PG_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: the SQLite schema as of its migration 4 (notifications, alert groups, outbox, digests, leases).
    (
        """CREATE TABLE notifications (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            identity TEXT NOT NULL UNIQUE,
            group_key TEXT NOT NULL,
            status TEXT NOT NULL,
            receiver TEXT NOT NULL,
            alert_count INTEGER NOT NULL,
            truncated_alerts INTEGER NOT NULL,
            received_at DOUBLE PRECISION NOT NULL,
            body BYTEA NOT NULL,
            duplicates INTEGER NOT NULL DEFAULT 0,
            processed_at DOUBLE PRECISION,
            error TEXT
        )""",
        "CREATE INDEX notifications_pending ON notifications (id) WHERE processed_at IS NULL",
        """CREATE TABLE alert_groups (
            channel TEXT NOT NULL,
            group_key TEXT NOT NULL,
            status TEXT NOT NULL,
            ts TEXT,
            first_firing_at DOUBLE PRECISION,
            resolved_at DOUBLE PRECISION,
            firing_fingerprints TEXT NOT NULL,
            details TEXT NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            channel_id TEXT,
            PRIMARY KEY (channel, group_key)
        )""",
        """CREATE TABLE outbox (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            channel TEXT NOT NULL,
            kind TEXT NOT NULL,
            payload TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('pending', 'done', 'failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at DOUBLE PRECISION NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            last_error TEXT,
            result TEXT,
            sent_at DOUBLE PRECISION
        )""",
        "CREATE INDEX outbox_due ON outbox (next_attempt_at, id) WHERE state = 'pending'",
        """CREATE TABLE digest_runs (
            period TEXT PRIMARY KEY,
            state TEXT NOT NULL CHECK (state IN ('started', 'posted')),
            started_at DOUBLE PRECISION NOT NULL,
            posted_at DOUBLE PRECISION,
            summary TEXT,
            claimed_by TEXT,
            lease_until DOUBLE PRECISION
        )""",
        "CREATE INDEX digest_runs_posted ON digest_runs (posted_at) WHERE state = 'posted'",
        """CREATE TABLE digest_samples (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            at DOUBLE PRECISION NOT NULL,
            sample TEXT NOT NULL
        )""",
        "CREATE INDEX digest_samples_at ON digest_samples (at)",
        """CREATE TABLE leases (
            name TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            until DOUBLE PRECISION NOT NULL
        )""",
    ),
    # 2: the SQLite schema's migration 5, the write probe behind /readyz (a read-only standby, a full
    # disk or a revoked INSERT grant leave reads working).
    (
        """CREATE TABLE write_probe (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            owner TEXT NOT NULL,
            at DOUBLE PRECISION NOT NULL
        )""",
    ),
    # 3: the SQLite schema's migration 6, acknowledgements of a group's firing episode.
    (
        """CREATE TABLE acknowledgements (
            channel TEXT NOT NULL,
            group_key TEXT NOT NULL,
            episode DOUBLE PRECISION NOT NULL,
            user_id TEXT NOT NULL,
            user_name TEXT NOT NULL,
            acked_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (channel, group_key)
        )""",
    ),
    # 4: the SQLite schema's migration 7, escalations of a message's firing episode.
    (
        """CREATE TABLE escalations (
            channel TEXT NOT NULL,
            group_key TEXT NOT NULL,
            episode DOUBLE PRECISION NOT NULL,
            due_at DOUBLE PRECISION NOT NULL,
            outcome TEXT,
            closed_at DOUBLE PRECISION,
            PRIMARY KEY (channel, group_key, episode)
        )""",
        "CREATE INDEX escalations_due ON escalations (due_at) WHERE outcome IS NULL",
    ),
    # 5: the SQLite schema's migration 8, the on-call events of a group's firing episodes.
    (
        """CREATE TABLE oncall_events (
            key TEXT PRIMARY KEY,
            channel TEXT NOT NULL,
            group_key TEXT NOT NULL,
            episode DOUBLE PRECISION NOT NULL,
            kind TEXT NOT NULL,
            at DOUBLE PRECISION NOT NULL,
            actor TEXT NOT NULL,
            detail TEXT NOT NULL
        )""",
        "CREATE INDEX oncall_events_episode ON oncall_events (channel, group_key, episode)",
        "CREATE INDEX oncall_events_kind ON oncall_events (kind, at)",
    ),
    # 6: the SQLite schema's migration 9, the silences proxybot made.
    (
        """CREATE TABLE silences_made (
            silence_id TEXT PRIMARY KEY,
            created_by TEXT NOT NULL,
            made_at DOUBLE PRECISION NOT NULL
        )""",
    ),
    # 7: the SQLite schema's migration 10, the last fleet read from each platform.
    (
        """CREATE TABLE fleet_readings (
            platform TEXT PRIMARY KEY,
            prefix TEXT NOT NULL,
            instances TEXT NOT NULL,
            read_at DOUBLE PRECISION NOT NULL
        )""",
    ),
    # 8: the SQLite schema's migration 11, verifications after resolve.
    (
        """CREATE TABLE verifications (
            channel TEXT NOT NULL,
            group_key TEXT NOT NULL,
            episode DOUBLE PRECISION NOT NULL,
            due_at DOUBLE PRECISION NOT NULL,
            outcome TEXT,
            closed_at DOUBLE PRECISION,
            PRIMARY KEY (channel, group_key, episode)
        )""",
        "CREATE INDEX verifications_due ON verifications (due_at) WHERE outcome IS NULL",
    ),
    # 9: the SQLite schema's migration 12, each platform instance's history of what defines its proxy.
    (
        """CREATE TABLE instance_changes (
            platform TEXT NOT NULL,
            instance TEXT NOT NULL,
            seq INTEGER NOT NULL,
            at DOUBLE PRECISION NOT NULL,
            digest TEXT NOT NULL,
            facts TEXT NOT NULL,
            PRIMARY KEY (platform, instance, seq)
        )""",
        "CREATE INDEX instance_changes_at ON instance_changes (platform, instance, at)",
    ),
)
PG_SCHEMA_VERSION = len(PG_MIGRATIONS)


async def migrate(conn: AsyncConnection, migrations: tuple[tuple[str, ...], ...] = PG_MIGRATIONS) -> int:
    """Bring the database up to the last migration in one transaction; the version it started from."""
    async with conn.transaction():
        # Waiting for another replica's migration, or a long migration, is not a stalled statement.
        await conn.execute("SET LOCAL statement_timeout = 0")
        await conn.execute("SET LOCAL lock_timeout = 0")
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        await conn.execute("CREATE TABLE IF NOT EXISTS proxybot_schema (version INTEGER NOT NULL)")
        cursor = await conn.execute("SELECT version FROM proxybot_schema")
        row = await cursor.fetchone()
        start = 0 if row is None else int(row[0])
        if start > len(migrations):
            raise StoreError(
                f"the database is at schema version {start}, newer than this proxybot knows "
                f"({len(migrations)}); upgrade proxybot or point store.url at another database"
            )
        for statements in migrations[start:]:
            for statement in statements:
                await conn.execute(statement)
        if row is None:
            await conn.execute("INSERT INTO proxybot_schema (version) VALUES (%s)", (len(migrations),))
        else:
            await conn.execute("UPDATE proxybot_schema SET version = %s", (len(migrations),))
    return start
