"""The digest's chart input: healthy peers per target and failing reasons over the digest period.

From Prometheus when `prometheus.url` is set (range queries), otherwise from the fleet samples the bot
stored itself at each digest and sampling read. Healthy peers are drawn for the targets worth looking at
(not healthy now, worst first, at most what a chart can tell apart); when every target is healthy a single
line counts the healthy targets instead of a wall of flat lines. Failing reasons are the non-`upstream`
reasons of `vcluster_proxy_request_total`, fleet-wide, in requests per minute.

A chart with nothing to show is not posted: it carries the words the digest says instead (`Chart.absent`):
no failing request in the period, or too few readings to draw a line (a stored sample is one reading, and a
rate is the increase between two: the first digest of a bot without Prometheus has neither chart yet).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise
from typing import Protocol

from bot.clients.prometheus import Series, promql_string
from bot.domain.delta import counter_increase
from bot.domain.digest import Digest, Health
from bot.domain.enrichment import TimeSeries
from bot.domain.snapshot import PEERS, REQUESTS
from bot.errors import UpstreamError
from bot.render.blocks import fmt_span
from bot.render.chart import MAX_LINES, Chart, has_line
from bot.render.words import counted
from bot.store.digests import FleetSample

PEERS_CHART = "healthy-peers"
REASONS_CHART = "failing-reasons"
HEALTHY_TARGETS = "healthy targets"
MIN_STEP = 60.0
POINTS = 120
RATE_WINDOW = "5m"


class RangeQueries(Protocol):
    """What the charts need of Prometheus (`PrometheusClient` is one)."""

    async def query_range(
        self, expr: str, *, start: float, end: float, step: float, timeout: float | None = None
    ) -> list[Series]: ...


def chart_targets(digest: Digest) -> list[str]:
    """The targets whose healthy peers are drawn: not healthy now, worst first (the digest's order)."""
    return [t.target for t in digest.targets if t.health is not Health.HEALTHY][:MAX_LINES]


def _peers_title(targets: Sequence[str]) -> tuple[str, str]:
    if targets:
        return "Healthy peers of the targets not healthy now", "healthy peers (lowest group/version)"
    return "Targets with healthy peers", "targets"


def peers_from_samples(
    samples: Sequence[FleetSample], targets: Sequence[str], span: float, end: float
) -> Chart:
    title, y_label = _peers_title(targets)
    if targets:
        lines = tuple(TimeSeries(t, _target_points(samples, t)) for t in targets)
    else:
        lines = (TimeSeries(HEALTHY_TARGETS, tuple((s.at, _healthy_count(s)) for s in samples)),)
    return _peers_chart(title, y_label, lines, span, end)


def _peers_chart(title: str, y_label: str, lines: tuple[TimeSeries, ...], span: float, end: float) -> Chart:
    chart = Chart(PEERS_CHART, title, y_label, lines, span, end, counts=True)
    if has_line(chart):
        return chart
    readings = max((sum(1 for _, v in line.points if v == v) for line in lines), default=0)
    return replace(chart, absent=f"Healthy peers not charted: {_readings(readings, span)}, a line needs two.")


def _readings(count: int, span: float) -> str:
    return f"{counted(count, 'reading')} in the last {_period(span)}"


def _period(span: float) -> str:
    """The charts' period as people say it: "24 h" (not "1 d") up to two days, then in days."""
    hours = span / 3600
    return f"{hours:.0f} h" if hours.is_integer() and hours <= 48 else fmt_span(span)


def _target_points(samples: Sequence[FleetSample], target: str) -> tuple[tuple[float, float], ...]:
    points = []
    for s in samples:
        value = ((s.sample.get("targets") or {}).get(target) or {}).get("h")
        # No reading (unreachable) is a gap, never a zero: zero healthy peers is a claim about the proxy.
        points.append((s.at, float(value) if isinstance(value, int | float) else float("nan")))
    return tuple(points)


def _healthy_count(sample: FleetSample) -> float:
    targets = sample.sample.get("targets") or {}
    return float(sum(1 for t in targets.values() if (t or {}).get("s") == Health.HEALTHY.value))


def reasons_from_samples(samples: Sequence[FleetSample], span: float, end: float) -> Chart:
    """Failed requests per minute per reason, from the increase between consecutive samples: a step over
    each interval (its mean rate), so two readings draw a line, not a dot at the chart's edge."""
    per_reason: dict[str, list[tuple[float, float]]] = {}
    for before, after in pairwise(samples):
        minutes = (after.at - before.at) / 60.0
        if minutes <= 0:
            continue
        old, new = before.sample.get("faults") or {}, after.sample.get("faults") or {}
        for reason in sorted({*old, *new}):
            increase, _ = counter_increase(old.get(reason), float(new.get(reason, 0.0)))
            per_reason.setdefault(reason, []).extend(
                ((before.at, increase / minutes), (after.at, increase / minutes))
            )
    lines = tuple(TimeSeries(r, tuple(p)) for r, p in sorted(per_reason.items()))
    chart = Chart(
        REASONS_CHART, "Failing requests by reason, fleet-wide", "requests per minute", lines, span, end
    )
    if len(samples) < 2:
        # A total since each proxy started is no rate: a rate needs a reading before it.
        said = f"Failing requests not charted: {_readings(len(samples), span)}, a rate needs two."
        return replace(chart, absent=said)
    return _said_when_none_failed(chart)


def _said_when_none_failed(chart: Chart) -> Chart:
    failed = any(v > 0 for line in chart.lines for _, v in line.points if v == v)
    if not failed:
        return replace(chart, absent=f"No failing requests in the last {_period(chart.span)}.")
    if not has_line(chart):  # Prometheus' answer of one point
        return replace(chart, absent="Failing requests not charted: one reading of them, a line needs two.")
    return chart


def charts_from_samples(digest: Digest, samples: Sequence[FleetSample], span: float) -> list[Chart]:
    targets = chart_targets(digest)
    return [
        peers_from_samples(samples, targets, span, digest.at),
        reasons_from_samples(samples, span, digest.at),
    ]


# -- Prometheus --------------------------------------------------------------------------------------------


def peers_query(targets: Sequence[str]) -> str:
    """Lowest healthy peers per target (min: one degraded cache or replica must not be averaged away)."""
    healthy = f'{PEERS}{{state="healthy"}}'
    if not targets:
        return f"count(min by (target) ({healthy}) > 0)"
    pattern = promql_string("|".join(re.escape(t) for t in targets))
    return f'min by (target) ({PEERS}{{state="healthy",target=~{pattern}}})'


def reasons_query() -> str:
    return f'sum by (reason) (rate({REQUESTS}{{reason!="upstream"}}[{RATE_WINDOW}])) * 60'


def _step(span: float) -> float:
    return max(MIN_STEP, span / POINTS)


async def charts_from_prometheus(
    digest: Digest, prometheus: RangeQueries, span: float, *, timeout: float = 10.0
) -> list[Chart]:
    """Both charts from range queries over the period; `UpstreamError` when Prometheus fails."""
    targets = chart_targets(digest)
    start, end, step = digest.at - span, digest.at, _step(span)
    found = await prometheus.query_range(
        peers_query(targets), start=start, end=end, step=step, timeout=timeout
    )
    title, y_label = _peers_title(targets)
    if targets:
        by_target = {s.labels.get("target", ""): s.points for s in found}
        peer_lines = tuple(TimeSeries(t, tuple(by_target.get(t, ()))) for t in targets)
    else:
        peer_lines = tuple(TimeSeries(HEALTHY_TARGETS, tuple(s.points)) for s in found[:1])
    reasons = await prometheus.query_range(reasons_query(), start=start, end=end, step=step, timeout=timeout)
    reason_lines = tuple(
        sorted(
            (TimeSeries(s.labels.get("reason", "?"), tuple(s.points)) for s in reasons),
            key=lambda line: line.name,
        )
    )
    return [
        _peers_chart(title, y_label, peer_lines, span, end),
        _said_when_none_failed(
            Chart(
                REASONS_CHART,
                "Failing requests by reason (Prometheus)",
                "requests per minute",
                reason_lines,
                span,
                end,
            )
        ),
    ]


async def digest_charts(
    digest: Digest,
    samples: Sequence[FleetSample],
    span: float,
    prometheus: RangeQueries | None = None,
) -> tuple[list[Chart], str | None]:
    """The charts, from Prometheus when given and answering, else from the samples; and a note on why not."""
    if prometheus is None:
        return charts_from_samples(digest, samples, span), None
    try:
        return await charts_from_prometheus(digest, prometheus, span), None
    except UpstreamError as err:
        return charts_from_samples(
            digest, samples, span
        ), f"Prometheus unavailable, charts from the bot's samples: {err}"
