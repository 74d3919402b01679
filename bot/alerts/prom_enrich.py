"""Alert enrichment from Prometheus: the alert's window (reason counts, p99s) and a chart of its key series.

For one alert of a configured client cluster, series are selected by the cluster's `match` labels, the
alert's `target`, and its `pod` when it has one (HA replicas keep their own counters); the window is the
alert rule's own (`ALERT_WINDOWS`). `PromEnricher` reads windows (shared by concurrent callers, cached
briefly: `bot.shared_reads`) and renders charts (in the bot's worker processes when given them:
matplotlib holds the interpreter lock for 100-200 ms a chart, which in a thread of the bot's own process
delayed the alert's post going out meanwhile); `PromRound` is one notification's reads, started
together and collected when the enrichment budget ends (what is late is marked unavailable, never
waited for). `bot.render.enrichment` words what was read on the alert's diagnosis.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import BrokenExecutor, Executor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from bot.alerts.budget import within_budget
from bot.clients.prometheus import Sample, Series
from bot.domain.alerts_catalog import (
    DISCOVERY_DEGRADED,
    PEER_CHURN,
    TARGET_UNAVAILABLE,
    WATCHES_SILENT,
)
from bot.domain.enrichment import (
    CHART_FOR,
    ChartKind,
    KeySeries,
    PromOutcome,
    PromWindow,
    Unavailable,
    WindowAsk,
)
from bot.domain.messages import AlertView
from bot.domain.snapshot import make_labels
from bot.errors import UpstreamError
from bot.ports import Clock
from bot.prom_queries import (
    CHART_SPAN,
    CHART_STEP,
    buckets_query,
    chart_query,
    counters_query,
    key_series,
    p99_query,
    window_from,
)
from bot.render.chart import render_chart
from bot.shared_reads import SharedReads
from config.clusters import ClusterSettings
from config.settings import Settings

log = logging.getLogger(__name__)


# Each alert's own rule window (the guide's rules); gauge rules get a quarter hour of context.
ALERT_WINDOWS: Mapping[str, int] = {
    TARGET_UNAVAILABLE: 600,
    PEER_CHURN: 1800,
    DISCOVERY_DEGRADED: 300,
    WATCHES_SILENT: 3600,
}
DEFAULT_WINDOW = 900
# How long a caller waits for a window while Prometheus fails (see `PromEnricher`).
RETRY_WAIT = 1.0


class PromQueries(Protocol):
    """What enrichment needs of Prometheus (`bot.clients.prometheus.PrometheusClient` is one)."""

    async def query(
        self, expr: str, *, at: float | None = None, timeout: float | None = None
    ) -> list[Sample]: ...

    async def query_range(
        self, expr: str, *, start: float, end: float, step: float, timeout: float | None = None
    ) -> list[Series]: ...

    async def aclose(self) -> None: ...


def ask_for(alertname: str, labels: Mapping[str, str], cluster: ClusterSettings | None) -> WindowAsk | None:
    """What to ask Prometheus about one alert; None when it names no target or matches no cluster."""
    target = labels.get("target")
    if not target or cluster is None:
        return None
    return WindowAsk(
        alertname=alertname,
        cluster=cluster.name,
        match=make_labels(cluster.match.items()),
        target=target,
        pod=labels.get("pod") or None,
        seconds=ALERT_WINDOWS.get(alertname, DEFAULT_WINDOW),
    )


@dataclass(frozen=True, slots=True)
class ChartImage:
    """A rendered chart, ready for `upload_png`."""

    png: bytes
    filename: str
    title: str


_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")


def chart_image(series: KeySeries) -> ChartImage:
    """Render the key series (CPU-bound: call it off the event loop, best in another process)."""
    now = datetime.fromtimestamp(series.end, UTC)
    png = render_chart(series.lines, series.title, now, y_label=series.y_label)
    target = _UNSAFE_FILENAME.sub("-", series.title.split(":", 1)[0]).strip("-") or "target"
    return ChartImage(png, f"{target}-{series.kind.value}.png", series.title)


@dataclass
class PromEnricher:
    """Reads windows and charts from Prometheus; one read per ask serves every caller for `ttl` seconds.

    Reads are shielded: a caller that stops waiting (its budget ran out) leaves the read running, and
    what it brings fills the cache for the next notification of the same alert. While Prometheus fails
    (its last window read failed: down, refusing, or slower than `timeout`), a caller waits for its read
    only `retry_wait` seconds before it is told the last failure: one notification at a time goes through
    the alert worker, so a hung Prometheus would otherwise hold each alert, and those behind it, for the
    whole budget.

    Charts are rendered in `executor` (the bot's worker processes, `bot.digest.pool`) when given, else in
    a thread: a thread holds this process's interpreter lock while matplotlib draws, and the post of
    the alert the chart belongs to is going out through the delivery worker at that very moment.
    """

    client: PromQueries
    timeout: float = 5.0
    ttl: float = 5.0
    clock: Clock = time.time
    monotonic: Clock = time.monotonic
    retry_wait: float = RETRY_WAIT
    executor: Executor | None = None
    _reads: SharedReads[WindowAsk, PromWindow] = field(init=False, repr=False)
    _failing: tuple[float, UpstreamError] | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        self._reads = SharedReads(self.ttl, self.monotonic)

    async def window(self, ask: WindowAsk) -> PromWindow:
        """The ask's window (cached for `ttl`); raises UpstreamError when Prometheus fails."""
        shared = self._reads.get(ask, lambda: self._read(ask), name=f"prometheus-window-{ask.target}")
        failing = self._failing
        if failing is None:
            return await shared
        reading = asyncio.ensure_future(shared)
        done, _ = await asyncio.wait({reading}, timeout=self.retry_wait)
        if reading in done:
            return reading.result()
        reading.cancel()  # this caller's wait only: the read itself is shared and goes on
        at, error = failing
        raise UpstreamError(f"{error} (the last query, {max(0.0, self.clock() - at):.0f}s ago; asking again)")

    async def key_series(self, ask: WindowAsk) -> KeySeries:
        """The last hour of the alert's key series; raises UpstreamError when Prometheus fails."""
        kind = CHART_FOR.get(ask.alertname, ChartKind.FAILING_REASONS)
        end = self.clock()
        found = await self.client.query_range(
            chart_query(ask, kind), start=end - CHART_SPAN, end=end, step=CHART_STEP, timeout=self.timeout
        )
        return key_series(ask, kind, found, end)

    async def chart(self, ask: WindowAsk) -> ChartImage:
        """The key series rendered as a PNG (in `executor`, else a worker thread)."""
        series = await self.key_series(ask)
        if self.executor is not None:
            try:
                return await asyncio.get_running_loop().run_in_executor(self.executor, chart_image, series)
            except BrokenExecutor as error:  # a worker died (killed, out of memory): the chart still goes
                log.warning(
                    "chart of %s drawn in a thread: the worker processes broke: %s", ask.target, error
                )
        return await asyncio.to_thread(chart_image, series)

    async def try_chart(self, ask: WindowAsk, budget: float) -> ChartImage | None:
        """The chart within `budget` seconds, or None (logged): a chart never fails an alert."""
        try:
            async with asyncio.timeout(budget):
                return await self.chart(ask)
        except TimeoutError:
            log.warning("chart of %s took longer than %gs: not uploaded", ask.target, budget)
        except UpstreamError as error:
            log.warning("chart of %s not uploaded: %s", ask.target, error)
        return None

    async def aclose(self) -> None:
        """Cancel reads still running and close the Prometheus client."""
        await self.cancel_pending()
        await self.client.aclose()

    async def cancel_pending(self) -> None:
        """Stop reads nobody waits for any more (shutdown)."""
        await self._reads.cancel_pending()

    async def _read(self, ask: WindowAsk) -> PromWindow:
        at = self.clock()
        try:
            counters, buckets, p99s = await asyncio.gather(
                self.client.query(counters_query(ask), at=at, timeout=self.timeout),
                self.client.query(buckets_query(ask), at=at, timeout=self.timeout),
                self.client.query(p99_query(ask), at=at, timeout=self.timeout),
            )
        except UpstreamError as error:
            self._failing = (at, error)
            raise
        self._failing = None
        return window_from(ask, at, counters, buckets, p99s)


class PromRound:
    """One notification's Prometheus reads: started together, collected when the enrichment budget ends."""

    def __init__(self, enricher: PromEnricher | None, settings: Settings) -> None:
        self._enricher = enricher
        self._settings = settings
        self._budget = settings.enrichment.timeout_seconds
        self._tasks: dict[WindowAsk, asyncio.Task[PromWindow]] = {}
        self._outcomes: dict[WindowAsk, PromOutcome] = {}

    @property
    def tasks(self) -> list[asyncio.Task[PromWindow]]:
        return list(self._tasks.values())

    def ask(self, alertname: str, labels: Mapping[str, str], cluster: str | None) -> WindowAsk | None:
        if self._enricher is None or cluster is None:
            return None
        return ask_for(alertname, labels, self._settings.cluster(cluster))

    def start(self, alerts: Iterable[tuple[str, Mapping[str, str], str | None]]) -> None:
        """Start one read per distinct ask among `(alertname, labels, cluster)`."""
        if self._enricher is None:
            return
        for alertname, labels, cluster in alerts:
            ask = self.ask(alertname, labels, cluster)
            if ask is not None and ask not in self._tasks:
                read = self._enricher.window(ask)
                self._tasks[ask] = asyncio.create_task(read, name=f"prometheus-{ask.target}")

    def collect(self) -> None:
        """The budget is over: keep what has arrived, mark the rest late and stop waiting for it.

        Late reads keep running inside the enricher (shielded) and fill its cache for the next notification.
        """
        self._outcomes = {ask: self._outcome(ask, task) for ask, task in self._tasks.items()}
        for task in self._tasks.values():
            if not task.done():
                task.cancel()

    def answered(self, ask: WindowAsk) -> bool:
        """False when this round asked for `ask`'s window and it did not come (late or failed)."""
        found = self._outcomes.get(ask)
        return found is None or found.window is not None

    def outcome(self, alertname: str, labels: Mapping[str, str], cluster: str | None) -> PromOutcome | None:
        """What was read for one alert; None when Prometheus was not asked (not configured, no target)."""
        ask = self.ask(alertname, labels, cluster)
        return None if ask is None else self._outcomes.get(ask)

    def _outcome(self, ask: WindowAsk, task: asyncio.Task[PromWindow]) -> PromOutcome:
        got = within_budget(task, self._budget)
        if not isinstance(got, Unavailable):
            return PromOutcome(ask, got)
        if got.error is not None:
            log.warning("Prometheus enrichment of %s failed: %s", ask.target, got.error)
        return PromOutcome(ask, None, got)


def chart_subject(firing: Sequence[AlertView], settings: Settings) -> WindowAsk | None:
    """Whose key series a group's chart shows: its worst firing alert that names a target and a cluster."""
    for alert in sorted(firing, key=lambda a: (-a.severity, a.name, a.labels.get("target", ""))):
        ask = ask_for(alert.name, alert.labels, settings.cluster_for_alert(alert.labels))
        if ask is not None:
            return ask
    return None
