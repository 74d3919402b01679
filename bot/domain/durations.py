"""Durations typed by people (`15m`, `1h30m`, `2d`): one parser for every command and option."""

from __future__ import annotations

import re

from bot.errors import InputError

# ASCII digits only (`\d` takes every script's digits), at most six per part.
_PART = re.compile(r"([0-9]{1,6})([smhd])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _span(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def parse_duration(text: str, *, field: str, low: int, high: int) -> int:
    """Seconds of `text` (parts like `1h30m`), within `low`..`high`; InputError naming `field` else."""
    parts = _PART.findall(text)
    if not text or "".join(n + u for n, u in parts) != text:
        shown = text[:40] + ("…" if len(text) > 40 else "")
        raise InputError(f"{field}: {shown!r} is not a duration like 15m, 2h or 1h30m")
    seconds = sum(int(n) * _UNIT[u] for n, u in parts)
    if not low <= seconds <= high:
        raise InputError(f"{field}: {text!r} is outside {_span(low)}..{_span(high)}")
    return seconds
