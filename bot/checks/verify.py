"""`verify`: the guide's "Verify the monitoring works", one pass/fail line per piece, each with its fix.

Lines, per configured client cluster unless noted:
- `scrape`: Prometheus scrapes the client's `/metrics/syncer` and `up == 1`. The scrape is identified by
  the cluster's `match` labels (the labels its alerts carry, so they must be on the scrape): an active
  target whose labels include all of them and that scrapes `/metrics/syncer` or belongs to a job named
  like the guide's `up{job=~".*vcluster.*"}`. Every such target (HA replicas) must be up. When none
  carries them, the peer gauge is read without the `match` selector to tell "not scraped" from "scraped
  without label X" (then alerts match no cluster), and the line names the missing label.
- `rules` (once): the seven `ResourceProxy*` alert rules are loaded and healthy.
- `probe-cronjob`: the `proxy-probe` CronJob exists in the client's control-plane namespace, is not
  suspended, was scheduled within three intervals and succeeded within 900 s (Kubernetes API).
- `probe-series`: `kube_cronjob_created` for that CronJob is visible in Prometheus.
- `syncer`: `/metrics/syncer` is readable with the bot's own credentials and carries `vcluster_proxy_peers`.
- `apiservices`: every configured group/version's APIService exists and is Available, the Service its
  `spec.service` names exists, and no protected APIService is left over for a group/version the config
  does not name (an orphan: its removal steps are the fix).
- `versions`: the client runs vCluster v0.37 or later (else /metrics/syncer does not exist) and the same
  minor version as each target; tenants behind the newest version seen are named, without failing.

A line that cannot be checked (no `prometheus.url`, no `control_plane`) is *not checked*, never a pass:
monitoring that was not verified is not verified, so the overall result passes only when every line passes
(the CLI exits 1 otherwise, and says which lines were skipped and why). A line and the result are
`bot.checks.verify_lines`; the two CronJob lines are `bot.checks.verify_cronjob`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from bot.checks.verify_cronjob import cronjob_line, cronjob_series_line
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
from bot.domain.apiservices import apiservice_findings
from bot.domain.findings import Severity, sort_worst_first
from bot.domain.parser import parse_syncer
from bot.domain.paths import SYNCER_METRICS
from bot.domain.snapshot import PEERS
from bot.domain.triage import ClusterTriage
from bot.domain.verify_result import Outcome, VerifyLine, VerifyResult, skipped_line, unreachable_line
from bot.domain.versions import VClusterVersion, version_findings
from bot.errors import ClusterError, InputError, MetricsParseError, UpstreamError
from bot.reads.context import CHECK_TIMEOUT, CheckContext, suggested
from bot.reads.triage import fleet_newest, read_triage
from config.clusters import ClusterSettings
from config.settings import Settings

# Version flags that fail the line: a client blind to monitoring, or ends apart. Lagging is named only.
FAILING_VERSIONS = frozenset({"client_too_old", "version_skew"})


def apiservices_line(triage: ClusterTriage) -> VerifyLine:
    """Pass when every configured APIService is Available with its Service, and none is orphaned."""
    reads = triage.apiservices
    problems = sort_worst_first([f for f in apiservice_findings(reads) if f.severity >= Severity.WARNING])
    evidence = tuple(reads.lines()) + tuple(f"orphan: {o.name}" for o in reads.orphans())
    if not problems:
        summary = f"{len(reads.configured)} APIService(s) Available with their Service, no orphan"
        return VerifyLine("apiservices", triage.cluster, Outcome.PASS, summary, evidence)
    summary = "; ".join(f.title for f in problems[:3]) + (
        f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
    )
    return VerifyLine("apiservices", triage.cluster, Outcome.FAIL, summary, evidence, problems[0].next_step)


def versions_line(triage: ClusterTriage, fleet_newest: VClusterVersion | None) -> VerifyLine:
    """Pass when the client can publish proxy metrics and runs its targets' minor version."""
    client = triage.client_version
    targets = [t.version for t in triage.targets.values()]
    evidence = tuple(f"{v.role.value} {v.name}: {v.shown()}" for v in (client, *targets))
    if client.version is None or any(t.version is None for t in targets):
        fix = (
            "configure `control_plane` for the client and each target, and grant `get` on statefulsets there"
        )
        summary = "not every vCluster version could be read"
        return VerifyLine("versions", triage.cluster, Outcome.NOT_CHECKED, summary, evidence, fix)
    flags = version_findings(client, targets, fleet_newest)
    failing = [f for f in flags if f.kind in FAILING_VERSIONS]
    lagging = tuple(f"lags: {f.title}" for f in flags if f.kind not in FAILING_VERSIONS)
    if failing:
        summary = "; ".join(f.title for f in failing)
        return VerifyLine(
            "versions", triage.cluster, Outcome.FAIL, summary, evidence + lagging, failing[0].next_step
        )
    summary = f"client {client.version} serves proxy metrics (v0.37+) and matches its targets' minor version"
    return VerifyLine("versions", triage.cluster, Outcome.PASS, summary, evidence + lagging)


GUIDE_ALERTS = (
    NO_HEALTHY_PEERS,
    PEER_CACHE_UNSYNCED,
    TARGET_UNAVAILABLE,
    PEER_CHURN,
    DISCOVERY_DEGRADED,
    WATCHES_SILENT,
    PROBE_FAILING,
)
_VCLUSTER_JOB = "vcluster"
_SHOWN_SERIES = 5
CLUSTER_ROLE_FIX = (
    "grant the bot's identity `get` on the non-resource URL /metrics/syncer in the tenant cluster: apply "
    "config/deploy/tenant-cluster/rbac.yaml there (its ClusterRole `proxybot-tenant-reader` has "
    "nonResourceURLs: [/metrics/syncer], verbs: [get], bound to the ServiceAccount `proxybot-reader`)"
)
Progress = Callable[[str], None]


def open_prometheus(settings: Settings, timeout: float = CHECK_TIMEOUT) -> PrometheusClient | None:
    """A client for `prometheus.url`, or None when it is not configured.

    Built once and shared: by the bot (`bot.compose.open_clients`), and by the CLI once per run.
    """
    if settings.prometheus.url is None:
        return None
    return PrometheusClient.from_settings(settings.prometheus, timeout=timeout)


async def check_verify(
    ctx: CheckContext,
    prometheus: PrometheusClient | None,
    *,
    clusters: Sequence[ClusterSettings] | None = None,
    progress: Progress | None = None,
) -> VerifyResult:
    """Every line for `clusters` (default: all configured), Prometheus lines only with a client."""
    say = progress or (lambda _: None)
    chosen = ctx.settings.clusters if clusters is None else tuple(clusters)
    say("checking Prometheus rules…")
    lines = [await rules_line(prometheus, ctx.timeout)]
    # The versions line compares against the newest version seen, so every cluster is read first.
    triages = await asyncio.gather(*(read_triage(ctx, cluster, with_pods=False) for cluster in chosen))
    newest = fleet_newest(triages)
    for cluster, triage in zip(chosen, triages, strict=True):
        say(f"checking {cluster.name}…")
        lines += await asyncio.gather(
            scrape_line(prometheus, cluster, ctx.timeout),
            cronjob_line(ctx, cluster),
            cronjob_series_line(prometheus, cluster, ctx.timeout),
            syncer_line(ctx, cluster),
        )
        lines += [apiservices_line(triage), versions_line(triage, newest)]
    return VerifyResult(tuple(lines))


def chosen_clusters(settings: Settings, name: str | None) -> tuple[ClusterSettings, ...]:
    """The clusters `--cluster NAME` names (all when not given); InputError for an unknown name."""
    if name is None:
        return settings.clusters
    found = tuple(c for c in settings.clusters if c.name == name)
    if not found:
        known = suggested(name, [c.name for c in settings.clusters])
        raise InputError(f"--cluster: {name[:80]!r} is not a configured cluster ({known})")
    return found


# -- Prometheus: rules ---------------------------------------------------------------------------------


async def rules_line(prometheus: PrometheusClient | None, timeout: float) -> VerifyLine:
    if prometheus is None:
        return skipped_line("rules", None, "rules not checked")
    try:
        groups = await prometheus.rules(timeout=timeout)
    except UpstreamError as err:
        return unreachable_line("rules", None, err)
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
    prometheus: PrometheusClient | None, cluster: ClusterSettings, timeout: float
) -> VerifyLine:
    if prometheus is None:
        return skipped_line("scrape", cluster.name, "scrape not checked")
    try:
        targets = [t for t in await prometheus.targets(timeout=timeout) if is_syncer_scrape(t, cluster.match)]
        up = await prometheus.query(selector("up", cluster.match), timeout=timeout) if targets else []
        # No scrape carries the labels: are the proxy series there at all, and with which of the labels?
        series = [] if targets else await prometheus.query(scrapes_of_peers(cluster), timeout=timeout)
    except UpstreamError as err:
        return unreachable_line("scrape", cluster.name, err)
    return judge_scrape(cluster, targets, up, series)


def scrapes_of_peers(cluster: ClusterSettings) -> str:
    """One sample per scrape of the peer gauge, whatever its labels: its job, instance and match labels."""
    names = dict.fromkeys(["job", "instance", *sorted(cluster.match)])
    return f"group by ({', '.join(names)}) ({PEERS})"


def judge_scrape(
    cluster: ClusterSettings,
    targets: Sequence[ScrapeTarget],
    up: Sequence[Sample],
    series: Sequence[Sample] = (),
) -> VerifyLine:
    """Pass when at least one matching syncer scrape exists and every one of them has `up == 1`.

    Without one, `series` (the peer gauge's scrapes, read without the `match` selector) tells "not
    scraped" from "scraped without label X", which the line then names.
    """
    if not targets:
        return _unmatched_scrape(cluster, series)
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


def _labels(labels: Mapping[str, str]) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def _relabel_fix(cluster: ClusterSettings, missing: Mapping[str, str]) -> str:
    return (
        f"add {_labels(missing)} to the scrape of {cluster.name}'s /metrics/syncer: ServiceMonitor "
        "`relabelings` or scrape_config `relabel_configs` with `target_label` and `replacement` (not "
        "metric_relabel_configs, which `up` never gets), so that its alerts name this cluster"
    )


def _unmatched_scrape(cluster: ClusterSettings, series: Sequence[Sample]) -> VerifyLine:
    """No scrape target carries the `match` labels: not scraped, or scraped without (some of) them."""
    wanted = _labels(cluster.match)
    if not series:
        fix = (
            f"scrape /metrics/syncer of {cluster.name} (controlPlane.serviceMonitor.enabled: true, or "
            f"your own job) and put the labels {wanted} on it, so that the alerts name this cluster"
        )
        absent = (
            f"no active scrape target of /metrics/syncer carries {wanted}",
            f"no {PEERS} series at all",
        )
        summary = "not scraped: an absent target is indistinguishable from a healthy proxy"
        return VerifyLine("scrape", cluster.name, Outcome.FAIL, summary, absent, fix)
    # A series contradicting none of the labels may be this cluster's, lacking those it does not carry.
    fitting = [s for s in series if all(s.labels.get(k, v) == v for k, v in cluster.match.items())]
    listed = fitting or list(series)
    evidence: tuple[str, ...] = tuple(_scrape_of(s, cluster.match) for s in listed[:_SHOWN_SERIES])
    if len(listed) > _SHOWN_SERIES:
        evidence += (f"… and {len(listed) - _SHOWN_SERIES} more",)
    if not fitting:
        summary = f"not scraped with {wanted}: every {PEERS} series carries other values"
        fix = (
            f"compare `match` of {cluster.name} with the labels on its scrape (the series of other "
            f"clusters are listed too), or add {wanted} to the scrape"
        )
        return VerifyLine("scrape", cluster.name, Outcome.FAIL, summary, evidence, fix)
    missing = {k: v for k, v in cluster.match.items() if any(k not in s.labels for s in fitting)}
    if not missing:
        summary = f"{PEERS} carries {wanted}, but no active scrape target of /metrics/syncer does"
        fix = _relabel_fix(cluster, cluster.match)
        return VerifyLine("scrape", cluster.name, Outcome.FAIL, summary, evidence, fix)
    names = ", ".join(f"`{k}`" for k in sorted(missing))
    summary = (
        f"scraped without the label {names}: its alerts match no cluster (they go to the default channel)"
    )
    return VerifyLine("scrape", cluster.name, Outcome.FAIL, summary, evidence, _relabel_fix(cluster, missing))


def _scrape_of(series: Sample, match: Mapping[str, str]) -> str:
    labels = series.labels
    where = f"{PEERS} of job {labels.get('job', '?')}, instance {labels.get('instance', '?')}"
    lacking = [k for k in sorted(match) if k not in labels]
    carried = {k: labels[k] for k in match if k in labels}
    parts = [f"without {', '.join(lacking)}"] if lacking else []
    parts += [f"with {_labels(carried)}"] if carried else []
    return f"{where}: {'; '.join(parts)}"


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
