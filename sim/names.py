"""The guide's metric names, reasons and constants as the simulator uses them.

The metric names are re-exported from the parser's module (shared constants are the one import of bot/ that
STYLE.md allows sim), so the simulator and the parser can never drift apart.
"""

from __future__ import annotations

from enum import StrEnum

from bot.domain.snapshot import (
    ACTIVE_WATCHES,
    ALL_QUARANTINED,
    DIAL_DURATION,
    DIAL_FAILURES,
    DISCOVERY_FALLBACKS,
    INFLIGHT,
    PEER_CACHE_SYNCED,
    PEER_LIST_AGE,
    PEERS,
    QUARANTINES,
    RECOVERIES,
    REQUEST_DURATION,
    REQUESTS,
    TERMINATIONS,
    WATCH_EVENTS,
)

__all__ = [
    "ACTIVE_WATCHES",
    "ALL_QUARANTINED",
    "DIAL_DURATION",
    "DIAL_FAILURES",
    "DISCOVERY_FALLBACKS",
    "INFLIGHT",
    "PEERS",
    "PEER_CACHE_SYNCED",
    "PEER_LIST_AGE",
    "QUARANTINES",
    "RECOVERIES",
    "REQUESTS",
    "REQUEST_DURATION",
    "TERMINATIONS",
    "WATCH_EVENTS",
]

# The guide's constants.
DIAL_TIMEOUT = 5.0
QUARANTINE_AFTER_FAILURES = 3
QUARANTINE_SECONDS = 20.0
STALE_AFTER_SECONDS = 60.0
REQUEST_DEADLINE = 60.0
RETRY_AFTER = "1"

# Request latency buckets stop at the 60 s deadline; dial buckets at the 5 s dial timeout.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
DIAL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class PeerState(StrEnum):
    """The three states the peers gauge always reports."""

    HEALTHY = "healthy"
    QUARANTINED = "quarantined"
    HALF_OPEN = "half_open"


class Reason(StrEnum):
    """The guide's shared outcome-reason vocabulary."""

    UPSTREAM = "upstream"
    NO_PEER = "no_peer"
    STALE_PEERS = "stale_peers"
    ALL_QUARANTINED = "all_quarantined"
    TIMEOUT = "timeout"
    DEADLINE = "deadline"
    CANCELED = "canceled"
    PEER_DEPARTED = "peer_departed"
    TS_SERVER_UNAVAILABLE = "ts_server_unavailable"
    ERROR = "error"
    OWNERSHIP_MASKED = "ownership_masked"
    OWNERSHIP_CHECK_FAILED = "ownership_check_failed"
    NAMESPACE_MISSING = "namespace_missing"
    UPGRADE_REJECTED = "upgrade_rejected"
    UPSTREAM_ERROR = "upstream_error"


class Verb(StrEnum):
    """Request verbs as the Kubernetes API server's own metrics spell them."""

    GET = "GET"
    LIST = "LIST"
    WATCH = "WATCH"
    POST = "POST"
    PUT = "PUT"
    PATCH = "PATCH"
    DELETE = "DELETE"
    CONNECT = "CONNECT"


WRITE_VERBS = frozenset({Verb.POST, Verb.PUT, Verb.PATCH})
