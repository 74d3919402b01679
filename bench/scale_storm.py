"""The storm part of bench/scale.py: one storm of a given size against a fresh `proxybot serve` process.

The storm is bench/storm.py's (its bot, store view and Slack figures are reused, not copied): two
notifications per target, one alert then two, from a load generator process of its own. Every size is
sent at bench/storm.py's rate (1 000 webhooks in 2 s), so a bigger storm lasts longer: the webhook
latency stays comparable across sizes, and what grows with the size is the work. That work is read
three ways: wall time until every notification is processed, the part of it after the last webhook was
answered (the backlog the bot still had to work off), and the CPU seconds `serve` used from the first
webhook to the last notification processed (/proc/PID/stat; the digest worker processes are idle).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from bench.loadgen import LoadRun
from bench.procstat import cpu_seconds, peak_rss_mb, total_peak_rss_mb
from bench.storm import (
    PROCESSING_TIMEOUT,
    SECONDS,
    STORM_TITLE,
    TARGETS,
    Setup,
    first_post,
    p99_ms,
    running_bots,
    wait_for_none,
)
from sim.server import SimServer
from sim.slack_api import FakeSlack, SlackCall
from tests.e2e.stack import BOT_TOKEN, CHANNEL
from tests.e2e.storm_load import split, storm_bodies, storm_plan
from tests.harness.descendants import descendants

# Webhooks per second, as bench/storm.py sends its 1 000.
RATE = 2 * TARGETS / SECONDS
# After processing, how long to wait for the summary in Slack to count every alert.
SUMMARY_WAIT = 60.0


@dataclass(frozen=True)
class StormFigures:
    """One storm size: what was accepted, when it was processed, what `serve` used."""

    alerts: int
    targets: int
    webhooks: int
    send_seconds: float  # the schedule's length
    refused: int
    p99_ms: float
    answered_after: float
    processed_after: float | None
    summary_after: float | None  # the storm summary's first post
    summary_complete_after: float | None  # the summary in Slack counts every alert
    serve_cpu: float
    serve_peak_mb: float
    workers_peak_mb: float  # serve's child processes (the digest pool), their peaks summed
    lost: int
    missing_from_summary: int

    @property
    def backlog(self) -> float | None:
        """Seconds of processing left once the last webhook was answered."""
        return None if self.processed_after is None else max(0.0, self.processed_after - self.answered_after)

    @property
    def ok(self) -> bool:
        return (
            self.refused == 0
            and self.processed_after is not None
            and self.lost == 0
            and self.missing_from_summary == 0
        )


def storm_count(call: SlackCall) -> int | None:
    """The number of alerts a storm summary post or edit counts (None: not a storm summary)."""
    if call.method not in ("chat.postMessage", "chat.update") or call.params.get("thread_ts"):
        return None
    text = str(call.params.get("text", ""))
    if not text.startswith(STORM_TITLE + ": "):
        return None
    count = text.removeprefix(STORM_TITLE + ": ").split(" ", 1)[0]
    return int(count) if count.isdigit() else None


def complete_after(slack: FakeSlack, start: float, alerts: int, deadline: float) -> float | None:
    """Seconds from the start until a summary in Slack counted every alert (None: not by the deadline)."""
    while True:
        for call in list(slack.calls):
            if storm_count(call) == alerts:
                return call.at - start
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.2)


def storm_at(targets: int, sim: SimServer, workdir: Path) -> StormFigures:
    """A storm over `targets` targets (2 alerts each) against a fresh bot and fake Slack."""
    workdir.mkdir()
    bodies = storm_bodies(targets)
    seconds = len(bodies) / RATE
    with (
        FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack,
        running_bots(Setup(), sim, slack, workdir, None) as (bots, store),
    ):
        (bot,) = bots
        assert bot.pid is not None
        plan = storm_plan(bot.url, bodies, seconds=seconds, probe_path=None, timeout=60.0)
        with LoadRun(plan) as load:
            cpu_before = cpu_seconds(bot.pid)
            start = load.started()
            webhooks, _ = split(load.outcomes())
        answered = time.monotonic() - start
        processed = wait_for_none(store.unprocessed, start, PROCESSING_TIMEOUT)
        cpu = cpu_seconds(bot.pid) - cpu_before
        summary_done = complete_after(slack, start, 2 * targets, time.monotonic() + SUMMARY_WAIT)
        return StormFigures(
            alerts=2 * targets,
            targets=targets,
            webhooks=len(webhooks),
            send_seconds=seconds,
            refused=sum(1 for w in webhooks if not 200 <= w.status < 300),
            p99_ms=p99_ms(webhooks),
            answered_after=answered,
            processed_after=processed,
            summary_after=first_post(list(slack.calls), start, storm=True),
            summary_complete_after=summary_done,
            serve_cpu=cpu,
            serve_peak_mb=peak_rss_mb(bot.pid),
            workers_peak_mb=total_peak_rss_mb(p.pid for p in descendants(bot.pid)),
            lost=len(bodies) - (store.notifications() - store.unprocessed()),
            missing_from_summary=2 * targets - sum(len(a) for a in store.storm_entries().values()),
        )
