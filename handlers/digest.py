"""The scheduled fleet digest: APScheduler's `AsyncIOScheduler` for the app's lifetime (`bot.digest.runner`).

Scheduling decisions (all pure functions here, tested without a scheduler):
- The job fires on `digest.cron` in `digest.timezone` (`settings.digest.cron_trigger()`, cron's weekdays).
- Late still goes out: `misfire_grace_time` is an hour, `coalesce=True` (several missed runs become one).
  APScheduler's default grace of one second would silently drop a digest whose loop was busy.
- A run missed while proxybot was down is caught up at start when its fire time is within
  `digest.catch_up` (`true`: the same hour; a number of minutes; `false`: never, the next run is the next
  cron time), so a restart soon after the cron time posts that run's digest then.
- Never overlapping: `max_instances=1` for the job, and a lock around every run (the job, the catch-up and
  on-demand digests share it).
- Never twice: each scheduled run has a period key, its fire time in the digest's time zone. The store
  records the period before posting (`claim_digest`) and as posted afterwards (`finish_digest`); a period
  already posted is skipped. Posting goes through the outbox keyed `digest:<period>`, so a crash between
  the post and the record re-enqueues a duplicate, which the outbox ignores.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger

from bot.delivery.worker import Delivery
from bot.digest.firing import WorkspaceUrl
from bot.digest.fleet import CronJobSource, ReadCluster, TriageSource
from bot.digest.history import RangeQueries
from bot.digest.runner import DigestRunner, DigestSources, OutboxPoster
from bot.domain.fleet import FleetHealth
from bot.live import MetricsSource
from bot.ports import Clock, SilenceList
from bot.store import Store
from config.settings import CATCH_UP_DEFAULT_MINUTES, Settings

log = logging.getLogger(__name__)

JOB_ID = "proxybot-digest"
MISFIRE_GRACE_SECONDS = CATCH_UP_DEFAULT_MINUTES * 60  # `digest.catch_up: true` is the same hour
SAMPLE_INTERVAL = 1800.0


# -- scheduling decisions --------------------------------------------------------------------------------


# Times here are aware datetimes in the digest's zone, and Python adds to, subtracts and compares two of
# them in one zone by their wall clocks, ignoring `fold`: in the hour repeated when clocks go back,
# 02:00+01:00 would be "equal" to 02:00+02:00 and one second past it would be the first 02:00:01 again
# (latest_fire looped forever there, freezing the event loop). So every step below is on real instants.


def shifted(at: datetime, seconds: float) -> datetime:
    """`at` moved by `seconds` of real time, shown in `at`'s zone."""
    return (at.astimezone(UTC) + timedelta(seconds=seconds)).astimezone(at.tzinfo)


def next_run(trigger: BaseTrigger, now: datetime) -> datetime | None:
    """When the trigger fires next, strictly after `now` (aware, in the trigger's time zone)."""
    fire: datetime | None = trigger.get_next_fire_time(None, shifted(now, 1e-6))
    return fire


def latest_fire(trigger: BaseTrigger, now: datetime, lookback: float) -> datetime | None:
    """The last fire time in `(now - lookback, now]`, or None when the trigger did not fire in it."""
    fire: datetime | None = trigger.get_next_fire_time(None, shifted(now, -lookback))
    found = None
    while fire is not None and fire.timestamp() <= now.timestamp():
        found = fire
        fire = next_run(trigger, fire)
    return found


def within_grace(scheduled: datetime, now: datetime, grace: float) -> bool:
    """Whether a run scheduled at `scheduled` still goes out at `now` (APScheduler's misfire rule)."""
    late = now.timestamp() - scheduled.timestamp()
    return 0 <= late <= grace


def period_key(fire: datetime) -> str:
    """The period a scheduled run stands for: its fire time, in the digest's time zone."""
    return fire.isoformat(timespec="seconds")


# -- the scheduler ---------------------------------------------------------------------------------------


class DigestScheduler:
    """Runs `runner` on the trigger inside an `AsyncIOScheduler`, for as long as `run()` is not cancelled."""

    def __init__(
        self,
        runner: DigestRunner,
        trigger: BaseTrigger,
        timezone: ZoneInfo,
        *,
        grace: int = MISFIRE_GRACE_SECONDS,
        catch_up: float | None = MISFIRE_GRACE_SECONDS,
        sample_interval: float | None = SAMPLE_INTERVAL,
        enabled: bool = True,
        clock: Clock = time.time,
    ) -> None:
        self.runner = runner
        # Told each scheduled run's outcome (posted, skipped, failed): the bot's /metrics counts them.
        self.observe: Callable[[str], None] = lambda outcome: None
        self._enabled = enabled
        self._trigger = trigger
        self._timezone = timezone
        self._grace = grace
        self._catch_up = catch_up  # seconds a missed run may be late at start; None: never caught up
        self._sample_interval = sample_interval
        self._clock = clock

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), self._timezone)

    async def fire(self) -> None:
        """The job: the digest of the latest fire time (a late run keeps its own period)."""
        now = self._now()
        await self._run(latest_fire(self._trigger, now, self._grace + 60) or now)

    async def _run(self, scheduled: datetime) -> None:
        try:
            posted = await self.runner.run_period(period_key(scheduled))
        except Exception:  # one failed digest must not stop the schedule; the next period tries again
            log.exception("digest %s failed", period_key(scheduled))
            self.observe("failed")
            return
        self.observe("posted" if posted else "skipped")

    async def catch_up(self) -> None:
        """At start: post the run missed while proxybot was down, when `digest.catch_up` allows it."""
        if self._catch_up is None:
            return
        now = self._now()
        missed = latest_fire(self._trigger, now, self._catch_up)
        if missed is not None and within_grace(missed, now, self._catch_up):
            log.info("digest: posting the run of %s, missed while down", period_key(missed))
            await self._run(missed)

    def add_job(self, scheduler: AsyncIOScheduler) -> None:
        scheduler.add_job(
            self.fire,
            trigger=self._trigger,
            id=JOB_ID,
            coalesce=True,
            misfire_grace_time=self._grace,
            max_instances=1,
            replace_existing=True,
        )

    async def run(self) -> None:
        """The app worker: the scheduler in the running loop and sampling between digests, until cancelled."""
        if not self._enabled:
            await self._sample_forever()
            return
        scheduler = AsyncIOScheduler(timezone=self._timezone)
        self.add_job(scheduler)
        scheduler.start()
        try:
            await self.catch_up()
            await self._sample_forever()
        finally:
            scheduler.shutdown(wait=False)

    async def _sample_forever(self) -> None:
        if self._sample_interval is None:
            await asyncio.Event().wait()
            return
        while True:
            await asyncio.sleep(self._sample_interval)
            try:
                # The lease outlives one interval: its holder keeps it, another takes over if it dies.
                await self.runner.sample(lease_ttl=self._sample_interval * 1.5)
            except Exception:  # a failed sample leaves a gap in a chart, nothing worse
                log.exception("digest: fleet sample failed")


def register(
    settings: Settings,
    store: Store,
    delivery: Delivery,
    read: ReadCluster,
    *,
    cronjobs: CronJobSource | None = None,
    prometheus: RangeQueries | None = None,
    pages: Mapping[str, MetricsSource] | None = None,
    executor: Executor | None = None,
    triage: TriageSource | None = None,
    workspace: WorkspaceUrl | None = None,
    silences: SilenceList | None = None,
    fleet: Callable[[], FleetHealth | None] = lambda: None,
    clock: Clock = time.time,
    pacing: Clock | None = None,
) -> DigestScheduler:
    """The digest for `serve`: `.run` is the app worker, `.runner.post_now()` answers `/proxy digest`.

    With `pages` (each client cluster's metrics reader) and `executor` (a `bot.digest.pool` pool), pages are
    parsed and judged in worker processes, so a big fleet is not judged on the bot's one interpreter lock.
    With `triage`, each target gets its quick-triage verdict and the digest the proxy objects and versions.
    With `workspace` (Slack's workspace URL), the alerts firing now link to their messages; with `silences`
    (the silence watch), the on-call figures list the silences active now. `clock` tells the time the
    digest shows and names its period by; `pacing` (default: `clock`) times its wait for another replica.
    """
    sources = DigestSources(read, cronjobs, prometheus, pages, executor, triage, workspace, silences, fleet)
    runner = DigestRunner(settings, store, sources, OutboxPoster(delivery), clock=clock, pacing=pacing)
    zone = ZoneInfo(settings.digest.timezone)
    return DigestScheduler(
        runner,
        settings.digest.cron_trigger(),
        zone,
        catch_up=settings.digest.catch_up_seconds,
        enabled=settings.digest.enabled,
    )
