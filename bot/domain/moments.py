"""Wall-clock seconds as the datetimes messages show."""

from __future__ import annotations

from datetime import UTC, datetime


def from_epoch(seconds: float) -> datetime:
    """Seconds since the epoch (`time.time()`, the clocks the bot injects) as an aware UTC datetime."""
    return datetime.fromtimestamp(seconds, UTC)
