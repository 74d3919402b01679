"""What only the PostgreSQL backend does: migrations under an advisory lock, errors without the password."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from bot.store import OutboxKind, StoreError, open_store
from bot.store.pg_schema import PG_SCHEMA_VERSION
from tests.fakes.postgres import PostgresServer


async def _schema_rows(url: str) -> list[tuple[int]]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cursor = await conn.execute("SELECT version FROM proxybot_schema")
        return await cursor.fetchall()


async def test_replicas_starting_together_migrate_once(postgres_server: PostgresServer) -> None:
    url = await postgres_server.new_database()
    stores = await asyncio.gather(*(open_store(url, owner=f"r{n}") for n in range(4)))
    try:
        assert await _schema_rows(url) == [(PG_SCHEMA_VERSION,)]
        await stores[0].enqueue("k", "#a", OutboxKind.POST, {"text": "x"})
        assert (await stores[3].outbox_item("k")) is not None
    finally:
        await asyncio.gather(*(store.close() for store in stores))


async def test_a_database_from_a_newer_proxybot_is_refused(postgres_server: PostgresServer) -> None:
    url = await postgres_server.new_database()
    await (await open_store(url)).close()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("UPDATE proxybot_schema SET version = %s", (PG_SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match="newer than this proxybot knows"):
        await open_store(url)


async def test_a_wrong_password_is_named_without_the_password(postgres_server: PostgresServer) -> None:
    url = await postgres_server.new_database()
    wrong = url.replace(f":{postgres_server.password}@", ":n0t-the-pw@")
    assert "n0t-the-pw" in wrong
    with pytest.raises(StoreError) as caught:
        await open_store(wrong)
    assert "password authentication failed" in str(caught.value)
    assert "n0t-the-pw" not in str(caught.value)


async def test_a_store_whose_server_went_away_fails_clearly_and_recovers(
    postgres_server: PostgresServer,
) -> None:
    url = await postgres_server.new_database()
    name = url.rsplit("/", 1)[1]
    async with await open_store(url) as store:
        await store.depth()
        async with await psycopg.AsyncConnection.connect(postgres_server.url, autocommit=True) as admin:
            # Every connection of the store is cut, as a server restart or failover would.
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
            )
        # The pool notices the dead connections on checkout and replaces them.
        assert await store.depth() == 0


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://bot:s3c%zzret@127.0.0.1:9/proxybot",
        "postgresql://bot:s3c@ret@127.0.0.1:9/proxybot",
        "postgresql://bot:s3c ret@127.0.0.1:9/proxybot",
    ],
)
async def test_a_url_libpq_cannot_read_is_refused_without_any_part_of_the_password(url: str) -> None:
    with pytest.raises(StoreError) as caught:
        await open_store(url)
    assert "percent-encode" in str(caught.value)
    assert "s3c" not in str(caught.value)
    assert "ret" not in str(caught.value).replace("special characters", "")
