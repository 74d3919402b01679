"""The fake Slack's test controls: the calls it recorded, what it injects on demand (failures per method,
Slack's rate limits, answers held back), and the `response_url`s it handed out.

Every injected answer is one Slack itself gives: 429 `ratelimited` with `Retry-After`, 5xx, or 200 with
`ok: false` and an error code (with `response_metadata.messages` when Slack would name the places at fault).
A fault counts down by calls (`times`), or lasts until a moment of the fake's clock (`until`: "every call
for two minutes"); it may apply to calls naming one channel only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.responses import JSONResponse, Response


@dataclass
class SlackCall:
    """One request that reached the fake, and (once answered) its HTTP status and Slack's error code."""

    method: str
    params: dict[str, Any]
    token: str | None
    at: float
    status: int | None = None
    error: str | None = None


@dataclass
class ResponseUrl:
    """A `response_url` handed out, and how often it was used."""

    issued_at: float
    uses: int = 0


@dataclass
class Fault:
    """An injected answer for the next `times` calls of one method (or every call before `until`)."""

    status: int
    retry_after: int | None
    times: int
    error: str | None = None
    channel: str | None = None  # a channel ID: only calls naming this channel
    until: float | None = None  # the fake's clock: every call before then, whatever `times` says
    messages: tuple[str, ...] = ()

    def response(self) -> Response:
        # Slack sends Retry-After with its 429s (and some 5xx); never on a 200.
        sent = self.retry_after is not None and self.status != 200
        headers = {"Retry-After": str(self.retry_after)} if sent else {}
        default = (
            "internal_error" if self.status == 200 else "ratelimited" if self.status == 429 else "fatal_error"
        )
        body: dict[str, Any] = {"ok": False, "error": self.error or default}
        if self.messages:
            body["response_metadata"] = {"messages": list(self.messages)}
        return JSONResponse(body, status_code=self.status, headers=headers)


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
class Faults:
    """The queued faults per method; not thread-safe (the fake holds its lock around every use)."""

    clock: Callable[[], float]
    queued: dict[str, list[Fault]] = field(default_factory=dict)

    def add(self, method: str, fault: Fault) -> None:
        self.queued.setdefault(method, []).append(fault)

    def heal(self, method: str) -> None:
        self.queued.pop(method, None)

    def take(self, method: str, channel_id: str | None) -> Fault | None:
        """The fault that answers this call, counted; None when the call is answered normally."""
        queue = self.queued.get(method, [])
        now = self.clock()
        queue[:] = [f for f in queue if f.until is None or f.until > now]
        for fault in queue:
            if fault.channel is not None and fault.channel != channel_id:
                continue
            if fault.until is None:
                fault.times -= 1
                if fault.times <= 0:
                    queue.remove(fault)
            return fault
        return None
