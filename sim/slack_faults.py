"""The fake Slack's test controls: the calls it recorded, injected faults, Slack's posting pace, and the
`response_url`s it handed out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.responses import JSONResponse, Response


@dataclass
class SlackCall:
    """One request that reached the fake."""

    method: str
    params: dict[str, Any]
    token: str | None
    at: float


@dataclass
class Fault:
    """An injected answer for the next `times` calls of one method."""

    status: int
    retry_after: int | None
    times: int
    error: str | None = None


@dataclass
class PostingLimit:
    """Slack's chat.postMessage limit per channel: `per_second` on average, bursts of `burst`."""

    per_second: float
    burst: float
    tokens: dict[str, tuple[float, float]]  # channel -> (tokens, at)

    def take(self, channel: str, now: float) -> float:
        """0 when a post may go now (and it is counted), else the seconds until one may."""
        tokens, at = self.tokens.get(channel, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) * self.per_second)
        if tokens >= 1.0:
            self.tokens[channel] = (tokens - 1.0, now)
            return 0.0
        self.tokens[channel] = (tokens, now)
        return (1.0 - tokens) / self.per_second


@dataclass
class ResponseUrl:
    """A `response_url` handed out, and how often it was used."""

    issued_at: float
    uses: int = 0


def fault_response(fault: Fault) -> Response:
    """The answer an injected fault gives."""
    headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
    if fault.status == 200:
        return JSONResponse({"ok": False, "error": fault.error or "internal_error"})
    body = {"ok": False, "error": fault.error or ("ratelimited" if fault.status == 429 else "fatal_error")}
    return JSONResponse(body, status_code=fault.status, headers=headers)
