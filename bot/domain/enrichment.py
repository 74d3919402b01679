"""What alert enrichment's reads bring: a Prometheus window of one target, the key series of its chart,
or why a read brought nothing within the budget. The PromQL that reads them is `bot.prom_queries`; the
words that show them are `bot.render.enrichment`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from bot.domain.alerts_catalog import (
    DISCOVERY_DEGRADED,
    NO_HEALTHY_PEERS,
    PEER_CACHE_UNSYNCED,
    PEER_CHURN,
    TARGET_UNAVAILABLE,
    WATCHES_SILENT,
)
from bot.domain.delta import ProxyDelta
from bot.domain.snapshot import REQUESTS, Labels


@dataclass(frozen=True, slots=True)
class Unavailable:
    """Why a read brought nothing within `budget` seconds: still running, failed (`error`), or cancelled."""

    budget: float
    late: bool = False
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class WindowAsk:
    """Which series to read and over how long: one target of one client cluster, one replica when known."""

    alertname: str
    cluster: str
    match: Labels  # the cluster's identifying labels, as on every scraped series
    target: str
    pod: str | None
    seconds: int

    def labels(self) -> dict[str, str]:
        found = {**dict(self.match), "target": self.target}
        if self.pod is not None:
            found["pod"] = self.pod
        return found


@dataclass(frozen=True)
class PromWindow:
    """Counters and p99s of one target over a window, as Prometheus counted them (`increase()`)."""

    ask: WindowAsk
    read_at: float
    delta: ProxyDelta  # counter and bucket increases; a window for `diagnose_alert`
    request_p99: float | None
    dial_p99: float | None

    @property
    def seconds(self) -> int:
        return self.ask.seconds

    def reasons(self, family: str = REQUESTS, group_version: str | None = None) -> dict[str, float]:
        """Increase per `reason` of one counter family, positive only, largest first."""
        match = {"group_version": group_version} if group_version else {}
        found = self.delta.increase.breakdown(family, "reason", target=self.ask.target, **match)
        return {k: v for k, v in found.items() if v > 0}

    def observations(self, histogram: str) -> float:
        found = self.delta.increase.histogram(histogram, target=self.ask.target)
        return 0.0 if found is None else found.count


class ChartKind(StrEnum):
    """Which key series an alert's chart shows."""

    HEALTHY_PEERS = "healthy-peers"
    FAILING_REASONS = "failing-requests"
    WATCH_EVENTS = "watch-events"


CHART_FOR: Mapping[str, ChartKind] = {
    NO_HEALTHY_PEERS: ChartKind.HEALTHY_PEERS,
    PEER_CACHE_UNSYNCED: ChartKind.HEALTHY_PEERS,
    TARGET_UNAVAILABLE: ChartKind.HEALTHY_PEERS,
    PEER_CHURN: ChartKind.HEALTHY_PEERS,
    DISCOVERY_DEGRADED: ChartKind.FAILING_REASONS,
    WATCHES_SILENT: ChartKind.WATCH_EVENTS,
}


@dataclass(frozen=True, slots=True)
class TimeSeries:
    """One line of a chart: a name for the legend and (unix seconds, value) points."""

    name: str
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class KeySeries:
    """The alert's key series over the last hour, with what the chart says about them."""

    kind: ChartKind
    title: str
    y_label: str
    lines: tuple[TimeSeries, ...]
    end: float


@dataclass(frozen=True, slots=True)
class PromOutcome:
    """What Prometheus said about one ask: its window, or why there is none (late, refused, unreachable)."""

    ask: WindowAsk
    window: PromWindow | None
    unavailable: Unavailable | None = None
