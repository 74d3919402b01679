"""A Prometheus window as enrichment reads it: one ask of one alert, and the window it brought."""

from __future__ import annotations

from bot.clients.prometheus import Sample
from bot.domain.enrichment import PromOutcome, WindowAsk
from bot.domain.snapshot import DIAL_FAILURES, REQUESTS
from bot.prom_queries import FAMILY, window_from

ASK = WindowAsk("ResourceProxyNoHealthyPeers", "alpha", (("cluster", "alpha"),), "team-a/db", "alpha-0", 900)


def sample(family: str, value: float, **labels: str) -> Sample:
    return Sample({FAMILY: family, **labels}, value, 0.0)


def a_window() -> PromOutcome:
    """Requests and dial failures of the last 15 minutes by reason, with request p99s and no dial p99."""
    counters = [
        sample(REQUESTS, 40.0, group_version="example.com/v1", verb="get", code="503", reason="no_peer"),
        sample(REQUESTS, 2.4, group_version="other.io/v1", verb="get", code="503", reason="timeout"),
        sample(REQUESTS, 900.0, group_version="example.com/v1", verb="get", code="200", reason="upstream"),
        sample(DIAL_FAILURES, 12.0, reason="timeout"),
    ]
    buckets = [
        sample("vcluster_proxy_request_duration_seconds", n, le=le, verb="get")
        for le, n in (("0.1", 600.0), ("1", 940.0), ("+Inf", 942.4))
    ]
    p99s = [
        sample("vcluster_proxy_request_duration_seconds", 0.91),
        sample("vcluster_proxy_peer_dial_duration_seconds", float("nan")),
    ]
    return PromOutcome(ASK, window_from(ASK, 1000.0, counters, buckets, p99s))
