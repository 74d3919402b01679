"""What the guide's synthetic probe found: each attempt's outcome, the latency, the verdict and its
evidence, and what the live peer state points at. Neutral: `bot.checks.probe_run` produces it,
`bot.render.checks_probe` lays it out.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, Protocol

from bot.domain.snapshot import PeerCounts


class ProbeOutcome(StrEnum):
    """How one probe request ended, in the guide's terms."""

    OK = "ok"
    UNAVAILABLE = "unavailable"  # 503
    NOT_SERVED = "not_served"  # 404 on a list
    UNAUTHORIZED = "unauthorized"  # 401
    FORBIDDEN = "forbidden"  # 403
    TIMEOUT = "timeout"  # no answer within the probe timeout
    UPGRADE_REJECTED = "upgrade_rejected"  # 501
    CONFLICT = "conflict"  # 409: a name collision on create
    UNREACHABLE = "unreachable"  # the client cluster's API could not be reached at all
    HTTP_ERROR = "http_error"  # any other status


class ProbedRequest(Protocol):
    """What a result names of the request it answers (`bot.checks.probe.ProbeRequest` is one: it also
    carries the configured target, which the domain does not read)."""

    @property
    def target(self) -> str: ...

    @property
    def cluster(self) -> str: ...

    @property
    def url(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ProbeAttempt:
    """One request of the series: status (None without an answer), seconds, what the answer said."""

    outcome: ProbeOutcome
    status: int | None
    seconds: float | None
    retry_after: str | None = None
    message: str | None = None
    items: int | None = None  # objects in a 200 list answer


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Latency of the answered attempts of a series."""

    count: int
    min: float
    p50: float
    max: float


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """The probe's verdict, the attempts behind it, and the evidence that explains it."""

    request: ProbedRequest
    attempts: tuple[ProbeAttempt, ...]
    outcome: ProbeOutcome
    summary: str
    evidence: tuple[str, ...]
    next_step: str
    latency: LatencySummary | None

    @property
    def passed(self) -> bool:
        return self.outcome is ProbeOutcome.OK

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": "probe",
            "passed": self.passed,
            "verdict": self.outcome.value,
            "target": self.request.target,
            "cluster": self.request.cluster,
            "request": f"GET {self.request.url}",
            "summary": self.summary,
            "evidence": list(self.evidence),
            "next_step": self.next_step,
            "latency_seconds": None if self.latency is None else asdict(self.latency),
            "attempts": [asdict(a) for a in self.attempts],
        }


class LivePointer(StrEnum):
    """What the live peer state of the probed group/version points at; its value is the evidence line."""

    FEED = (
        "live state points at the client's peer feed: no trusted peer snapshot (platform connectivity or "
        "licence)"
    )
    PEERS = "live state points at the peers: none healthy (the target down, or the path to it)"
    REASON = (
        "live state shows healthy peers and a synced cache: a target 5xx (reason `upstream`) or a failure "
        "the peer state does not show; the reason label decides"
    )


def live_pointer(peers: PeerCounts | None, synced: bool | None) -> LivePointer | None:
    """What the live peer state of the probed group/version points at, when it points anywhere."""
    if synced is False:
        return LivePointer.FEED
    if peers is not None and peers.healthy == 0:
        return LivePointer.PEERS
    if peers is not None and synced:
        return LivePointer.REASON
    return None


def pointer_in(evidence: list[str]) -> LivePointer | None:
    """The pointer among a probe's evidence lines, when the live state pointed anywhere."""
    pointers = {p.value: p for p in LivePointer}
    return next((pointers[line] for line in evidence if line in pointers), None)
