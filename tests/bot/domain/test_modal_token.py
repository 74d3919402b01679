"""The modal's signed private_metadata: only what proxybot signed, recently, is believed."""

from __future__ import annotations

import pytest

from bot.domain.modal_token import MAX_AGE, sign, verify
from bot.errors import InputError

SECRET = "8f14e45fceea167a5a36dedd4bea2543"


def test_a_token_comes_back_as_signed() -> None:
    token = sign({"g": "abc", "t": "platform/crd-store"}, SECRET, 100.0)
    assert len(token) <= 3000
    assert verify(token, SECRET, 160.0) == {"g": "abc", "t": "platform/crd-store", "at": 100.0}


@pytest.mark.parametrize(
    "change",
    [
        lambda t: "eyJnIjoib3RoZXIiLCJhdCI6MTAwLjB9." + t.split(".")[1],  # another body, the old signature
        lambda t: t[:-1] + ("0" if t[-1] != "0" else "1"),  # another signature
        lambda t: t.split(".")[0],  # none
        lambda t: "",
    ],
)
def test_a_changed_token_is_refused(change: object) -> None:
    token = sign({"g": "abc"}, SECRET, 100.0)
    with pytest.raises(InputError, match="not proxybot's"):
        verify(change(token), SECRET, 100.0)  # type: ignore[operator]


def test_another_secret_or_an_old_token_is_refused() -> None:
    token = sign({"g": "abc"}, SECRET, 100.0)
    with pytest.raises(InputError, match="not proxybot's"):
        verify(token, "another-secret-entirely-0123456789", 100.0)
    with pytest.raises(InputError, match="too long ago"):
        verify(token, SECRET, 100.0 + MAX_AGE + 1)


def test_too_much_to_carry_is_refused_when_signing() -> None:
    with pytest.raises(ValueError, match="3000"):
        sign({"g": "x" * 3000}, SECRET, 1.0)
