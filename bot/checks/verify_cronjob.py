"""`verify`'s probe CronJob lines: the guide's `proxy-probe` CronJob exists in the client's control-plane
namespace, runs on schedule and succeeds (Kubernetes API), and its `kube_cronjob_created` series is visible.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.triggers.cron import CronTrigger

from bot.clients.prometheus import PrometheusClient, selector
from bot.domain.paths import ApiPath
from bot.domain.verify_result import Outcome, VerifyLine, skipped_line, unreachable_line
from bot.errors import ClusterError, InputError, UpstreamError
from bot.reads.context import CheckContext
from config.clusters import ClusterSettings
from config.names import dns1123_label

PROBE_CRONJOB = "proxy-probe"
PROBE_SUCCESS_MAX_AGE = 900.0  # the guide's ResourceProxyProbeFailing threshold
MISSED_INTERVALS = 3
DEFAULT_INTERVAL = 300.0  # the guide's `*/5 * * * *`
_CRONJOB = "/apis/batch/v1/namespaces/{namespace}/cronjobs/" + PROBE_CRONJOB
# The shipped ClusterRole that a RoleBinding grants in each client's control-plane namespace.
CONTROL_PLANE_ROLE = "proxybot-control-plane-client"


def cronjob_grant_fix(namespace: str) -> str:
    """The grant `verify` needs as the shipped control-plane RBAC gives it: one CronJob, one namespace."""
    return (
        f"give the bot `get` on the CronJob {PROBE_CRONJOB} in {namespace} (cronjobs.batch, resourceNames: "
        f"[{PROBE_CRONJOB}]): a RoleBinding in {namespace} to the ClusterRole {CONTROL_PLANE_ROLE} of "
        "config/deploy/base/rbac-control-plane.yaml"
    )


def cronjob_path(namespace: str) -> ApiPath:
    """The probe CronJob of one control-plane namespace (a DNS-1123 label)."""
    try:
        return ApiPath(_CRONJOB.format(namespace=dns1123_label(namespace)))
    except ValueError as err:
        raise InputError(f"namespace: {err}") from None


async def cronjob_line(ctx: CheckContext, cluster: ClusterSettings) -> VerifyLine:
    access = cluster.control_plane
    if access is None:
        fix = f"add `control_plane` (kubeconfig, namespace) to cluster {cluster.name} in the config"
        return VerifyLine(
            "probe-cronjob",
            cluster.name,
            Outcome.NOT_CHECKED,
            "skipped: no control_plane configured",
            (),
            fix,
        )
    namespace = cluster.control_plane_namespace
    try:
        reader = await ctx.control_plane(cluster.name, access)
        response = await reader.get(cronjob_path(namespace), timeout=ctx.timeout)
    except ClusterError as err:
        fix = (
            f"fix the control_plane kubeconfig of cluster {cluster.name}"
            if err.kind == "bad_config"
            else "make the control plane cluster's API reachable from the bot"
        )
        return VerifyLine(
            "probe-cronjob", cluster.name, Outcome.FAIL, "could not read the CronJob", (str(err),), fix
        )
    if response.status == 404:
        fix = (
            f"deploy the guide's proxy-probe ConfigMap and CronJob into {namespace} on the control plane "
            "cluster (e.g. through experimental.deploy.host.manifests in the client's vcluster.yaml)"
        )
        return VerifyLine(
            "probe-cronjob", cluster.name, Outcome.FAIL, f"no CronJob {PROBE_CRONJOB} in {namespace}", (), fix
        )
    if response.status != 200:
        fixes = {
            403: cronjob_grant_fix(namespace),
            401: "the control_plane kubeconfig's credentials were rejected: refresh the token or certificate",
        }
        return VerifyLine(
            "probe-cronjob",
            cluster.name,
            Outcome.FAIL,
            f"reading the CronJob answered HTTP {response.status}",
            (),
            fixes.get(response.status),
        )
    return judge_cronjob(cluster.name, namespace, json_object(response.body), ctx.wall())


def json_object(body: bytes) -> Mapping[str, Any]:
    """A Kubernetes API answer as a JSON object; anything else (not JSON, not an object) is empty."""
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, Mapping) else {}


def _timestamp(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def schedule_interval(schedule: str, now: float) -> float | None:
    """Seconds between the next two runs of a cron schedule; None when it does not parse."""
    try:
        trigger = CronTrigger.from_crontab(schedule, timezone=UTC)
    except ValueError:
        return None
    first = trigger.get_next_fire_time(None, datetime.fromtimestamp(now, UTC))
    second = trigger.get_next_fire_time(first, first + timedelta(seconds=1)) if first else None
    return (second - first).total_seconds() if first and second else None


def judge_cronjob(cluster: str, namespace: str, cronjob: Mapping[str, Any], now: float) -> VerifyLine:
    """Pass when not suspended, scheduled within three intervals and successful within 900 s."""
    spec, status = cronjob.get("spec") or {}, cronjob.get("status") or {}
    schedule = str(spec.get("schedule", ""))
    interval = schedule_interval(schedule, now) or DEFAULT_INTERVAL
    scheduled, succeeded = (
        _timestamp(status.get("lastScheduleTime")),
        _timestamp(status.get("lastSuccessfulTime")),
    )
    evidence = (
        f"schedule {schedule!r} (every {interval:g} s), suspended: {bool(spec.get('suspend'))}",
        f"last scheduled: {_age(scheduled, now)}",
        f"last succeeded: {_age(succeeded, now)}",
    )
    problems = []
    if spec.get("suspend"):
        problems.append("the CronJob is suspended")
    if scheduled is None or now - scheduled > MISSED_INTERVALS * interval:
        problems.append(f"not scheduled within {MISSED_INTERVALS} intervals")
    if succeeded is None or now - succeeded > PROBE_SUCCESS_MAX_AGE:
        problems.append(f"no successful run within {PROBE_SUCCESS_MAX_AGE:g} s")
    if problems:
        fix = (
            f"look at the probe's Jobs and their logs (`kubectl get jobs,pods -n {namespace}`): a missing "
            "vc-<release>-proxy-probe kubeconfig secret, a wrong Service address, or a failing proxied "
            "request"
        )
        return VerifyLine("probe-cronjob", cluster, Outcome.FAIL, "; ".join(problems), evidence, fix)
    return VerifyLine("probe-cronjob", cluster, Outcome.PASS, "the probe runs and succeeds", evidence)


def _age(at: float | None, now: float) -> str:
    return "never" if at is None else f"{max(0.0, now - at):.0f} s ago"


async def cronjob_series_line(
    prometheus: PrometheusClient | None, cluster: ClusterSettings, timeout: float
) -> VerifyLine:
    if prometheus is None:
        return skipped_line("probe-series", cluster.name, "kube_cronjob_created not checked")
    namespace = cluster.control_plane_namespace
    expr = selector("kube_cronjob_created", {"namespace": namespace, "cronjob": PROBE_CRONJOB})
    try:
        found = await prometheus.query(expr, timeout=timeout)
    except UpstreamError as err:
        return unreachable_line("probe-series", cluster.name, err)
    if not found:
        fix = (
            "kube-state-metrics on the control plane cluster must expose CronJobs (its `cronjobs` collector) "
            "and be scraped: without the series ResourceProxyProbeFailing cannot evaluate"
        )
        return VerifyLine(
            "probe-series", cluster.name, Outcome.FAIL, f"{expr} is absent in Prometheus", (), fix
        )
    return VerifyLine(
        "probe-series", cluster.name, Outcome.PASS, f"{expr} is visible", (f"{len(found)} series",)
    )
