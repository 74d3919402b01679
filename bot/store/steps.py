"""The store's work, written once for both backends: each operation is a generator of statements.

An operation (`groups.get`, `outbox.enqueue`, ...) yields the statements it runs, each with `?`
parameters, and is sent back each one's `Result`; what it returns is the operation's answer. It does no
I/O of its own, so the same code runs on SQLite's store thread (`bot.store.transaction.run_steps`) and on
a pooled PostgreSQL connection (`bot.store.postgres`); a backend runs one operation as one transaction.
The two dialects differ only where a statement says so: `writes` (SQLite takes its write lock, BEGIN
IMMEDIATE, before the first such statement) and `for_update` (PostgreSQL locks the rows it reads).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of an operation, with its `?` parameters."""

    sql: str
    params: tuple[Any, ...] = ()
    writes: bool = False
    for_update: bool = False


@dataclass(frozen=True, slots=True)
class Result:
    """What a statement gave: its rows (a SELECT's, or an INSERT's RETURNING), and how many it changed."""

    rows: list[tuple[Any, ...]]
    changed: int

    def first(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None


Steps = Generator[Statement, Result, T]


@dataclass(frozen=True, slots=True)
class Done(Generic[T]):
    """An operation that has run all its statements, and its answer."""

    answer: T


def advance(steps: Steps[T], result: Result | None) -> Statement | Done[T]:
    """The operation's next statement, given the result of the one before (None at the start); or its
    answer, once it has no more."""
    try:
        return next(steps) if result is None else steps.send(result)
    except StopIteration as finished:
        answer: T = finished.value
        return Done(answer)


def read(sql: str, params: tuple[Any, ...] = ()) -> Statement:
    return Statement(sql, params)


def write(sql: str, params: tuple[Any, ...] = ()) -> Statement:
    return Statement(sql, params, writes=True)


def lock(sql: str, params: tuple[Any, ...] = ()) -> Statement:
    """A read of rows the operation changes next (SQLite's write lock covers them; PostgreSQL locks them)."""
    return Statement(sql, params, writes=True, for_update=True)


def rows_of(statement: Statement, decode: Callable[[tuple[Any, ...]], T]) -> Steps[list[T]]:
    """Every row of `statement`, decoded."""
    return [decode(row) for row in (yield statement).rows]


def first_of(statement: Statement, decode: Callable[[tuple[Any, ...]], T]) -> Steps[T | None]:
    """The first row of `statement`, decoded; None when it gave none."""
    row = (yield statement).first()
    return None if row is None else decode(row)


def changed_one(statement: Statement) -> Steps[bool]:
    """Whether `statement` changed exactly one row."""
    return (yield statement).changed == 1
