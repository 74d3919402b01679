"""Credentials the bot reads from files, and how its HTTP clients of Prometheus and Alertmanager use them.

A file credential rotates: kubelet rewrites a projected ServiceAccount token well before it expires, and
a Secret mounted as a file changes when the Secret does. `CredentialFile` re-reads its file at most every
`RELOAD_SECONDS` (as the Kubernetes client's own in-cluster loader and client-go do), off the event loop,
so a long-running bot keeps authenticating. A re-read that fails keeps the last value and logs the file
(never the value): kubelet swaps the file atomically, so a failure is a real problem, and the server's
401 will say so too.

`http_security` turns a section's `bearer_token_file`, `basic_auth` and `ca_file` into what httpx takes;
a file that cannot be read at start is a `ConfigError` naming the key.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import ssl
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from bot.errors import ConfigError
from config.settings import HttpClientSettings

log = logging.getLogger(__name__)

RELOAD_SECONDS = 60.0


class CredentialFile:
    """A token or password kept in a file, re-read when the last read is `reload_seconds` old."""

    def __init__(
        self,
        path: Path,
        *,
        what: str,
        reload_seconds: float = RELOAD_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self._what = what
        self._reload = reload_seconds
        self._clock = clock
        self._value: str | None = None
        self._read_at = 0.0

    def load(self) -> str:
        """Read the file now (blocking: at start, or on a worker thread); ValueError `what: why` names it."""
        try:
            value = self.path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as err:
            raise ValueError(f"{self._what}: cannot read {self.path}: {_reason(err)}") from None
        if not value:
            raise ValueError(f"{self._what}: {self.path} is empty")
        self._value, self._read_at = value, self._clock()
        return value

    async def current(self) -> str:
        """The credential, re-read first when it is due (the first call reads it)."""
        if self._value is None:
            return await asyncio.to_thread(self.load)
        if self._clock() - self._read_at >= self._reload:
            self._read_at = self._clock()  # concurrent callers keep the value until this read is done
            try:
                return await asyncio.to_thread(self.load)
            except ValueError as err:
                log.warning("%s; still using the value read before", err)
        return self._value


def _reason(err: BaseException) -> str:
    return err.strerror if isinstance(err, OSError) and err.strerror else type(err).__name__


class BearerFileAuth(httpx.Auth):
    """`Authorization: Bearer <the file's token>` on every request."""

    def __init__(self, token: CredentialFile) -> None:
        self._token = token

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        request.headers["Authorization"] = f"Bearer {await self._token.current()}"
        yield request


class BasicFileAuth(httpx.Auth):
    """HTTP basic auth with a fixed username and the file's password on every request."""

    def __init__(self, username: str, password: CredentialFile) -> None:
        self._username = username
        self._password = password

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        pair = f"{self._username}:{await self._password.current()}".encode()
        request.headers["Authorization"] = f"Basic {base64.b64encode(pair).decode('ascii')}"
        yield request


@dataclass(frozen=True)
class HttpSecurity:
    """What an httpx client of one configured service takes: how to verify it, how to authenticate."""

    verify: ssl.SSLContext | bool = True
    auth: httpx.Auth | None = None


def http_security(settings: HttpClientSettings, section: str) -> HttpSecurity:
    """The TLS trust and the authentication `settings` configure; ConfigError names a file that fails."""
    problems: list[str] = []
    verify: ssl.SSLContext | bool = True
    if settings.ca_file is not None:
        try:
            verify = ssl.create_default_context(cafile=str(settings.ca_file))
        except ssl.SSLError:
            problems.append(
                f"{section}.ca_file: {settings.ca_file} is not a PEM CA bundle (no certificate loads from it)"
            )
        except OSError as err:
            problems.append(f"{section}.ca_file: cannot read {settings.ca_file}: {_reason(err)}")
    auth: httpx.Auth | None = None
    try:
        auth = _auth(settings, section)
    except ValueError as err:
        problems.append(str(err))
    if problems:
        raise ConfigError(problems)
    return HttpSecurity(verify, auth)


def _auth(settings: HttpClientSettings, section: str) -> httpx.Auth | None:
    if settings.bearer_token_file is not None:
        token = CredentialFile(settings.bearer_token_file, what=f"{section}.bearer_token_file")
        token.load()  # a missing token fails at start, not on the first call
        return BearerFileAuth(token)
    if settings.basic_auth is not None:
        password = CredentialFile(
            settings.basic_auth.password_file, what=f"{section}.basic_auth.password_file"
        )
        password.load()
        return BasicFileAuth(settings.basic_auth.username, password)
    return None
