"""SQLite's transactions, on a connection in autocommit mode (isolation_level=None), and the one place
that runs an operation's statements (`bot.store.steps`) on it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from bot.store.steps import Done, Result, Steps, advance

T = TypeVar("T")


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error; takes the write lock up front."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def run_steps(conn: sqlite3.Connection, steps: Steps[T]) -> T:
    """Run an operation: its reads as they come, and from its first write on, one IMMEDIATE transaction
    (reads alone never take the write lock another process may be waiting for)."""
    result: Result | None = None
    began = False
    try:
        while not isinstance(step := advance(steps, result), Done):
            if step.writes and not began:
                conn.execute("BEGIN IMMEDIATE")
                began = True
            cursor = conn.execute(step.sql, step.params)
            result = Result(cursor.fetchall(), cursor.rowcount)
        if began:
            conn.execute("COMMIT")
    except BaseException:
        if began and conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return step.answer
