"""PromQL that alert enrichment and the status check send, and its answers decoded into the domain's shapes.

Every expression is built from constants and the ask's label values, which pass through `selector` (each
value escaped as a PromQL string literal): a hostile alert label can only fail to match, never inject.
The window is three instant queries: every proxy counter's `increase()` (each family summed by its own
labels and tagged with its name via `label_replace`, joined with `or`), the histograms' bucket increases,
and `histogram_quantile(0.99, ...)` of request and dial durations. Decoded, they make a `ProxyDelta` like
the one two snapshots give, so the diagnosis reads Prometheus' counts exactly as it reads its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from bot.clients.prometheus import Sample, Series, duration, selector
from bot.domain.delta import ProxyDelta
from bot.domain.enrichment import ChartKind, KeySeries, PromWindow, TimeSeries, WindowAsk
from bot.domain.quantile import P99
from bot.domain.snapshot import (
    ALL_QUARANTINED,
    DIAL_DURATION,
    DIAL_FAILURES,
    DISCOVERY_FALLBACKS,
    PEER_CACHE_SYNCED,
    PEERS,
    QUARANTINES,
    RECOVERIES,
    REQUEST_DURATION,
    REQUESTS,
    TERMINATIONS,
    WATCH_EVENTS,
    Bucket,
    Histogram,
    Labels,
    ProxySnapshot,
    make_labels,
)

# Labels each counter family carries besides `target` (the guide's metrics reference).
COUNTER_LABELS: Mapping[str, tuple[str, ...]] = {
    REQUESTS: ("group_version", "verb", "code", "reason"),
    TERMINATIONS: ("reason",),
    DISCOVERY_FALLBACKS: ("group_version", "reason"),
    QUARANTINES: (),
    ALL_QUARANTINED: (),
    RECOVERIES: (),
    DIAL_FAILURES: ("reason",),
    WATCH_EVENTS: (),
}
HISTOGRAM_LABELS: Mapping[str, tuple[str, ...]] = {REQUEST_DURATION: ("verb",), DIAL_DURATION: ()}
# The label the joined queries tag each family's result with (sum by() leaves no other label to clash).
FAMILY = "proxybot_family"
CHART_SPAN = 3600
CHART_STEP = 30
# The rate() range of the chart's per-second lines: several scrapes at any usual interval.
CHART_RATE = 300
HEALTHY = 'state="healthy"'
# `upstream` is the default outcome (usually the target answered): other reasons are proxy failures.
NOT_UPSTREAM = 'reason!="upstream"'
# The resolution summary's failed requests: every status from 400 up (`bot.domain.impact.FAILED_FROM`).
FAILED_CODES = 'code=~"[4-9][0-9][0-9]"'
QUARANTINED = 'state="quarantined"'


# -- PromQL ------------------------------------------------------------------------------------------


def _tagged(expr: str, family: str) -> str:
    return f'label_replace({expr}, "{FAMILY}", "{family}", "", "")'


def _by(labels: Sequence[str]) -> str:
    return f"sum by ({', '.join(labels)})" if labels else "sum"


def counters_query(ask: WindowAsk) -> str:
    """Every proxy counter's increase over the window, summed by the family's own labels, tagged."""
    return _increases(ask, COUNTER_LABELS)


def buckets_query(ask: WindowAsk) -> str:
    """Every proxy histogram's bucket increases over the window, by `le` and the family's labels, tagged."""
    return _increases(ask, HISTOGRAM_LABELS, series="_bucket", by_also=("le",))


def _increases(
    ask: WindowAsk, families: Mapping[str, Sequence[str]], series: str = "", by_also: Sequence[str] = ()
) -> str:
    sel, window = ask.labels(), duration(ask.seconds)
    parts = [
        _tagged(f"{_by((*by_also, *by))} (increase({selector(family + series, sel)}[{window}]))", family)
        for family, by in families.items()
    ]
    return " or ".join(parts)


def p99_query(ask: WindowAsk) -> str:
    """Request and dial p99 over the window, Prometheus' own `histogram_quantile`."""
    sel, window = ask.labels(), duration(ask.seconds)
    parts = [
        _tagged(
            f"histogram_quantile({P99}, sum by (le) (rate({selector(family + '_bucket', sel)}[{window}])))",
            family,
        )
        for family in HISTOGRAM_LABELS
    ]
    return " or ".join(parts)


def chart_query(ask: WindowAsk, kind: ChartKind) -> str:
    sel = ask.labels()
    if kind is ChartKind.HEALTHY_PEERS:
        # min, not sum: one healthy replica must not hide a degraded one (the guide's alerting advice).
        return f"min by (group_version) ({selector(PEERS, sel, extra=HEALTHY)})"
    rate = duration(CHART_RATE)
    if kind is ChartKind.WATCH_EVENTS:
        return f"sum(rate({selector(WATCH_EVENTS, sel)}[{rate}]))"
    return f"sum by (reason) (rate({selector(REQUESTS, sel, extra=NOT_UPSTREAM)}[{rate}]))"


def impact_queries(labels: Mapping[str, str], seconds: float) -> tuple[str, str, str]:
    """A resolved window's failed requests by code and reason (`increase()`, which counts resets as
    Prometheus does); the peak of quarantined peers, each replica's and group/version's peak summed (every
    scraped sample counts: a subquery's steps would miss a 20 s quarantine); and the peer caches that were
    unsynced at some point of the window."""
    window, sel = duration(seconds), dict(labels)
    failed = f"sum by (code, reason) (increase({selector(REQUESTS, sel, extra=FAILED_CODES)}[{window}]))"
    quarantined = f"sum(max_over_time({selector(PEERS, sel, extra=QUARANTINED)}[{window}]))"
    unsynced = f"count(min_over_time({selector(PEER_CACHE_SYNCED, sel)}[{window}]) < 1)"
    return failed, quarantined, unsynced


def impact_failed(found: list[Sample]) -> dict[tuple[str, str], float]:
    """The failed-requests query's answer as (code, reason) -> requests (whole: `increase()`
    extrapolates to the window's edges)."""
    counted: dict[tuple[str, str], float] = {}
    for s in found:
        if math.isfinite(s.value) and round(s.value) > 0:
            key = (s.labels.get("code", ""), s.labels.get("reason", ""))
            counted[key] = counted.get(key, 0.0) + round(s.value)
    return counted


def peak(found: list[Sample]) -> float:
    """A peak query's answer (no series: nothing was quarantined or unsynced, zero)."""
    return max((s.value for s in found if math.isfinite(s.value)), default=0.0)


# -- decoding ----------------------------------------------------------------------------------------


def window_from(
    ask: WindowAsk, at: float, counters: list[Sample], buckets: list[Sample], p99s: list[Sample]
) -> PromWindow:
    """The window view of the three queries' answers."""
    increase = ProxySnapshot(samples=_counter_samples(ask, counters), histograms=_histograms(ask, buckets))
    quantiles = {s.labels.get(FAMILY): s.value for s in p99s if math.isfinite(s.value)}
    return PromWindow(
        ask=ask,
        read_at=at,
        delta=ProxyDelta(increase=increase, seconds=float(ask.seconds)),
        request_p99=quantiles.get(REQUEST_DURATION),
        dial_p99=quantiles.get(DIAL_DURATION),
    )


def _series_labels(ask: WindowAsk, raw: Mapping[str, str], drop: tuple[str, ...]) -> Labels:
    kept = ((k, v) for k, v in raw.items() if k not in drop)
    return make_labels([*kept, ("target", ask.target)])


def _counter_samples(ask: WindowAsk, found: list[Sample]) -> dict[str, dict[Labels, float]]:
    samples: dict[str, dict[Labels, float]] = {}
    for s in found:
        family = s.labels.get(FAMILY, "")
        if family in COUNTER_LABELS and math.isfinite(s.value):
            samples.setdefault(family, {})[_series_labels(ask, s.labels, (FAMILY,))] = s.value
    return samples


def _histograms(ask: WindowAsk, found: list[Sample]) -> dict[str, dict[Labels, Histogram]]:
    grouped: dict[str, dict[Labels, dict[float, float]]] = {}
    for s in found:
        family, le = s.labels.get(FAMILY, ""), s.labels.get("le")
        if family not in HISTOGRAM_LABELS or le is None or not math.isfinite(s.value):
            continue
        key = _series_labels(ask, s.labels, (FAMILY, "le"))
        grouped.setdefault(family, {}).setdefault(key, {})[float(le)] = s.value
    return {family: {k: _histogram(b) for k, b in per.items()} for family, per in grouped.items()}


def _histogram(by_le: Mapping[float, float]) -> Histogram:
    buckets = tuple(Bucket(le, count) for le, count in sorted(by_le.items()))
    count = by_le.get(math.inf, buckets[-1].count if buckets else 0.0)
    return Histogram(buckets, count, math.nan)  # the sum is not read: nothing here needs the mean


def key_series(ask: WindowAsk, kind: ChartKind, found: list[Series], end: float) -> KeySeries:
    """The chart's lines and words for one alert's key series."""
    name_by, title, y_label = _CHART_WORDS[kind]
    lines = tuple(
        sorted(
            (TimeSeries(s.labels.get(name_by, "") or "all", s.points) for s in found),
            key=lambda line: line.name,
        )
    )
    return KeySeries(kind, f"{ask.target}: {title}, last hour", y_label, lines, end)


# kind -> (label naming each line, what the chart shows, the y axis with its unit)
_CHART_WORDS: Mapping[ChartKind, tuple[str, str, str]] = {
    ChartKind.HEALTHY_PEERS: ("group_version", "healthy peers per group/version", "healthy peers"),
    ChartKind.FAILING_REASONS: ("reason", "failing requests by reason", "requests per second"),
    ChartKind.WATCH_EVENTS: ("", "watch events", "events per second"),
}
