"""Opening the store: URLs, WAL, migrations by user_version, clear errors."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest

from bot.domain.alerts import parse_webhook
from bot.store import StoreError, open_store
from bot.store.schema import MIGRATIONS, SCHEMA_VERSION, migrate, schema_version
from bot.store.thread import ConnectionThread
from tests.bot.domain import alertmanager_samples as samples


def pragma(db_path: Path, name: str) -> object:
    with closing(sqlite3.connect(db_path)) as conn:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]


def tables(db_path: Path) -> set[str]:
    with closing(sqlite3.connect(db_path)) as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {name for (name,) in rows}


async def test_a_new_file_is_created_in_wal_mode_at_the_latest_schema(db_path: Path) -> None:
    store = await open_store(f"sqlite:///{db_path}")
    await store.close()
    assert SCHEMA_VERSION == len(MIGRATIONS) >= 1
    assert pragma(db_path, "user_version") == SCHEMA_VERSION
    # WAL is a property of the file: a fresh connection sees it.
    assert pragma(db_path, "journal_mode") == "wal"
    assert {"notifications", "alert_groups", "outbox"} <= tables(db_path)


@pytest.mark.parametrize("form", ["sqlite:///{path}", "{path}"])
async def test_both_url_forms_open_the_same_file(db_path: Path, form: str) -> None:
    async with await open_store(form.format(path=db_path)) as store:
        await store.accept(samples.FIRING, parse_webhook(samples.FIRING), 1.0)
    assert db_path.exists()


@pytest.mark.parametrize("url", [":memory:", "sqlite:///:memory:"])
async def test_an_in_memory_store_works(url: str) -> None:
    async with await open_store(url) as store:
        accepted = await store.accept(samples.FIRING, parse_webhook(samples.FIRING), 1.0)
        assert [stored.id for stored in await store.pending()] == [accepted.id]


async def test_reopening_does_not_migrate_again(db_path: Path) -> None:
    async with await open_store(str(db_path)) as store:
        await store.accept(samples.FIRING, parse_webhook(samples.FIRING), 1.0)
    async with await open_store(str(db_path)) as store:
        assert await store.pending_count() == 1
    assert pragma(db_path, "user_version") == SCHEMA_VERSION


async def test_a_database_from_a_newer_proxybot_is_refused(db_path: Path) -> None:
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer than this proxybot"):
        await open_store(str(db_path))


async def test_a_file_that_is_not_a_database_is_a_store_error(db_path: Path) -> None:
    db_path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a database"):
        await open_store(str(db_path))


async def test_a_missing_directory_is_a_store_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "proxybot.db"
    with pytest.raises(StoreError, match=re.escape(str(path))) as caught:
        await open_store(str(path))
    assert f"the directory {path.parent} does not exist" in str(caught.value)


@pytest.mark.parametrize("url", ["mysql://root:s3cr3t@db/x", "redis://:s3cr3t@db/0"])
async def test_other_schemes_are_refused_without_repeating_the_url(url: str) -> None:
    with pytest.raises(StoreError) as caught:
        await open_store(url)
    assert "not supported" in str(caught.value)
    assert "s3cr3t" not in str(caught.value)


async def test_an_unreachable_postgresql_names_the_server_never_the_password() -> None:
    with pytest.raises(StoreError) as caught:
        await open_store("postgresql://bot:s3cr3t@127.0.0.1:9/proxybot")
    assert "cannot connect to postgresql at 127.0.0.1:9/proxybot" in str(caught.value)
    assert "s3cr3t" not in str(caught.value)


async def test_an_empty_path_is_refused() -> None:
    with pytest.raises(StoreError, match="no database file"):
        await open_store("sqlite:///")


async def test_a_closed_store_refuses_work(db_path: Path) -> None:
    store = await open_store(str(db_path))
    await store.close()
    await store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.pending()


async def test_closing_joins_the_store_thread_off_the_event_loop(db_path: Path) -> None:
    thread = ConnectionThread(lambda: sqlite3.connect(db_path, check_same_thread=False))
    await thread.start()
    release, started = threading.Event(), threading.Event()

    def work(conn: sqlite3.Connection) -> bool:
        started.set()
        return release.wait(5)

    busy = asyncio.create_task(thread.run(work))
    await asyncio.to_thread(started.wait, 5)  # the store thread is inside that work now
    closing = asyncio.create_task(thread.close())
    await asyncio.sleep(0)  # one turn, not a wait for time: close() queues its work and awaits it
    closing.cancel()  # the closer stops waiting: the thread is still joined, while the loop runs on
    threading.Timer(0.3, release.set).start()
    ticks = 0
    while not closing.done():
        await asyncio.sleep(0.01)  # not a wait: the loop's other work, counted while the thread is joined
        ticks += 1
    assert ticks >= 10, "the loop kept running while the store thread finished its work"
    assert await busy is True


# -- migrations ------------------------------------------------------------------------------------------


def test_migrations_run_in_order_from_an_empty_database() -> None:
    steps = ("CREATE TABLE a (x INTEGER)", "ALTER TABLE a ADD COLUMN y TEXT; CREATE TABLE b (z INTEGER)")
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
        assert migrate(conn, steps[:1]) == 0
        conn.execute("INSERT INTO a (x) VALUES (1)")
        assert migrate(conn, steps) == 1
        assert schema_version(conn) == 2
        assert conn.execute("SELECT x, y FROM a").fetchall() == [(1, None)]
        assert migrate(conn, steps) == 2


def test_a_failing_migration_leaves_the_previous_version_intact() -> None:
    steps = ("CREATE TABLE a (x INTEGER)", "CREATE TABLE b (z INTEGER); CREATE TABLE a (x INTEGER)")
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
        with pytest.raises(sqlite3.OperationalError, match="already exists"):
            migrate(conn, steps)
        assert schema_version(conn) == 1
        # Table b of the failed step was rolled back with it.
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'b'").fetchall() == []
