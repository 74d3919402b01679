"""`verify`'s probe CronJob judgement (freshness within three intervals and 900 s, suspension, schedules)
and the grant its fix asks for, against the shipped control-plane RBAC."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from bot.checks.verify_cronjob import (
    CONTROL_PLANE_ROLE,
    PROBE_CRONJOB,
    cronjob_grant_fix,
    cronjob_line,
    judge_cronjob,
    schedule_interval,
)
from bot.domain.verify_result import Outcome, VerifyLine
from bot.reads.context import CheckContext
from config.settings import Settings
from tests.fakes.http_server import LocalServer, Request

NOW = 1_800_000_000.0
GV = "example.com/v1"
RBAC = Path(__file__).resolve().parents[3] / "config" / "deploy" / "base" / "rbac-control-plane.yaml"


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


def _control_plane_rule() -> dict[str, Any]:
    docs = yaml.safe_load_all(RBAC.read_text())
    (role,) = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == CONTROL_PLANE_ROLE]
    (rule,) = [r for r in role["rules"] if "cronjobs" in r["resources"]]
    return dict(rule)


def test_the_grant_fix_is_the_shipped_rule() -> None:
    rule = _control_plane_rule()
    assert (rule["apiGroups"], rule["resourceNames"], rule["verbs"]) == (["batch"], [PROBE_CRONJOB], ["get"])
    fix = cronjob_grant_fix("vcluster-team-a")
    assert f"`get` on the CronJob {PROBE_CRONJOB} in vcluster-team-a" in fix
    assert f"resourceNames: [{PROBE_CRONJOB}]" in fix
    assert f"ClusterRole {CONTROL_PLANE_ROLE} of config/deploy/base/rbac-control-plane.yaml" in fix


def _kubeconfig(path: Path, server: str) -> Path:
    user = {"name": "bot", "user": {"token": "control-plane-token"}}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cp", "cluster": {"server": server}}],
        "users": [user],
        "contexts": [{"name": "cp", "context": {"cluster": "cp", "user": "bot"}}],
        "current-context": "cp",
    }
    path.write_text(yaml.safe_dump(config))
    return path


async def _line_answered(tmp_path: Path, status: int) -> VerifyLine:
    def forbid(request: Request) -> tuple[int, Any]:
        return status, {"kind": "Status", "code": status}

    with LocalServer(forbid) as server:
        cluster = {
            "name": "team-a",
            "kubeconfig": str(tmp_path / "unused.yaml"),
            "match": {"cluster": "team-a"},
            "control_plane": {"kubeconfig": str(_kubeconfig(tmp_path / "cp.yaml", server.url))},
            "targets": [
                {"name": "p/t", "group_versions": [GV], "probe": {"group_version": GV, "resource": "xs"}}
            ],
        }
        settings = Settings.model_validate({"slack": {"default_channel": "#a"}, "clusters": [cluster]})
        ctx = CheckContext(settings, timeout=5)
        try:
            line = await cronjob_line(ctx, settings.clusters[0])
        finally:
            await ctx.aclose()
    assert [r.path for r in server.requests] == [
        f"/apis/batch/v1/namespaces/vcluster-team-a/cronjobs/{PROBE_CRONJOB}"
    ]
    return line


async def test_a_forbidden_cronjob_read_asks_for_exactly_the_shipped_grant(tmp_path: Path) -> None:
    forbidden = await _line_answered(tmp_path, 403)
    assert forbidden.outcome is Outcome.FAIL
    assert forbidden.summary == "reading the CronJob answered HTTP 403"
    assert forbidden.fix == cronjob_grant_fix("vcluster-team-a")
    rejected = await _line_answered(tmp_path, 401)
    assert rejected.fix is not None
    assert "credentials were rejected" in rejected.fix
