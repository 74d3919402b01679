"""Scheduling decisions as pure functions, one real AsyncIOScheduler run, no overlap, no double post."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar
from zoneinfo import ZoneInfo

import pytest
from apscheduler.triggers.cron import CronTrigger

from bot.delivery.worker import Delivery
from bot.digest import runner as runner_module
from bot.digest.runner import DigestRunner, DigestSources, chart_span
from bot.domain.alerts import AlertStatus
from bot.live import ClusterRead
from bot.render.blocks import Message
from bot.render.digest import ChartPng
from bot.render.terminal import show
from bot.store import AlertGroupState, OutboxKind, open_store
from bot.store.models import GroupFacts
from config.settings import DigestSettings, Settings
from handlers.digest import DigestScheduler, latest_fire, next_run, period_key, register, within_grace
from tests.fakes.alert_pipeline import NoSlack
from tests.waiting import eventually

BERLIN = ZoneInfo("Europe/Berlin")
T = TypeVar("T")
GV = "example.com/v1"


_TARGET = {"name": "p/x", "group_versions": [GV], "probe": {"group_version": GV, "resource": "things"}}
_CLUSTER = {"name": "a", "kubeconfig": "/nonexistent", "match": {"cluster": "a"}, "targets": [_TARGET]}
CONFIG = {"slack": {"default_channel": "#fleet"}, "clusters": [_CLUSTER]}


def settings() -> Settings:
    return Settings.model_validate(CONFIG)


# -- pure decisions ----------------------------------------------------------------------------------


def test_next_run_keeps_crons_weekdays_in_the_digest_time_zone() -> None:
    trigger = DigestSettings(cron="0 8 * * 1-5", timezone="Europe/Berlin").cron_trigger()
    saturday = datetime(2025, 3, 29, 12, 0, tzinfo=BERLIN)
    assert next_run(trigger, saturday) == datetime(2025, 3, 31, 8, 0, tzinfo=BERLIN)  # Monday, after DST
    sunday_cron = DigestSettings(cron="30 9 * * 0", timezone="Europe/Berlin").cron_trigger()
    assert next_run(sunday_cron, saturday) == datetime(2025, 3, 30, 9, 30, tzinfo=BERLIN)


def test_next_run_is_strictly_after_now() -> None:
    trigger = DigestSettings(cron="0 8 * * *", timezone="UTC").cron_trigger()
    at_eight = datetime(2025, 1, 1, 8, 0, tzinfo=ZoneInfo("UTC"))
    assert next_run(trigger, at_eight) == at_eight + timedelta(days=1)


def test_latest_fire_finds_the_run_a_late_job_stands_for() -> None:
    trigger = DigestSettings(cron="0 8 * * *", timezone="Europe/Berlin").cron_trigger()
    late = datetime(2025, 6, 2, 8, 40, tzinfo=BERLIN)
    assert latest_fire(trigger, late, 3600) == datetime(2025, 6, 2, 8, 0, tzinfo=BERLIN)
    assert latest_fire(trigger, late + timedelta(hours=2), 3600) is None


def test_misfire_grace_is_an_hour_not_a_second() -> None:
    scheduled = datetime(2025, 6, 2, 8, 0, tzinfo=BERLIN)
    assert within_grace(scheduled, scheduled + timedelta(minutes=59), 3600)
    assert not within_grace(scheduled, scheduled + timedelta(minutes=61), 3600)
    assert not within_grace(scheduled, scheduled - timedelta(seconds=1), 3600)


# 2025-10-26 in Berlin: at 01:00 UTC the clocks go back from 03:00+02:00 to 02:00+01:00.
FALL_BACK = datetime(2025, 10, 26, 0, 0, tzinfo=UTC)


def berlin_at(minutes_after_fall_back_midnight_utc: float) -> datetime:
    return (FALL_BACK + timedelta(minutes=minutes_after_fall_back_midnight_utc)).astimezone(BERLIN)


def bounded(call: Callable[[], T], seconds: float = 10.0) -> T:
    """`call()` on a daemon thread, failing the test when it does not return in `seconds` (a loop that
    never ends would hang the test instead; the thread is left to spin until the worker exits)."""
    answer: list[T] = []
    thread = threading.Thread(target=lambda: answer.append(call()), daemon=True)
    thread.start()
    thread.join(seconds)
    if not answer:
        pytest.fail(f"no answer in {seconds:g} s")
    return answer[0]


@pytest.mark.parametrize("cron", ["0 * * * *", "30 2 * * *", "*/15 * * * *"])
def test_the_hour_repeated_when_clocks_go_back_is_two_runs_each_found_in_its_own_hour(cron: str) -> None:
    trigger = DigestSettings(cron=cron, timezone="Europe/Berlin").cron_trigger()
    # 02:10+02:00; 02:10+01:00 an hour later; 02:40+01:00. APScheduler fires a cron time in the repeated
    # hour twice, once in each offset, and each run is a period of its own.
    times = berlin_at(10), berlin_at(70), berlin_at(100)
    assert [t.hour for t in times] == [2, 2, 2]
    expected = {
        "0 * * * *": ["02:00:00+02:00", "02:00:00+01:00", "02:00:00+01:00"],
        "30 2 * * *": [None, "02:30:00+02:00", "02:30:00+01:00"],
        "*/15 * * * *": ["02:00:00+02:00", "02:00:00+01:00", "02:30:00+01:00"],
    }[cron]
    found = [bounded(lambda at=at: latest_fire(trigger, at, 3660)) for at in times]
    keys = [None if f is None else period_key(f) for f in found]
    assert keys == [None if e is None else f"2025-10-26T{e}" for e in expected]


def test_next_run_after_the_first_two_oclock_is_the_second_when_clocks_go_back() -> None:
    trigger = DigestSettings(cron="0 * * * *", timezone="Europe/Berlin").cron_trigger()
    fire = next_run(trigger, berlin_at(0))  # 02:00+02:00
    assert fire is not None
    assert period_key(fire) == "2025-10-26T02:00:00+01:00"
    assert fire.timestamp() - berlin_at(0).timestamp() == 3600


def test_misfire_grace_counts_real_seconds_across_the_repeated_hour() -> None:
    scheduled = berlin_at(0)  # 02:00+02:00
    assert not within_grace(scheduled, berlin_at(65), 3600)  # 02:05+01:00: 65 minutes late, not 5
    assert within_grace(scheduled, berlin_at(55), 3600)  # 02:55+02:00


def test_a_run_in_the_hour_skipped_when_clocks_go_forward_is_found_when_it_is_due_not_before() -> None:
    # 2025-03-30 in Berlin: at 01:00 UTC the clocks jump from 02:00+01:00 to 03:00+02:00. APScheduler
    # fires "30 2" at 02:30+01:00 (01:30 UTC, 03:30 on the clocks).
    trigger = DigestSettings(cron="30 2 * * *", timezone="Europe/Berlin").cron_trigger()
    spring = datetime(2025, 3, 30, 0, 0, tzinfo=UTC)
    before, after = [(spring + timedelta(minutes=m)).astimezone(BERLIN) for m in (70, 100)]
    assert (before.hour, before.minute, after.hour, after.minute) == (3, 10, 3, 40)
    # At 03:10 it is 20 minutes ahead: a catch-up at start must not post it early.
    assert bounded(lambda: latest_fire(trigger, before, 3660)) is None
    fire = bounded(lambda: latest_fire(trigger, after, 3660))
    assert fire is not None
    assert period_key(fire) == "2025-03-30T02:30:00+01:00"
    assert within_grace(fire, after, 3600)  # 10 minutes late
    assert not within_grace(fire, before, 3600)


def test_period_key_is_the_fire_time_in_the_time_zone() -> None:
    assert period_key(datetime(2025, 6, 2, 8, 0, tzinfo=BERLIN)) == "2025-06-02T08:00:00+02:00"


def test_chart_span_covers_the_time_since_the_last_digest_within_bounds() -> None:
    assert chart_span(None, 10_000.0) == 86400.0
    assert chart_span(0.0, 3 * 86400.0) == 3 * 86400.0
    assert chart_span(0.0, 60.0) == 3600.0
    assert chart_span(0.0, 30 * 86400.0) == 7 * 86400.0


# -- runs ----------------------------------------------------------------------------------------------


class RecordingPoster:
    """Records every digest posted; optionally slow, to overlap runs."""

    def __init__(self, delay: float = 0.0) -> None:
        self.posts: list[tuple[str, str, Message, int]] = []
        self.delay = delay
        self.active = self.peak = 0

    async def post_digest(
        self, channel: str, period: str, message: Message, charts: Sequence[ChartPng]
    ) -> None:
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await asyncio.sleep(self.delay)  # the fake's post takes this long
            self.posts.append((channel, period, message, len(charts)))
        finally:
            self.active -= 1


async def unreadable(cluster: str) -> ClusterRead:
    return ClusterRead(cluster, 0.0, None, None, f"cluster {cluster}: forbidden")


async def test_a_restart_does_not_post_a_period_twice(tmp_path: Path) -> None:
    poster = RecordingPoster()
    for _ in range(2):  # two lives of the bot on the same store file
        store = await open_store(f"sqlite:///{tmp_path / 'bot.db'}")
        runner = DigestRunner(settings(), store, DigestSources(unreadable), poster, clock=lambda: 1000.0)
        await runner.run_period("2025-06-02T08:00:00+02:00")
        await store.close()
    assert [p[1] for p in poster.posts] == ["2025-06-02T08:00:00+02:00"]
    assert poster.posts[0][0] == "#fleet"
    # One sample of a fleet nobody could read: no chart has a line, the digest says so in words.
    assert poster.posts[0][3] == 0
    said = show(poster.posts[0][2])
    assert "Healthy peers not charted: 0 readings in the last 24 h, a line needs two." in said
    assert "Failing requests not charted: 1 reading in the last 24 h, a rate needs two." in said


async def test_a_slow_digest_and_a_second_trigger_make_one_run(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'bot.db'}")
    poster = RecordingPoster(delay=0.2)
    runner = DigestRunner(settings(), store, DigestSources(unreadable), poster)
    done = await asyncio.gather(runner.run_period("p"), runner.run_period("p"))
    await store.close()
    assert sorted(done) == [False, True]
    assert len(poster.posts) == 1
    assert poster.peak == 1


async def test_two_replicas_on_one_store_post_a_period_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner_module, "CLAIM_POLL", 0.05)
    url = f"sqlite:///{tmp_path / 'bot.db'}"
    stores = [await open_store(url, owner="replica-a"), await open_store(url, owner="replica-b")]
    poster = RecordingPoster(delay=0.3)
    runners = [DigestRunner(settings(), s, DigestSources(unreadable), poster) for s in stores]
    try:
        done = await asyncio.gather(*(r.run_period("2026-12-01T08:00:00+01:00") for r in runners))
    finally:
        for store in stores:
            await store.close()
    assert sorted(done) == [False, True]
    assert len(poster.posts) == 1


async def test_a_period_whose_replica_died_while_building_is_posted_by_another(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bot.db'}"
    now = [1000.0]
    dead = await open_store(url, owner="dead-replica", clock=lambda: now[0])
    await dead.claim_digest("p", ttl=30)  # ... and then it was killed
    await dead.close()
    now[0] += 31
    store = await open_store(url, owner="replica-b", clock=lambda: now[0])
    poster = RecordingPoster()
    runner = DigestRunner(settings(), store, DigestSources(unreadable), poster, clock=lambda: now[0])
    try:
        assert await runner.run_period("p")
    finally:
        await store.close()
    assert [p[1] for p in poster.posts] == ["p"]


async def test_only_one_replica_takes_the_fleet_samples(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bot.db'}"
    stores = [await open_store(url, owner="replica-a"), await open_store(url, owner="replica-b")]
    runners = [DigestRunner(settings(), s, DigestSources(unreadable), None) for s in stores]
    try:
        sampled = [await r.sample(lease_ttl=2700.0) for r in runners * 2]
        samples = await stores[0].fleet_samples(since=0.0)
    finally:
        for store in stores:
            await store.close()
    assert sampled == [True, False, True, False]
    assert len(samples) == 2


async def test_the_next_digest_compares_with_the_last_posted_one(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'bot.db'}", clock=lambda: 5000.0)
    runner = DigestRunner(
        settings(), store, DigestSources(unreadable), RecordingPoster(), clock=lambda: 5000.0
    )
    await runner.run_period("first")
    second = await runner.collect("second")
    await store.close()
    assert second.previous_at == 5000.0
    assert second.changes == ()  # unreachable then, unreachable now


async def test_a_run_missed_while_down_is_caught_up_within_the_grace(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'bot.db'}")
    poster = RecordingPoster()
    fired_at = datetime(2025, 6, 2, 8, 0, tzinfo=BERLIN)
    clock = [(fired_at + timedelta(minutes=20)).timestamp()]
    runner = DigestRunner(settings(), store, DigestSources(unreadable), poster, clock=lambda: clock[0])
    trigger = DigestSettings(cron="0 8 * * *", timezone="Europe/Berlin").cron_trigger()
    schedule = DigestScheduler(runner, trigger, BERLIN, clock=lambda: clock[0])
    await schedule.catch_up()
    await schedule.catch_up()  # a second restart: already posted
    clock[0] = (fired_at + timedelta(hours=2)).timestamp()
    await schedule.catch_up()  # too late for the grace, and posted anyway
    await store.close()
    assert [p[1] for p in poster.posts] == [period_key(fired_at)]


async def test_each_scheduled_run_tells_its_outcome(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'bot.db'}")
    outcomes: list[str] = []

    class FailingPoster(RecordingPoster):
        async def post_digest(self, *args: object, **kwargs: object) -> None:
            raise RuntimeError("Slack is gone")

    fired_at = datetime(2025, 6, 2, 8, 0, tzinfo=BERLIN)
    clock = [fired_at.timestamp() + 5]
    trigger = CronTrigger(hour=8, minute=0, timezone=BERLIN)
    for poster, want in ((RecordingPoster(), ["posted", "skipped"]), (FailingPoster(), ["failed"])):
        runner = DigestRunner(settings(), store, DigestSources(unreadable), poster, clock=lambda: clock[0])
        schedule = DigestScheduler(runner, trigger, BERLIN, clock=lambda: clock[0])
        schedule.observe = outcomes.append
        for _ in want:
            await schedule.fire()
        clock[0] += 86400.0  # the next day's period
    await store.close()
    assert outcomes == ["posted", "skipped", "failed"]


async def test_the_real_scheduler_fires_and_never_overlaps(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'bot.db'}")
    poster = RecordingPoster(delay=1.5)  # slower than the per-second trigger
    runner = DigestRunner(settings(), store, DigestSources(unreadable), poster)
    schedule = DigestScheduler(runner, CronTrigger(second="*", timezone=BERLIN), BERLIN, sample_interval=None)
    task = asyncio.create_task(schedule.run())
    await eventually(lambda: len(poster.posts) >= 2, "two digests posted", timeout=60, interval=0.05)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await store.close()
    assert poster.peak == 1
    periods = [p[1] for p in poster.posts]
    assert len(set(periods)) == len(periods)


def _catch_up_schedule(
    runner: DigestRunner, clock: list[float], catch_up: bool | int | str
) -> DigestScheduler:
    digest = DigestSettings(cron="0 8 * * *", timezone="Europe/Berlin", catch_up=catch_up)
    zone = ZoneInfo(digest.timezone)
    return DigestScheduler(
        runner, digest.cron_trigger(), zone, catch_up=digest.catch_up_seconds, clock=lambda: clock[0]
    )


async def test_catch_up_can_be_turned_off_or_given_its_own_grace(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'bot.db'}")
    poster = RecordingPoster()
    fired_at = datetime(2025, 6, 2, 8, 0, tzinfo=BERLIN)
    clock = [(fired_at + timedelta(minutes=20)).timestamp()]
    runner = DigestRunner(settings(), store, DigestSources(unreadable), poster, clock=lambda: clock[0])
    await _catch_up_schedule(runner, clock, False).catch_up()  # off: 20 minutes late is not posted
    assert poster.posts == []
    clock[0] = (fired_at + timedelta(minutes=100)).timestamp()
    await _catch_up_schedule(runner, clock, True).catch_up()  # the default hour is over
    assert poster.posts == []
    await _catch_up_schedule(runner, clock, 90).catch_up()  # 90 minutes: 100 late is too late
    assert poster.posts == []
    await _catch_up_schedule(runner, clock, "120").catch_up()  # as `${VAR}` gives it: within 120
    await store.close()
    assert [p[1] for p in poster.posts] == [period_key(fired_at)]


@pytest.mark.parametrize("value", [0, -5, 1.5, "soon", None, 10_081])
def test_catch_up_is_true_false_or_minutes(value: object) -> None:
    with pytest.raises(ValueError, match=r"must be true, false or a number of minutes from 1 to 10080"):
        DigestSettings(catch_up=value)
    assert DigestSettings().catch_up_seconds == 3600
    assert DigestSettings(catch_up=False).catch_up_seconds is None
    assert DigestSettings(catch_up=15).catch_up_seconds == 900


@pytest.mark.parametrize(("catch_up", "posted"), [(True, 1), (False, 0)])
async def test_serve_catches_up_as_digest_catch_up_says(tmp_path: Path, catch_up: bool, posted: int) -> None:
    # Every minute: a run fired within the last minute, whenever the test runs.
    data = {**CONFIG, "digest": {"cron": "* * * * *", "catch_up": catch_up}}
    store = await open_store(f"sqlite:///{tmp_path / 'bot.db'}")
    try:
        schedule = register(Settings.model_validate(data), store, Delivery(store, NoSlack()), unreadable)
        await schedule.catch_up()
        queued = await store.due(time.time() + 86_400, limit=10)
    finally:
        await store.close()
    assert len([item for item in queued if item.kind is OutboxKind.POST]) == posted


async def test_the_digest_serve_posts_links_each_alert_firing_now_to_its_message(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'bot.db'}")

    async def workspace() -> str:
        return "https://acme.slack.com/"

    try:
        labels = {"alertname": "ResourceProxyNoHealthyPeers", "target": "p/x"}
        alert = AlertGroupState(
            "#alerts",
            '{}:{alertname="x"}',
            AlertStatus.FIRING,
            first_firing_at=time.time() - 600,
            facts=GroupFacts(firing_labels=(labels,)),
        )
        await store.save_group(alert)
        await store.record_post("#alerts", alert.group_key, "1700000000.000100", "C0ALERTS")
        delivery = Delivery(store, NoSlack())
        schedule = register(settings(), store, delivery, unreadable, workspace=workspace)
        built = await schedule.runner.post_now()
        [queued] = [item for item in await store.due(time.time() + 60) if item.kind is OutboxKind.POST]
    finally:
        await store.close()
    assert [a.name for a in built.digest.firing] == ["ResourceProxyNoHealthyPeers"]
    link = "<https://acme.slack.com/archives/C0ALERTS/p1700000000000100|ResourceProxyNoHealthyPeers>"
    assert link in json.dumps(queued.payload, ensure_ascii=False)
