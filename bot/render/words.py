"""Small wording shared by every renderer."""

from __future__ import annotations


def counted(count: int, word: str) -> str:
    """`1 alert`, `2 alerts`: the count and the word, plural unless the count is one."""
    return f"{count} {word}" + ("" if count == 1 else "s")
