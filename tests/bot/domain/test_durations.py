"""The one duration parser: what people type, in ASCII digits, within bounds, errors naming the field."""

from __future__ import annotations

import pytest

from bot.domain.durations import parse_duration
from bot.errors import InputError


@pytest.mark.parametrize(("text", "seconds"), [("15m", 900), ("1h30m", 5400), ("90s", 90), ("2d", 172800)])
def test_parts_add_up(text: str, seconds: int) -> None:
    assert parse_duration(text, field="--window", low=60, high=7 * 86400) == seconds


REFUSED = ["", "15", "m", "1.5h", "15 m", "\u0661\u0665m", "1h-5m", "15mm", "1234567s", "1w"]


@pytest.mark.parametrize("text", REFUSED)
def test_anything_else_is_refused_naming_the_field(text: str) -> None:
    with pytest.raises(InputError, match=r"^--window: .* is not a duration"):
        parse_duration(text, field="--window", low=60, high=7 * 86400)


def test_bounds_are_named() -> None:
    with pytest.raises(InputError, match=r"^DURATION: '30s' is outside 1m..14d$"):
        parse_duration("30s", field="DURATION", low=60, high=14 * 86400)
