"""An inbound request body read within a limit: refused by its Content-Length, or by counting what streams in.

    read_within(request, limit)   the body, or None once it is known to be larger than `limit` (the rest is
                                  never read); Starlette's ClientDisconnect propagates; a body that has not
                                  arrived within `BODY_READ_TIMEOUT` raises `BodyTimeout` (a client sending a
                                  byte a second must not hold a worker forever)
    is_length(value)              whether a Content-Length value is a plain decimal number

Each endpoint answers a refusal in its own words (the webhook in JSON, Slack's route in plain text).
"""

from __future__ import annotations

import asyncio

from starlette.requests import Request

# Alertmanager's and Slack's bodies (at most a mebibyte) arrive in milliseconds; this is for the stalled.
BODY_READ_TIMEOUT = 10.0


class BodyTimeout(Exception):
    """The body did not arrive whole within the read timeout."""


def is_length(value: str) -> bool:
    """Whether `value` is a Content-Length: ASCII digits only (str.isdigit() alone admits "²")."""
    value = value.strip()
    return value.isascii() and value.isdigit()


async def read_within(request: Request, limit: int, timeout: float | None = None) -> bytes | None:
    """The body, or None as soon as it is declared or grows larger than `limit` bytes (`timeout`: the
    whole body's deadline, `BODY_READ_TIMEOUT` by default)."""
    timeout = BODY_READ_TIMEOUT if timeout is None else timeout
    declared = request.headers.get("content-length", "")
    if is_length(declared) and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    return None
                chunks.append(chunk)
    except TimeoutError:
        raise BodyTimeout(f"the body did not arrive within {timeout:g} s ({size} bytes came)") from None
    return b"".join(chunks)
