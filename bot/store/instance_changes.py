"""SQL for each platform instance's history of what defines its proxy (`bot.domain.changes`): one row per
version of an instance's facts, numbered in the instance's order (`seq`), with when it was read.

A reading records a version only where an instance's facts differ from its newest kept: every replica
reads the same platform and records through the same rows, and two replicas recording one change at once
insert its number once (`ON CONFLICT DO NOTHING`). Each instance keeps its newest version always, and of
the rest only the last `keep` versions not older than `keep_after`. Statements are written once with `?`
parameters; each operation runs on both backends (`bot.store.steps`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bot.domain.changes import InstanceFacts, InstanceVersion
from bot.store.steps import Statement, Steps, read, rows_of, write

NEWEST = """
SELECT c.instance, c.seq, c.digest FROM instance_changes c
JOIN (SELECT instance, MAX(seq) AS seq FROM instance_changes WHERE platform = ? GROUP BY instance) newest
    ON c.instance = newest.instance AND c.seq = newest.seq
WHERE c.platform = ?
"""
INSERT = """
INSERT INTO instance_changes (platform, instance, seq, at, digest, facts) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (platform, instance, seq) DO NOTHING
"""
PRUNE = """
DELETE FROM instance_changes
WHERE platform = ? AND instance = ? AND seq < ? AND (seq <= ? OR at < ?)
"""
# The versions read after `since`, and the one before them (what the first of them changed).
HISTORY = """
SELECT instance, seq, at, facts FROM instance_changes
WHERE platform = ? AND instance = ? AND seq >= COALESCE(
    (SELECT MAX(seq) FROM instance_changes WHERE platform = ? AND instance = ? AND at <= ?), 0)
ORDER BY seq
"""


def record(
    platform: str,
    versions: Sequence[tuple[str, InstanceFacts]],
    at: float,
    keep: int,
    keep_after: float,
) -> Steps[list[str]]:
    """Record each instance's facts where they differ from its newest version; the instances recorded."""
    # Read under SQLite's write lock (BEGIN IMMEDIATE): the numbers given next follow what it read.
    rows = (yield Statement(NEWEST, (platform, platform), writes=True)).rows
    newest = {str(row[0]): (int(row[1]), str(row[2])) for row in rows}
    recorded: list[str] = []
    for instance, facts in versions:
        seq, digest = newest.get(instance, (0, None))
        if digest == facts.digest:
            continue
        document = json.dumps(facts.document(), sort_keys=True, default=str)
        params = (platform, instance, seq + 1, at, facts.digest, document)
        if (yield write(INSERT, params)).changed:
            recorded.append(instance)
            yield write(PRUNE, (platform, instance, seq + 1, seq + 1 - keep, keep_after))
    return recorded


def history(platform: str, instance: str, since: float) -> Steps[list[InstanceVersion]]:
    """The instance's versions read after `since`, with the one before them, oldest first."""
    params = (platform, instance, platform, instance, since)
    return (yield from rows_of(read(HISTORY, params), _version))


def _version(row: tuple[Any, ...]) -> InstanceVersion:
    instance, seq, at, facts = row
    return InstanceVersion(str(instance), int(seq), float(at), InstanceFacts.from_document(json.loads(facts)))
