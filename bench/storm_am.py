"""The storm through a real Alertmanager 0.25: how long until every target is in Slack, in how many calls.

1 000 alerts over 500 targets are pushed to Alertmanager's API in one request (as Prometheus pushes what
its rules fire), grouped per (alertname, cluster, target) with `group_wait: 2s`, and delivered to one
`proxybot serve` on SQLite, which posts to the fake Slack paced at 1 post a second per channel. Times run
from the moment the push started (the alerts reaching Alertmanager; its 2 s group_wait is included) to
the moment every target had been named in what Slack shows: a message posted or edited, or the content of
a file shared. Posting calls are the posts, edits, the three steps of each upload and the deletes made by
then (refused ones count too); the calls made until the bot has settled are given as well.

Used by bench/storm.py; it borrows the e2e suite's stack and harness (tests/e2e, tests/harness).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sim.server import SimServer
from sim.slack_api import FakeSlack
from tests.e2e.stack import BOT_TOKEN, CHANNEL, WEBHOOK_TOKEN, BotProcess, StoreView, write_bot_config
from tests.e2e.storm_load import SlackCoverage, by_method, posting_calls, storm_alerts, storm_target
from tests.harness.alertmanager import Alertmanager, Route

ROUTE = Route(group_by=("alertname", "cluster", "target"), group_wait="2s", group_interval="5m")
COVERAGE_TIMEOUT = 60.0
PROCESSING_TIMEOUT = 120.0
# After the outbox drained, how long to keep watching for later calls (none are due: nothing changes).
SETTLE_SECONDS = 5.0


@dataclass(frozen=True)
class AlertmanagerFigures:
    """What the storm through Alertmanager measured (seconds from the alerts reaching Alertmanager)."""

    targets: int
    alerts: int
    push_seconds: float
    notifications: int
    first_webhook_after: float | None
    summary_after: float | None
    all_targets_after: float | None
    posting_calls: int
    calls_by_method: str
    posting_calls_settled: int
    settled_by_method: str
    lost: int

    @property
    def passed(self) -> bool:
        return self.all_targets_after is not None and self.lost == 0

    def report(self) -> None:
        def fmt(seconds: float | None) -> str:
            return "never" if seconds is None else f"{seconds:.2f} s"

        print(f"== through Alertmanager 0.25 (group_wait 2s): {self.alerts} alerts, {self.targets} targets")
        print(f"alerts pushed to Alertmanager in: {self.push_seconds:.2f} s (the clock starts before it)")
        print(f"notifications accepted by the bot: {self.notifications} (lost: {self.lost})")
        print(f"first webhook at the bot after: {fmt(self.first_webhook_after)}")
        print(f"storm summary in Slack after: {fmt(self.summary_after)}")
        from_webhook = (
            None
            if self.all_targets_after is None or self.first_webhook_after is None
            else self.all_targets_after - self.first_webhook_after
        )
        print(
            f"every target named in Slack after: {fmt(self.all_targets_after)} "
            f"({fmt(from_webhook)} after the first webhook)"
        )
        print(f"posting calls by then: {self.posting_calls} ({self.calls_by_method})")
        print(f"posting calls once settled: {self.posting_calls_settled} ({self.settled_by_method})")
        after = "never" if self.all_targets_after is None else f"{self.all_targets_after:.2f}"
        print(f"all_targets_in_slack_s: {after}")
        print(f"posting_calls: {self.posting_calls}")


def alertmanager_storm(sim: SimServer, workdir: Path, targets: int) -> AlertmanagerFigures:
    """One storm through a fresh Alertmanager, bot and fake Slack."""
    workdir.mkdir()
    (workdir / "alertmanager").mkdir()
    with (
        FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack,
        BotProcess(write_bot_config(sim, workdir, slack.api_url), workdir / "bot.log") as bot,
        Alertmanager(workdir / "alertmanager", f"{bot.url}/alertmanager", WEBHOOK_TOKEN, route=ROUTE) as am,
    ):
        slack.limit_posts()  # Slack's pace: 1 a second per channel, short bursts
        coverage = SlackCoverage(slack, (storm_target(i) for i in range(targets)))
        store = StoreView(workdir / "bot.db")
        alerts = storm_alerts(targets)
        wall, start = time.time(), time.monotonic()
        am.post_alerts(alerts)
        pushed = time.monotonic() - start
        _wait(lambda: coverage.covered_at is not None, COVERAGE_TIMEOUT)
        _wait(lambda: store.notifications() >= targets and store.unprocessed() == 0, PROCESSING_TIMEOUT)
        _wait(lambda: store.outbox_pending() == 0, PROCESSING_TIMEOUT)
        time.sleep(SETTLE_SECONDS)
        calls = list(slack.calls)
        first = store.first_received_at()
        notifications = store.notifications()
    covered = coverage.covered_at
    by_then = posting_calls(calls, covered) if covered is not None else []
    settled = posting_calls(calls)
    summary = next((c.at for c in calls if c.method == "chat.postMessage" and _is_summary(c.params)), None)
    return AlertmanagerFigures(
        targets=targets,
        alerts=len(alerts),
        push_seconds=pushed,
        notifications=notifications,
        first_webhook_after=None if first is None else first - wall,
        summary_after=None if summary is None else summary - start,
        all_targets_after=None if covered is None else covered - start,
        posting_calls=len(by_then),
        calls_by_method=by_method(by_then),
        posting_calls_settled=len(settled),
        settled_by_method=by_method(settled),
        lost=targets - notifications,
    )


def _is_summary(params: dict[str, object]) -> bool:
    return str(params.get("text", "")).startswith("🌩️ Alert storm") and not params.get("thread_ts")


def _wait(done: Callable[[], bool], timeout: float) -> bool:
    """Poll `done()` until true or `timeout` seconds; whether it came true (the figures say what did not)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(0.05)
    return False
