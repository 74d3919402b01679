"""The throwaway PostgreSQL server: it starts, hands out separate databases, enforces its password, and
stops without leaving a process or a directory behind; missing binaries are a clear failure."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest

from sim.postgres import PostgresError, find_binaries, start_postgres
from tests.fakes import postgres
from tests.fakes.postgres import PostgresServer

postgres_server = postgres.postgres_server
CONNECT_TIMEOUT = 10


async def one_row(url: str, query: str) -> tuple[object, ...]:
    async with await psycopg.AsyncConnection.connect(url, connect_timeout=CONNECT_TIMEOUT) as conn:
        row = await (await conn.execute(query)).fetchone()
    assert row is not None
    return tuple(row)


async def test_a_new_database_answers_queries_as_the_proxybot_role(postgres_server: PostgresServer) -> None:
    url = await postgres_server.new_database()
    assert url.startswith(
        f"postgresql://proxybot:{postgres_server.password}@127.0.0.1:{postgres_server.port}/"
    )
    query = "SELECT current_database(), current_user, current_setting('listen_addresses'), 6 * 7"
    assert await one_row(url, query) == (url.rpartition("/")[2], "proxybot", "127.0.0.1", 42)


async def test_each_new_database_is_its_own(postgres_server: PostgresServer) -> None:
    first, second = await postgres_server.new_database(), await postgres_server.new_database()
    assert first != second
    async with await psycopg.AsyncConnection.connect(first, connect_timeout=CONNECT_TIMEOUT) as conn:
        await conn.execute("CREATE TABLE only_here (id int)")
        await conn.commit()
    tables = "SELECT count(*) FROM pg_tables WHERE tablename = 'only_here'"
    assert await one_row(first, tables) == (1,)
    assert await one_row(second, tables) == (0,)


async def test_a_wrong_password_is_refused(postgres_server: PostgresServer) -> None:
    url = (await postgres_server.new_database()).replace(postgres_server.password, "not-the-password")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        await one_row(url, "SELECT 1")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_stopping_leaves_no_process_and_no_directory() -> None:
    with start_postgres() as server:
        pid, directory = server.pid, server.directory
        assert alive(pid)
        assert (directory / "data" / "PG_VERSION").exists()
        if os.geteuid() == 0:  # the server refuses root: it runs as the postgres user
            assert os.stat(f"/proc/{pid}").st_uid == os.stat(directory / "data").st_uid != 0
    assert not alive(pid)
    assert not directory.exists()


def test_a_directory_too_long_for_the_socket_is_refused_and_removed(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    with pytest.raises(PostgresError, match="too long for a Unix socket"), start_postgres(deep):
        pass
    assert list(deep.iterdir()) == []


def install(
    root: Path, version: str, programs: tuple[str, ...] = ("initdb", "postgres", "pg_isready")
) -> Path:
    bin_dir = root / version / "bin"
    bin_dir.mkdir(parents=True)
    for program in programs:
        (bin_dir / program).write_text("#!/bin/sh\n")
        (bin_dir / program).chmod(0o755)
    return bin_dir


def test_missing_binaries_fail_with_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(PostgresError, match="install Debian's `postgresql` package"):
        find_binaries(path=str(tmp_path / "empty"), lib_root=tmp_path / "lib")


def test_the_newest_complete_installation_is_chosen(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    install(lib, "9.6")
    sixteen = install(lib, "16")
    install(lib, "17", programs=("initdb",))  # half an installation: never mixed with another's postgres
    found = find_binaries(path=str(tmp_path / "nowhere"), lib_root=lib)
    assert (found.initdb, found.postgres, found.pg_isready) == tuple(
        str(sixteen / p) for p in ("initdb", "postgres", "pg_isready")
    )


def test_the_installation_on_path_comes_first(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    old = install(lib, "9.6")
    install(lib, "16")
    on_path = tmp_path / "bin"
    on_path.mkdir()
    (on_path / "initdb").symlink_to(old / "initdb")  # as Debian's /usr/local or a user's PATH link
    assert find_binaries(path=str(on_path), lib_root=lib).postgres == str(old / "postgres")
