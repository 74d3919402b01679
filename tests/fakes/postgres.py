"""A throwaway PostgreSQL server for the whole test session (`sim/postgres.py` does the work).

Use it in a test module or conftest by re-exporting the fixture: `postgres_server = postgres.postgres_server`
(after `from tests.fakes import postgres`), then `url = await postgres_server.new_database()` per test.
The binaries missing is a failure that says what to install, never a skip.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sim.postgres import PostgresServer, start_postgres

__all__ = ["PostgresServer", "postgres_server"]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    # The system temp dir, not tmp_path_factory: under root the server runs as `postgres`, which cannot
    # traverse pytest's 0700 base directory.
    with start_postgres() as server:
        yield server
