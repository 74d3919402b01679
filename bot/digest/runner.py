"""One fleet digest, end to end: collect, judge, chart, post, and record the period so it is posted once.

`DigestRunner.run_period(period)` claims the period in the store before building and records it as posted
afterwards (with the summary the next digest compares against); a period already posted is skipped. Runs
never overlap (one lock for scheduled, caught-up and on-demand digests). `OutboxPoster` posts through the
durable outbox keyed `digest:<period>`, so a crash between the post and the record re-enqueues a duplicate
that the outbox ignores; `DirectPoster` posts straight to Slack (the CLI).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol

from bot.delivery.worker import Delivery, SlackSender
from bot.digest.firing import WorkspaceUrl, firing_alerts
from bot.digest.fleet import (
    DEFAULT_CLUSTER_TIMEOUT,
    DEFAULT_CONCURRENCY,
    CronJobSource,
    ReadCluster,
    TriageSource,
    probe_runs,
    read_fleet,
    triage_reads,
)
from bot.digest.history import RangeQueries, digest_charts
from bot.digest.judge import assemble_digest, judge_reads, with_triage
from bot.digest.oncall import oncall_figures
from bot.digest.pool import judge_fleet, judge_fleet_in_pool
from bot.domain.digest import Digest, TargetDigest
from bot.domain.fleet import FleetHealth
from bot.live import MetricsSource
from bot.ports import Clock, SilenceList
from bot.render.blocks import Message
from bot.render.digest import ChartPng, chart_pngs, digest_message
from bot.render.fleet import fleet_note
from bot.store import DigestClaim, Store, StoreError
from bot.store.digests import FleetSample
from config.settings import Settings

log = logging.getLogger(__name__)

SAMPLE_RETENTION = 8 * 86400.0
# Held by the replica that takes the fleet samples between digests.
SAMPLE_LEASE = "digest-sample"
# A claim on a digest period lapses this long after its replica stopped renewing it (it died).
CLAIM_TTL = 30.0
# How long a replica waits for another that holds the claim before it gives the period up, and how often
# it looks whether the other posted it (or its claim lapsed).
CLAIM_WAIT_MAX = 300.0
CLAIM_POLL = CLAIM_TTL / 3
DEFAULT_SPAN = 86400.0  # the first digest's charts, with no earlier digest to start from
MIN_SPAN, MAX_SPAN = 3600.0, 7 * 86400.0


def chart_span(previous_at: float | None, now: float) -> float:
    """The charts cover the time since the last digest, within an hour and a week."""
    span = DEFAULT_SPAN if previous_at is None else now - previous_at
    return min(MAX_SPAN, max(MIN_SPAN, span))


# -- posting ---------------------------------------------------------------------------------------------


class DigestPoster(Protocol):
    """Posts a digest and uploads its charts into the digest's thread."""

    async def post_digest(
        self, channel: str, period: str, message: Message, charts: Sequence[ChartPng]
    ) -> None: ...


@dataclass
class OutboxPoster:
    """Through the durable outbox (serve): retried, paced, and at most one post per period."""

    delivery: Delivery

    async def post_digest(
        self, channel: str, period: str, message: Message, charts: Sequence[ChartPng]
    ) -> None:
        group = f"digest:{period}"
        await self.delivery.post(channel, group, message)
        for chart in charts:
            await self.delivery.upload_png(
                channel, group, chart.png, filename=chart.filename, title=chart.title, revision=chart.filename
            )


@dataclass
class DirectPoster:
    """Straight to Slack (the CLI's `--post`): one post, then the charts in its thread; errors propagate."""

    slack: SlackSender

    async def post_digest(
        self, channel: str, period: str, message: Message, charts: Sequence[ChartPng]
    ) -> None:
        posted = await self.slack.post(channel, message)
        for chart in charts:
            await self.slack.upload_png(posted.channel_id, posted.ts, chart.png, chart.filename, chart.title)


# -- one digest ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DigestSources:
    """Where a digest reads from: the clusters' live state, the probe CronJobs, Prometheus.

    With `pages` (each cluster's `/metrics/syncer`), the digest reads them itself and parses and judges
    them in worker processes (`bot.digest.pool`), so a big fleet's CPU is spread over every core; `read`
    then serves nothing in the digest.
    """

    read: ReadCluster
    cronjobs: CronJobSource | None = None
    prometheus: RangeQueries | None = None
    pages: Mapping[str, MetricsSource] | None = None
    # The long-lived worker pool `serve` keeps (bot.digest.pool.digest_pool); None: one per digest.
    executor: Executor | None = None
    # The control planes and the clients' APIServices: verdicts, proxy objects, versions (None: not read).
    triage: TriageSource | None = None
    # Slack's workspace URL (auth.test), for links to the alerts' messages (None: mentioned unlinked).
    workspace: WorkspaceUrl | None = None
    # Alertmanager's silences as the silence watch last read them, for the on-call figures.
    silences: SilenceList | None = None
    # The platform the fleet is read from, how it answers (None: the fleet is the configuration's).
    fleet: Callable[[], FleetHealth | None] = lambda: None


@dataclass(frozen=True)
class BuiltDigest:
    """A digest with its message and charts."""

    digest: Digest
    message: Message
    charts: tuple[ChartPng, ...]


class DigestRunner:
    """Builds digests and posts them at most once per period; runs never overlap."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        sources: DigestSources,
        poster: DigestPoster | None,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        timeout: float = DEFAULT_CLUSTER_TIMEOUT,
        clock: Clock = time.time,
        pacing: Clock | None = None,
    ) -> None:
        self.settings = settings
        self._store = store
        self._sources = sources
        self._poster = poster
        self._concurrency = concurrency
        self._timeout = timeout
        self._clock = clock  # the time the digest shows, and its period
        self._pacing = pacing or clock  # the claim's waits, against the store's times
        self._lock = asyncio.Lock()

    async def collect(self, period: str, previous_period: str | None = None) -> Digest:
        """Read the fleet and judge it against the last posted digest (other than `previous_period`)."""
        settings, now = self.settings, self._clock()
        clusters, concurrency, timeout = settings.clusters, self._concurrency, self._timeout
        (judged, seconds), probes, triages = await asyncio.gather(
            self._judge_fleet(),
            probe_runs(clusters, self._sources.cronjobs, now, concurrency=concurrency, timeout=timeout),
            triage_reads(clusters, self._sources.triage, concurrency=concurrency, timeout=timeout),
        )
        judged, triage_findings, versions = with_triage(judged, triages, self._timeout)
        last = await self._store.last_digest(other_than=previous_period)
        previous, previous_at = (None, None) if last is None else (last.summary, last.posted_at)
        digest = assemble_digest(
            judged,
            seconds,
            period=period,
            at=now,
            probes=probes,
            previous=previous,
            previous_at=previous_at,
            triage_findings=triage_findings,
            versions=versions,
        )
        since = now - DEFAULT_SPAN if previous_at is None else previous_at
        oncall = await oncall_figures(self._store, self._sources.silences, since=since, now=now)
        return replace(
            digest, firing=await firing_alerts(self._store, self._sources.workspace), oncall=oncall
        )

    async def _judge_fleet(self) -> tuple[list[TargetDigest], dict[str, float]]:
        """Every configured target judged (in configuration order), and the seconds each cluster cost."""
        clusters = self.settings.clusters
        pages, executor = self._sources.pages, self._sources.executor
        if pages is not None:
            concurrency, timeout = self._concurrency, self._timeout
            if executor is not None:
                fleet = await judge_fleet(
                    clusters, pages, executor, concurrency=concurrency, timeout=timeout, wall=self._clock
                )
            else:
                workers = self.settings.digest.workers
                fleet = await judge_fleet_in_pool(
                    clusters, pages, workers=workers, concurrency=concurrency, timeout=timeout
                )
            judged = [t for c in clusters for t in fleet[c.name].targets]
            return judged, {name: j.seconds for name, j in fleet.items()}
        names = [c.name for c in clusters]
        reads = await read_fleet(
            names, self._sources.read, concurrency=self._concurrency, timeout=self._timeout, wall=self._clock
        )
        # Judging a big fleet is seconds of CPU: off the event loop, so webhooks keep their latency.
        return await asyncio.to_thread(judge_reads, clusters, reads)

    async def build(self, period: str, *, record_sample: bool = True) -> BuiltDigest:
        """The digest of `period` with its charts; `record_sample` keeps its fleet sample for later charts."""
        digest = await self.collect(period, previous_period=period)
        sample = FleetSample(digest.at, digest.sample())
        if record_sample:
            await self._store.add_fleet_sample(sample, keep_after=digest.at - SAMPLE_RETENTION)
        span = chart_span(digest.previous_at, digest.at)
        samples = await self._store.fleet_samples(since=digest.at - span)
        if not record_sample:
            samples.append(sample)
        charts, note = await digest_charts(digest, samples, span, self._sources.prometheus)
        pngs = await asyncio.to_thread(chart_pngs, charts)
        notes = [n for n in (note, fleet_note(self._sources.fleet())) if n]
        return BuiltDigest(digest, digest_message(digest, notes, charts), tuple(pngs))

    async def run_period(self, period: str) -> bool:
        """Post the digest of `period` unless it was already posted; True when posted now.

        With several replicas on one store, the one that claims the period posts it; the others wait
        while its claim is live, and take over only if it lapses unposted (that replica died)."""
        async with self._lock:
            if not await self._claim(period):
                return False
            async with self._claim_renewed(period):
                built = await self.build(period)
                await self._post(period, built)
            await self._store.finish_digest(period, built.digest.summary())
            return True

    async def _claim(self, period: str) -> bool:
        deadline = self._pacing() + CLAIM_WAIT_MAX
        while True:
            claim, until = await self._store.claim_digest(period, CLAIM_TTL)
            if claim is DigestClaim.CLAIMED:
                return True
            if claim is DigestClaim.POSTED:
                log.info("digest %s was already posted: skipped", period)
                return False
            now = self._pacing()
            if now >= deadline:
                log.warning("digest %s: another replica has held it for too long: skipped here", period)
                return False
            log.info("digest %s is being built by another replica: waiting for it", period)
            await asyncio.sleep(max(0.05, min((until or now) - now, CLAIM_POLL)))

    @contextlib.asynccontextmanager
    async def _claim_renewed(self, period: str) -> AsyncIterator[None]:
        """Keep the claim on `period` live while the digest is built and handed to the outbox."""

        async def renew() -> None:
            while True:
                await asyncio.sleep(CLAIM_TTL / 3)
                if not await self._store.renew_digest(period, CLAIM_TTL):
                    log.warning("digest %s: the claim lapsed while building", period)
                    return

        task = asyncio.create_task(renew(), name=f"proxybot-digest-claim-{period}")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, StoreError):
                await task

    async def post_now(self) -> BuiltDigest:
        """An on-demand digest (`/proxy digest`, `proxybot digest --post`): always posted, recorded."""
        async with self._lock:
            period = "manual:" + datetime.fromtimestamp(self._clock(), UTC).isoformat(timespec="seconds")
            await self._store.claim_digest(period, CLAIM_TTL)
            built = await self.build(period)
            await self._post(period, built)
            await self._store.finish_digest(period, built.digest.summary())
            return built

    async def sample(self, *, lease_ttl: float | None = None) -> bool:
        """Store a fleet sample between digests, so the charts have points to draw without Prometheus.

        With `lease_ttl`, only the replica holding the sampling lease samples (replicas sharing a store
        would otherwise each add a sample per interval); False when another replica holds it."""
        if lease_ttl is not None and await self._store.hold_lease(SAMPLE_LEASE, lease_ttl) is None:
            return False
        judged, seconds = await self._judge_fleet()
        now = self._clock()
        digest = assemble_digest(judged, seconds, period="sample", at=now)
        await self._store.add_fleet_sample(
            FleetSample(now, digest.sample()), keep_after=now - SAMPLE_RETENTION
        )
        return True

    async def _post(self, period: str, built: BuiltDigest) -> None:
        channel = self.settings.digest_channel()
        if self._poster is None or channel is None:
            raise RuntimeError("digest: no poster or no channel (digest.channel / slack.default_channel)")
        await self._poster.post_digest(channel, period, built.message, built.charts)
