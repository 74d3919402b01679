"""`verify`: the guide's "Verify the monitoring works", one pass/fail line per piece, each with its fix.

Lines, per configured client cluster unless noted:
- `scrape`: Prometheus scrapes the client's `/metrics/syncer` and `up == 1`. The scrape is identified by
  the cluster's `match` labels (the labels its alerts carry, so they must be on the scrape): an active
  target whose labels include all of them and that scrapes `/metrics/syncer` or belongs to a job named
  like the guide's `up{job=~".*vcluster.*"}`. Every such target (HA replicas) must be up.
- `rules` (once): the seven `ResourceProxy*` alert rules are loaded and healthy.
- `probe-cronjob`: the `proxy-probe` CronJob exists in the client's control-plane namespace, is not
  suspended, was scheduled within three intervals and succeeded within 900 s (Kubernetes API).
- `probe-series`: `kube_cronjob_created` for that CronJob is visible in Prometheus.
- `syncer`: `/metrics/syncer` is readable with the bot's own credentials and carries `vcluster_proxy_peers`.

A line that cannot be checked (no `prometheus.url`, no `control_plane`) is *not checked*, never a pass:
monitoring that was not verified is not verified, so the overall result passes only when every line passes
(the CLI exits 1 otherwise, and says which lines were skipped and why).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

from apscheduler.triggers.cron import CronTrigger

from bot.checks.context import CheckContext
from bot.clients.prometheus import PrometheusClient, RuleGroup, Sample, ScrapeTarget, selector
from bot.domain.alerts_catalog import (
    DISCOVERY_DEGRADED,
    NO_HEALTHY_PEERS,
    PEER_CACHE_UNSYNCED,
    PEER_CHURN,
    PROBE_FAILING,
    TARGET_UNAVAILABLE,
    WATCHES_SILENT,
)
from bot.domain.parser import parse_syncer
from bot.domain.paths import SYNCER_METRICS, ApiPath
from bot.domain.snapshot import PEERS
from bot.errors import ClusterError, InputError, MetricsParseError, UpstreamError
from config.settings import ClusterSettings, Settings
from config.validation import dns1123_label

GUIDE_ALERTS = (
    NO_HEALTHY_PEERS,
    PEER_CACHE_UNSYNCED,
    TARGET_UNAVAILABLE,
    PEER_CHURN,
    DISCOVERY_DEGRADED,
    WATCHES_SILENT,
    PROBE_FAILING,
)
PROBE_CRONJOB = "proxy-probe"
PROBE_SUCCESS_MAX_AGE = 900.0  # the guide's ResourceProxyProbeFailing threshold
MISSED_INTERVALS = 3
DEFAULT_INTERVAL = 300.0  # the guide's `*/5 * * * *`
_CRONJOB = "/apis/batch/v1/namespaces/{namespace}/cronjobs/" + PROBE_CRONJOB
_VCLUSTER_JOB = "vcluster"
CLUSTER_ROLE_FIX = (
    "grant the bot's identity `get` on the non-resource URL /metrics/syncer in the tenant cluster: the "
    "guide's ClusterRole `metrics-syncer-reader` (nonResourceURLs: [/metrics/syncer], verbs: [get]) and a "
    "ClusterRoleBinding to the bot's ServiceAccount"
)
Progress = Callable[[str], None]


class Outcome(StrEnum):
    PASS = "pass"  # noqa: S105 (an outcome, not a password)
    FAIL = "fail"
    NOT_CHECKED = "not checked"


@dataclass(frozen=True, slots=True)
class VerifyLine:
    """One verified piece: what, for which cluster, the outcome, the evidence and the fix."""

    key: str
    cluster: str | None
    outcome: Outcome
    summary: str
    evidence: tuple[str, ...] = ()
    fix: str | None = None


@dataclass(frozen=True)
class VerifyResult:
    """Every line of one `verify` run."""

    lines: tuple[VerifyLine, ...]

    @property
    def outcome(self) -> Outcome:
        outcomes = {line.outcome for line in self.lines}
        if Outcome.FAIL in outcomes:
            return Outcome.FAIL
        return Outcome.NOT_CHECKED if Outcome.NOT_CHECKED in outcomes else Outcome.PASS

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASS


class PrometheusApi(Protocol):
    """What `verify` needs of Prometheus (`PrometheusClient` is one)."""

    async def query(
        self, expr: str, *, at: float | None = None, timeout: float | None = None
    ) -> list[Sample]: ...

    async def rules(self, *, timeout: float | None = None) -> list[RuleGroup]: ...

    async def targets(self, *, timeout: float | None = None) -> list[ScrapeTarget]: ...


def open_prometheus(settings: Settings, timeout: float = 5.0) -> PrometheusClient | None:
    """A client for `prometheus.url`, or None when it is not configured.

    Built once and shared: by the bot (`bot.compose.open_clients`), and by the CLI once per run.
    """
    url = settings.prometheus.url
    return None if url is None else PrometheusClient(str(url), timeout=timeout)


def cronjob_path(namespace: str) -> ApiPath:
    """The probe CronJob of one control-plane namespace (a DNS-1123 label)."""
    try:
        return ApiPath(_CRONJOB.format(namespace=dns1123_label(namespace)))
    except ValueError as err:
        raise InputError(f"namespace: {err}") from None


async def check_verify(
    ctx: CheckContext,
    prometheus: PrometheusApi | None,
    *,
    clusters: Sequence[ClusterSettings] | None = None,
    progress: Progress | None = None,
) -> VerifyResult:
    """Every line for `clusters` (default: all configured), Prometheus lines only with a client."""
    say = progress or (lambda _: None)
    chosen = ctx.settings.clusters if clusters is None else tuple(clusters)
    say("checking Prometheus rules…")
    lines = [await rules_line(prometheus, ctx.timeout)]
    for cluster in chosen:
        say(f"checking {cluster.name}…")
        lines += await asyncio.gather(
            scrape_line(prometheus, cluster, ctx.timeout),
            cronjob_line(ctx, cluster),
            cronjob_series_line(prometheus, cluster, ctx.timeout),
            syncer_line(ctx, cluster),
        )
    return VerifyResult(tuple(lines))


def _skipped(key: str, cluster: str | None, what: str) -> VerifyLine:
    fix = "set `prometheus.url` in the config to the Prometheus that scrapes the client tenant clusters"
    return VerifyLine(key, cluster, Outcome.NOT_CHECKED, f"skipped: no prometheus.url ({what})", (), fix)


def _unreachable(key: str, cluster: str | None, err: UpstreamError) -> VerifyLine:
    fix = "make Prometheus reachable from the bot (check `prometheus.url`, network policy, auth)"
    return VerifyLine(key, cluster, Outcome.FAIL, "Prometheus did not answer", (str(err),), fix)


# -- Prometheus: rules ---------------------------------------------------------------------------------


async def rules_line(prometheus: PrometheusApi | None, timeout: float) -> VerifyLine:
    if prometheus is None:
        return _skipped("rules", None, "rules not checked")
    try:
        groups = await prometheus.rules(timeout=timeout)
    except UpstreamError as err:
        return _unreachable("rules", None, err)
    return judge_rules(groups)


def judge_rules(groups: Sequence[RuleGroup]) -> VerifyLine:
    """Pass when every guide alert is loaded as an alerting rule and none is unhealthy."""
    loaded = {
        r.name: (g, r) for g in groups for r in g.rules if r.kind == "alerting" and r.name in GUIDE_ALERTS
    }
    missing = [name for name in GUIDE_ALERTS if name not in loaded]
    unhealthy = [
        f"{n}: {r.health} ({r.last_error or 'no error text'})"
        for n, (_, r) in loaded.items()
        if r.health != "ok"
    ]
    files = sorted({g.file for g, _ in loaded.values()})
    evidence = (
        f"loaded {len(loaded)} of {len(GUIDE_ALERTS)} guide alerts"
        + (f" from {', '.join(files)}" if files else ""),
    )
    if missing or unhealthy:
        problems = ([f"missing: {', '.join(missing)}"] if missing else []) + [
            f"unhealthy: {u}" for u in unhealthy
        ]
        fix = (
            "run `promtool check rules` on the shipped config/rules/proxy-alerts.yaml, add it to Prometheus' "
            "`rule_files` (or a PrometheusRule), reload, and confirm under Status > Rules"
        )
        return VerifyLine(
            "rules",
            None,
            Outcome.FAIL,
            "the guide's alert rules are not all loaded and healthy",
            evidence + tuple(problems),
            fix,
        )
    return VerifyLine(
        "rules", None, Outcome.PASS, "all seven ResourceProxy* alert rules are loaded and healthy", evidence
    )


# -- Prometheus: the scrape ----------------------------------------------------------------------------


def is_syncer_scrape(target: ScrapeTarget, match: Mapping[str, str]) -> bool:
    """A scrape of this cluster's proxy metrics: carries the `match` labels, scrapes the syncer path."""
    if any(target.labels.get(k) != v for k, v in match.items()):
        return False
    path = target.scrape_url.split("?", 1)[0]
    return path.endswith(SYNCER_METRICS) or _VCLUSTER_JOB in target.labels.get("job", "")


async def scrape_line(
    prometheus: PrometheusApi | None, cluster: ClusterSettings, timeout: float
) -> VerifyLine:
    if prometheus is None:
        return _skipped("scrape", cluster.name, "scrape not checked")
    try:
        targets = [t for t in await prometheus.targets(timeout=timeout) if is_syncer_scrape(t, cluster.match)]
        up = await prometheus.query(selector("up", cluster.match), timeout=timeout) if targets else []
    except UpstreamError as err:
        return _unreachable("scrape", cluster.name, err)
    return judge_scrape(cluster, targets, up)


def judge_scrape(
    cluster: ClusterSettings, targets: Sequence[ScrapeTarget], up: Sequence[Sample]
) -> VerifyLine:
    """Pass when at least one matching syncer scrape exists and every one of them has `up == 1`."""
    labels = ", ".join(f'{k}="{v}"' for k, v in sorted(cluster.match.items()))
    if not targets:
        fix = (
            f"scrape /metrics/syncer of {cluster.name} (controlPlane.serviceMonitor.enabled: true, or "
            f"your own job) and put the labels {{{labels}}} on it, so that the alerts name this cluster"
        )
        evidence = (f"no active scrape target of /metrics/syncer carries {{{labels}}}",)
        summary = "not scraped: an absent target is indistinguishable from a healthy proxy"
        return VerifyLine("scrape", cluster.name, Outcome.FAIL, summary, evidence, fix)
    values = {(s.labels.get("job"), s.labels.get("instance")): s.value for s in up}
    shown_targets: list[str] = []
    down: list[str] = []
    for t in targets:
        value = values.get((t.labels.get("job"), t.labels.get("instance")))
        shown = "absent" if value is None else f"{value:g}"
        shown_targets.append(f"{t.labels.get('job', '?')} {t.scrape_url}: up={shown}, health {t.health}")
        if value != 1.0:
            down.append(t.last_error or f"up={shown}")
    if down:
        fix = "fix the scrape: " + "; ".join(sorted(set(down)))[:500]
        summary = "scraped, but not every target is up"
        return VerifyLine("scrape", cluster.name, Outcome.FAIL, summary, tuple(shown_targets), fix)
    summary = f"scraped, up == 1 ({len(targets)} target(s))"
    return VerifyLine("scrape", cluster.name, Outcome.PASS, summary, tuple(shown_targets))


# -- the probe CronJob ---------------------------------------------------------------------------------


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
    namespace = access.namespace or f"vcluster-{cluster.name}"
    try:
        reader = await ctx.control_plane(cluster.name, access)
        response = await reader.get(cronjob_path(namespace), timeout=ctx.timeout)
    except ClusterError as err:
        fix = "give the bot read access (get on cronjobs.batch) to the control plane cluster"
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
        fix = "give the bot `get` on cronjobs.batch in the client's control-plane namespace"
        return VerifyLine(
            "probe-cronjob",
            cluster.name,
            Outcome.FAIL,
            f"reading the CronJob answered HTTP {response.status}",
            (),
            fix,
        )
    return judge_cronjob(cluster.name, namespace, _json(response.body), ctx.wall())


def _json(body: bytes) -> Mapping[str, Any]:
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
    prometheus: PrometheusApi | None, cluster: ClusterSettings, timeout: float
) -> VerifyLine:
    if prometheus is None:
        return _skipped("probe-series", cluster.name, "kube_cronjob_created not checked")
    namespace = (
        cluster.control_plane.namespace if cluster.control_plane else None
    ) or f"vcluster-{cluster.name}"
    expr = selector("kube_cronjob_created", {"namespace": namespace, "cronjob": PROBE_CRONJOB})
    try:
        found = await prometheus.query(expr, timeout=timeout)
    except UpstreamError as err:
        return _unreachable("probe-series", cluster.name, err)
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


# -- /metrics/syncer with the bot's credentials --------------------------------------------------------


_SYNCER_FIXES = {
    "not_found": "this vCluster is older than v0.37 (no /metrics/syncer): upgrade the client tenant cluster",
    "forbidden": CLUSTER_ROLE_FIX,
    "unauthorized": "the kubeconfig's credentials were rejected: refresh the token or certificate",
}


async def syncer_line(ctx: CheckContext, cluster: ClusterSettings) -> VerifyLine:
    try:
        reader = await ctx.client(cluster)
        text = await reader.syncer_metrics(timeout=ctx.timeout)
        snapshot = await asyncio.to_thread(parse_syncer, text)
    except ClusterError as err:
        fix = _SYNCER_FIXES.get(err.kind, "make the client tenant cluster's API reachable from the bot")
        summary = (
            "vCluster older than v0.37"
            if err.kind == "not_found"
            else f"/metrics/syncer is not readable ({err.kind})"
        )
        return VerifyLine("syncer", cluster.name, Outcome.FAIL, summary, (str(err),), fix)
    except MetricsParseError as err:
        return VerifyLine(
            "syncer", cluster.name, Outcome.FAIL, "/metrics/syncer is not parseable", (str(err),), None
        )
    peers = snapshot.series(PEERS)
    if not peers:
        fix = "enable the resource proxy for this client (without a proxy target there is no peer gauge)"
        return VerifyLine("syncer", cluster.name, Outcome.FAIL, f"readable, but carries no {PEERS}", (), fix)
    evidence = (f"{len(peers)} {PEERS} series for {', '.join(snapshot.targets())}",)
    return VerifyLine(
        "syncer",
        cluster.name,
        Outcome.PASS,
        f"readable with the bot's credentials, carries {PEERS}",
        evidence,
    )
