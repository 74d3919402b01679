"""An inbound request body read within a limit: refused by its Content-Length, or by counting what streams in.

    read_within(request, limit)   the body, or None once it is known to be larger than `limit` (the rest is
                                  never read); Starlette's ClientDisconnect propagates
    is_length(value)              whether a Content-Length value is a plain decimal number

Each endpoint answers a refusal in its own words (the webhook in JSON, Slack's route in plain text).
"""

from __future__ import annotations

from starlette.requests import Request


def is_length(value: str) -> bool:
    """Whether `value` is a Content-Length: ASCII digits only (str.isdigit() alone admits "²")."""
    value = value.strip()
    return value.isascii() and value.isdigit()


async def read_within(request: Request, limit: int) -> bytes | None:
    """The body, or None as soon as it is declared or grows larger than `limit` bytes."""
    declared = request.headers.get("content-length", "")
    if is_length(declared) and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
