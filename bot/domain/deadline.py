"""A deadline of one group's episode, as the store keeps it: escalations and verifications after resolve."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

E = TypeVar("E", bound=StrEnum)  # how a deadline ended


@dataclass(frozen=True, slots=True)
class EpisodeDeadline(Generic[E]):
    """Due at `due_at` for the group's episode (its first firing, or its resolve); `outcome` None while it
    is pending, set once when it is settled."""

    channel: str
    group_key: str
    episode: float
    due_at: float
    outcome: E | None = None
    closed_at: float | None = None
