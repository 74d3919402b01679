"""The `vcluster_proxy_*` families of one proxy, with the guide's names, types, labels and buckets."""

from __future__ import annotations

from dataclasses import dataclass, field

from sim import names
from sim.exposition import Family, HistogramFamily


def _counter(name: str, help_text: str, *labels: str) -> Family:
    return Family(name, "counter", help_text, ("target", *labels))


def _gauge(name: str, help_text: str, *labels: str) -> Family:
    return Family(name, "gauge", help_text, ("target", *labels))


@dataclass
class ProxyMetrics:
    """Every family the resource proxy exposes; counters stay empty until their first event."""

    requests: Family = field(
        default_factory=lambda: _counter(
            names.REQUESTS, "Proxied requests by outcome.", "group_version", "verb", "code", "reason"
        )
    )
    terminations: Family = field(
        default_factory=lambda: _counter(
            names.TERMINATIONS, "Requests the proxy itself terminated.", "reason"
        )
    )
    discovery_fallbacks: Family = field(
        default_factory=lambda: _counter(
            names.DISCOVERY_FALLBACKS,
            "Discovery requests answered from the local fallback document.",
            "group_version",
            "reason",
        )
    )
    quarantines: Family = field(
        default_factory=lambda: _counter(names.QUARANTINES, "Peer endpoints quarantined.")
    )
    all_quarantined: Family = field(
        default_factory=lambda: _counter(
            names.ALL_QUARANTINED, "Quarantine transitions that left no selectable endpoint."
        )
    )
    recoveries: Family = field(
        default_factory=lambda: _counter(names.RECOVERIES, "Failing endpoints that recovered on a dial.")
    )
    dial_failures: Family = field(
        default_factory=lambda: _counter(names.DIAL_FAILURES, "Failed or rejected peer dials.", "reason")
    )
    watch_events: Family = field(
        default_factory=lambda: _counter(names.WATCH_EVENTS, "Events streamed on proxied watches.")
    )
    peers: Family = field(
        default_factory=lambda: _gauge(names.PEERS, "Peers per state.", "group_version", "state")
    )
    cache_synced: Family = field(
        default_factory=lambda: _gauge(
            names.PEER_CACHE_SYNCED, "Whether a current, trusted peer snapshot is held.", "group_version"
        )
    )
    list_age: Family = field(
        default_factory=lambda: _gauge(
            names.PEER_LIST_AGE, "Seconds since the last peer list publication.", "group_version"
        )
    )
    inflight: Family = field(
        default_factory=lambda: _gauge(names.INFLIGHT, "Non-watch requests being served.")
    )
    active_watches: Family = field(
        default_factory=lambda: _gauge(names.ACTIVE_WATCHES, "Open proxied watch streams.")
    )
    request_duration: HistogramFamily = field(
        default_factory=lambda: HistogramFamily(
            names.REQUEST_DURATION,
            "Latency of non-watch proxied requests.",
            ("target", "verb"),
            names.REQUEST_BUCKETS,
        )
    )
    dial_duration: HistogramFamily = field(
        default_factory=lambda: HistogramFamily(
            names.DIAL_DURATION, "Latency of attempted peer dials.", ("target",), names.DIAL_BUCKETS
        )
    )

    def render(self) -> list[str]:
        families: list[Family | HistogramFamily] = [
            self.requests,
            self.request_duration,
            self.terminations,
            self.inflight,
            self.discovery_fallbacks,
            self.peers,
            self.cache_synced,
            self.list_age,
            self.quarantines,
            self.all_quarantined,
            self.recoveries,
            self.dial_failures,
            self.dial_duration,
            self.active_watches,
            self.watch_events,
        ]
        return [line for family in families for line in family.render()]
