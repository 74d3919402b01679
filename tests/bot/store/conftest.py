"""Shared fixtures of the store tests: every `store` test runs against SQLite and PostgreSQL.

`store` is a fresh store on a hand-driven clock, once per backend (a temp SQLite file; a new database on the
session's throwaway PostgreSQL server). `raw` runs SQL on the same database underneath the store (`?`
parameters on both), for tests that look at rows. Tests of one backend's own behaviour (SQLite's WAL, its
upgrade from older files) take `sqlite_store` or open the file themselves.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bot.store import Store, open_store
from tests.fakes import postgres

postgres_server = postgres.postgres_server

Raw = Callable[..., Awaitable[list[tuple[Any, ...]]]]
BACKENDS = ("sqlite", "postgresql")


class FakeClock:
    """A clock that moves only when a test moves it."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "proxybot.db"


@pytest.fixture(params=BACKENDS)
async def store_url(request: pytest.FixtureRequest, db_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{db_path}"
    server: postgres.PostgresServer = request.getfixturevalue("postgres_server")
    return await server.new_database()


@pytest.fixture
async def store(store_url: str, clock: FakeClock) -> AsyncIterator[Store]:
    opened = await open_store(store_url, clock=clock)
    yield opened
    await opened.close()


@pytest.fixture
async def sqlite_store(db_path: Path, clock: FakeClock) -> AsyncIterator[Store]:
    opened = await open_store(f"sqlite:///{db_path}", clock=clock)
    yield opened
    await opened.close()


@pytest.fixture
def raw(store_url: str) -> Raw:
    """`await raw(sql, *params)`: the rows of one statement, run (and committed) on the store's database."""

    async def run(query: str, *params: object) -> list[tuple[Any, ...]]:
        if store_url.startswith("sqlite:///"):
            with closing(sqlite3.connect(store_url.removeprefix("sqlite:///"))) as conn, conn:
                return conn.execute(query, params).fetchall()
        async with await psycopg.AsyncConnection.connect(store_url, autocommit=True) as conn:
            cursor = await conn.execute(query.replace("?", "%s"), params)  # type: ignore[arg-type]
            return await cursor.fetchall() if cursor.description else []

    return run
