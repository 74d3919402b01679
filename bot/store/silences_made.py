"""SQL for the silences proxybot made (`bot.silence_makers`): one row per silence id, with the author
proxybot wrote into it. Only a silence listed here is attributed to a Slack user: Alertmanager's own
`createdBy` is whatever its maker typed. Statements are written once with `?` parameters; each
operation runs on both backends (`bot.store.steps`).
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.store.steps import Steps, read, rows_of, write

INSERT = """
INSERT INTO silences_made (silence_id, created_by, made_at) VALUES (?, ?, ?)
ON CONFLICT (silence_id) DO NOTHING
"""


def of_ids(count: int) -> str:
    """The statement reading the rows of `count` ids (at least one)."""
    marks = ", ".join("?" * count)
    return f"SELECT silence_id, created_by FROM silences_made WHERE silence_id IN ({marks})"  # noqa: S608


def record(silence_id: str, created_by: str, at: float) -> Steps[None]:
    yield write(INSERT, (silence_id, created_by, at))


def makers(ids: Sequence[str]) -> Steps[dict[str, str]]:
    """The makers of those of `ids` (at least one) proxybot made."""
    rows = yield from rows_of(read(of_ids(len(ids)), tuple(ids)), lambda row: (str(row[0]), str(row[1])))
    return dict(rows)
