"""What proxybot reads from a PostgreSQL URL and adds to it, and what its errors may say of it.

Nothing here repeats a password: errors name `host:port/database` (`where`), the driver's messages are
scrubbed (`scrub`), and an unparsable URL gets a fixed message (libpq would quote the part it failed on).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict

from bot.store.errors import StoreError

CONNECT_TIMEOUT = 5
STATEMENT_TIMEOUT_MS = 10_000
LOCK_TIMEOUT_MS = 5_000
UNPARSABLE = (
    "store.url is not a URL libpq can read: percent-encode special characters in the user and password "
    "(@ as %40, % as %25, : as %3A, / as %2F, space as %20)"
)


def connection_options(url: str) -> dict[str, Any]:
    """Timeouts and keepalives added to what the URL says (its own `options` are kept, ours appended)."""
    ours = f"-c statement_timeout={STATEMENT_TIMEOUT_MS} -c lock_timeout={LOCK_TIMEOUT_MS}"
    try:
        if urlsplit(url).netloc.count("@") > 1:  # libpq and urllib would split it differently
            raise psycopg.ProgrammingError("more than one @")
        parsed = conninfo_to_dict(url)
    except psycopg.Error:
        # libpq's message quotes the part it could not parse, which may be the password.
        raise StoreError(UNPARSABLE) from None
    given = str(parsed.get("options") or "").strip()
    return {
        "connect_timeout": CONNECT_TIMEOUT,
        "application_name": "proxybot",
        "options": f"{given} {ours}".strip(),
        # A server or network that went silent is noticed in seconds, not after the kernel's 2 hours.
        "keepalives": 1,
        "keepalives_idle": 10,
        "keepalives_interval": 5,
        "keepalives_count": 3,
        "tcp_user_timeout": 15_000,
    }


def where(url: str) -> str:
    """`host:port/database` of a libpq URL: what errors and logs may name (never user or password)."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = parts.port or 5432
    return f"{host}:{port}{parts.path or '/'}"


def describe(error: psycopg.Error, url: str | None = None) -> str:
    """The server's or driver's message, first line only, with the URL's password taken out (libpq may
    quote the part of the URL it could not parse)."""
    text = str(error).strip().splitlines()
    first = text[0] if text else type(error).__name__
    return scrub(first, url)


def scrub(text: str, url: str | None) -> str:
    """`text` without the password of `url` (as written, and percent-decoded)."""
    if url is None:
        return text
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    for secret in {password, unquote(password or "")} - {None, ""}:
        text = text.replace(str(secret), "***")
    return text
