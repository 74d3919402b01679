"""`verify`'s probe CronJob judgement: freshness within three intervals and 900 s, suspension, schedules."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.checks.verify_cronjob import judge_cronjob, schedule_interval
from bot.checks.verify_lines import Outcome

NOW = 1_800_000_000.0


def _cronjob(schedule: str = "*/5 * * * *", suspend: bool = False, **status: str) -> dict[str, Any]:
    return {"spec": {"schedule": schedule, "suspend": suspend}, "status": status}


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def test_cronjob_freshness_rules() -> None:
    fresh = _cronjob(lastScheduleTime=_iso(NOW - 100), lastSuccessfulTime=_iso(NOW - 100))
    assert judge_cronjob("team-a", "vcluster-team-a", fresh, NOW).outcome is Outcome.PASS
    stale = _cronjob(lastScheduleTime=_iso(NOW - 1000), lastSuccessfulTime=_iso(NOW - 1000))
    line = judge_cronjob("team-a", "vcluster-team-a", stale, NOW)
    assert line.summary == "not scheduled within 3 intervals; no successful run within 900 s"
    suspended = _cronjob(suspend=True, lastScheduleTime=_iso(NOW), lastSuccessfulTime=_iso(NOW))
    assert judge_cronjob("team-a", "vcluster-team-a", suspended, NOW).summary == "the CronJob is suspended"
    hourly = _cronjob("0 * * * *", lastScheduleTime=_iso(NOW - 3000), lastSuccessfulTime=_iso(NOW - 300))
    assert judge_cronjob("team-a", "vcluster-team-a", hourly, NOW).outcome is Outcome.PASS


def test_schedule_interval() -> None:
    assert schedule_interval("*/5 * * * *", NOW) == 300
    assert schedule_interval("0 3 * * *", NOW) == 86_400
    assert schedule_interval("not a schedule", NOW) is None
