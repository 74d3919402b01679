"""One storm as the storm desk keeps it: its running counts in memory, and its record in the store."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.domain.moments import from_epoch
from bot.domain.storm_summary import StormCounts, StormView
from bot.domain.storm_targets import StormEntry, StormRow
from bot.store.models import StormRecord


@dataclass(frozen=True, slots=True)
class Arrival:
    """A new group of the storm window: when it came, and its count."""

    at: float
    group_key: str
    entries: tuple[StormEntry, ...]


@dataclass
class Storm:
    """One storm in one channel."""

    key: str
    channel: str
    started_at: float
    last_new_at: float
    changed_at: float = float("-inf")  # the last new group or changed count (in memory only)
    grown: int = 0  # edits of the count before the table (in memory only)
    entries: dict[str, tuple[StormEntry, ...]] = field(default_factory=dict)
    counts: StormCounts = field(default_factory=StormCounts)
    ended_at: float | None = None
    posted: bool = False
    table: str | None = None  # the revision of the table upload in the thread
    refreshed_at: float = float("-inf")
    dirty: bool = False  # the summary in Slack may be older than the counts
    unsaved: bool = False  # the storm's row is older than the counts
    saved_at: float = float("-inf")
    shown: tuple[object, ...] | None = None  # the signature of the summary last sent
    tabled: tuple[StormRow, ...] | None = None  # the rows of the table last uploaded

    def __post_init__(self) -> None:
        self.changed_at = max(self.changed_at, self.last_new_at)

    def count(self, group_key: str, entries: tuple[StormEntry, ...]) -> None:
        """Replace the group's entries, adjusting the running counts by the difference only."""
        for old in self.entries.get(group_key, ()):
            self.counts.remove(old)
        for new in entries:
            self.counts.add(new)
        self.entries[group_key] = entries
        self.dirty = self.unsaved = True

    def all_entries(self) -> list[StormEntry]:
        return [e for found in self.entries.values() for e in found]

    def clusters(self) -> set[str]:
        return {e.cluster for e in self.all_entries() if e.cluster is not None}

    def view(self, rows: tuple[StormRow, ...]) -> StormView:
        ended = None if self.ended_at is None else from_epoch(self.ended_at)
        return StormView.of(self.counts, from_epoch(self.started_at), ended, rows)

    def record(self) -> StormRecord:
        return StormRecord(
            self.started_at,
            self.last_new_at,
            self.ended_at,
            self.posted,
            dict(self.entries),
            table=self.table,
            refreshed_at=None if self.refreshed_at == float("-inf") else self.refreshed_at,
        )

    @classmethod
    def from_record(cls, key: str, channel: str, record: StormRecord) -> Storm:
        storm = cls(
            key=key,
            channel=channel,
            started_at=record.started_at,
            last_new_at=record.last_new_at,
            ended_at=record.ended_at,
            posted=record.posted,
            table=record.table,
            refreshed_at=float("-inf") if record.refreshed_at is None else record.refreshed_at,
        )
        for group_key, entries in record.entries.items():
            storm.count(group_key, entries)
        return storm
