"""An acknowledgement: someone on call said "I have it" for one firing episode of an alert message."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Acknowledgement:
    """Who took a firing episode of a group's message ("I have it"): kept until unacknowledged, and
    shown only while the group is in the same episode (`episode` = its `first_firing_at` then)."""

    channel: str
    group_key: str
    episode: float
    user: str  # the Slack user ID, as bolt verified it
    user_name: str
    at: float
