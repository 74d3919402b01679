"""The write probe behind /readyz: it commits, so a store that still reads but cannot write is not ready."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from bot import compose
from bot.store import Store, StoreError, open_store
from bot.store import sqlite as sqlite_backend
from tests.bot.store.conftest import FakeClock, Raw
from tests.fakes import postgres

postgres_server = postgres.postgres_server


async def test_each_probe_rewrites_one_row(store: Store, raw: Raw, clock: FakeClock) -> None:
    await store.check_writable()
    clock.advance(10)
    await store.check_writable()
    assert await raw("SELECT owner, at FROM write_probe") == [(store.owner, clock.now)]


async def test_sqlite_behind_another_writer_reads_but_is_not_ready(
    db_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_backend, "BUSY_TIMEOUT_SECONDS", 0.05)
    store = await open_store(f"sqlite:///{db_path}", clock=clock)
    ready = compose.store_readiness(store)
    try:
        with closing(sqlite3.connect(db_path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
            assert await store.depth() == 0  # reads go on (WAL)
            with pytest.raises(StoreError, match="database is locked"):
                await store.check_writable()
            assert await ready() == "store: sqlite: database is locked"
            other.execute("ROLLBACK")
        assert await ready() is None
    finally:
        await store.close()


async def test_a_read_only_postgresql_reads_but_is_not_ready(
    postgres_server: postgres.PostgresServer, clock: FakeClock
) -> None:
    url = await postgres_server.new_database()
    store = await open_store(url, clock=clock)
    try:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            # A failover onto a standby, as the bot sees it: its connections drop, and every transaction
            # on the new ones is read-only.
            read_only = sql.SQL("ALTER DATABASE {} SET default_transaction_read_only = on")
            await conn.execute(read_only.format(sql.Identifier(conn.info.dbname)))
            await conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        assert await store.depth() == 0
        ready = await compose.store_readiness(store)()
        assert ready is not None
        assert ready.startswith("store: postgresql at ")
        assert "read-only transaction" in ready
    finally:
        await store.close()
