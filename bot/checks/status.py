"""Live state per target (`status`, `peers`) and the outcome-reason breakdown (`reasons`).

Both read the client tenant cluster's `/metrics/syncer` through the cluster's configured context. Behind
a load-balanced Service the replica that answered is unknown (the page carries no `pod` label), and the
result says so; a per-replica context pins one.

`reasons` counts over a window when Prometheus is configured (`increase(...[window])`, the same queries
alert enrichment uses) and otherwise shows totals since the proxy started, labelled as such: two reads
`window` apart are impractical for a check run on demand. Each reason carries its meaning from the guide's
table and whose side it is; the check fails when a proxy-fault reason counted in what is shown.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import Awaitable, Collection
from typing import TypeVar

from bot.clients.prometheus import PrometheusClient
from bot.domain.diagnosis import diagnose
from bot.domain.durations import parse_duration
from bot.domain.enrichment import WindowAsk
from bot.domain.findings import Finding, Severity, finding_key, sort_worst_first
from bot.domain.reasons import reason_info
from bot.domain.snapshot import (
    DIAL_FAILURES,
    DISCOVERY_FALLBACKS,
    REQUESTS,
    TERMINATIONS,
    ProxySnapshot,
    make_labels,
)
from bot.domain.status_result import (
    ClusterReadInfo,
    GroupVersionState,
    ReasonCount,
    ReasonsResult,
    StatusResult,
    TargetStatus,
)
from bot.domain.triage import ClusterTriage
from bot.errors import UpstreamError
from bot.live import ClusterRead
from bot.prom_queries import counters_query, window_from
from bot.reads.context import CheckContext, TargetRef, resolve_target
from bot.reads.triage import fleet_newest, read_triage, verdict_of
from config.clusters import ClusterSettings, replica_source
from config.settings import Settings

# Clusters (their metrics, or their triage reads) read at once by one status check.
STATUS_CONCURRENCY = 8
T = TypeVar("T")


def _refs(settings: Settings, target: str | None, clusters: Collection[str] | None) -> list[TargetRef]:
    """The target through every client that forwards to it (or every configured target), only through
    `clusters` when given (the ones the asker may query)."""
    if target is not None:
        resolve_target(settings, target)  # an unknown name is refused, naming the known ones
        refs = [TargetRef(c, t) for c, t in settings.forwarders(target)]
    else:
        refs = [TargetRef(c, t) for c in settings.clusters for t in c.targets]
    return [r for r in refs if clusters is None or r.cluster.name in clusters]


async def run_status(
    ctx: CheckContext, target: str | None = None, clusters: Collection[str] | None = None
) -> StatusResult:
    """Live state of `target` through each client behind it (or of every configured target), read through
    `clusters` only when given: peers per group/version, the diagnosis, the quick-triage verdict, and the
    triage reads (versions, target pods, APIServices)."""
    refs = _refs(ctx.settings, target, clusters)
    live = await ctx.live()
    sources = list(dict.fromkeys(source for ref in refs for source in _sources(ref.cluster)))
    reading = list({ref.cluster.name: ref.cluster for ref in refs}.values())
    chosen = {c.name: tuple(r.target for r in refs if r.cluster.name == c.name) for c in reading}
    # A fleet-wide status reads a few clusters at a time, not all of them at once.
    slots = asyncio.Semaphore(STATUS_CONCURRENCY)

    async def bounded(work: Awaitable[T]) -> T:
        async with slots:
            return await work

    read_list, triages = await asyncio.gather(
        asyncio.gather(*(bounded(live.read(source)) for source in sources)),
        asyncio.gather(*(bounded(read_triage(ctx, c, chosen[c.name])) for c in reading)),
    )
    reads = dict(zip(sources, read_list, strict=True))
    by_cluster = {t.cluster: t for t in triages}
    statuses = tuple(
        _with_verdict(_target_status(ref, reads[source]), reads[source], by_cluster[ref.cluster.name])
        for ref in refs
        for source in _sources(ref.cluster)
    )
    infos = tuple(_read_info(ctx.settings, read) for read in reads.values())
    newest = fleet_newest(triages)
    found = tuple(sort_worst_first([f for t in triages for f in t.findings(newest)]))
    return StatusResult(statuses, infos, tuple(triages), found)


def _with_verdict(status: TargetStatus, read: ClusterRead, triage: ClusterTriage) -> TargetStatus:
    target = triage.targets[status.target]
    verdict = verdict_of(read, status.target, target.pods, triage.client_version)
    return dataclasses.replace(status, verdict=verdict)


def _sources(cluster: ClusterSettings) -> list[str]:
    """Every addressable replica of the cluster, else the cluster itself (whichever replica answers)."""
    return [replica_source(cluster.name, pod) for pod in cluster.replicas] or [cluster.name]


def _read_info(settings: Settings, read: ClusterRead) -> ClusterReadInfo:
    name = read.cluster.partition("/")[0]  # a replica source is `cluster/pod`
    replica = read.replica or pinned_replica(settings.cluster(name))
    return ClusterReadInfo(name, read.read_at, replica, read.unavailable)


def pinned_replica(cluster: ClusterSettings | None) -> str | None:
    """The replica a context pins, when its name says so (`<cluster>-<n>`, as vCluster names pods)."""
    if cluster is None or cluster.context is None:
        return None
    return cluster.context if re.fullmatch(rf"{re.escape(cluster.name)}-[0-9]+", cluster.context) else None


def _target_status(ref: TargetRef, read: ClusterRead) -> TargetStatus:
    if read.snapshot is None:
        why = read.unavailable or "not read"
        return TargetStatus(ref.name, ref.cluster.name, (), (_unreadable(ref, why),), why, read.replica)
    snapshot = read.snapshot
    gvs = list(dict.fromkeys([*ref.target.group_versions, *snapshot.group_versions(ref.name)]))
    states = tuple(_gv_state(snapshot, ref.name, gv) for gv in gvs)
    findings = tuple(diagnose(snapshot, read.window, target=ref.name))
    return TargetStatus(ref.name, ref.cluster.name, states, findings, None, read.replica)


def _unreadable(ref: TargetRef, why: str) -> Finding:
    # No live state is no proof of health: a warning, so that the check fails (the CLI exits non-zero).
    return Finding(
        severity=Severity.WARNING,
        kind="live_state_unavailable",
        key=finding_key("live_state_unavailable", ref.name),
        title=f"{ref.name}: the client cluster {ref.cluster.name} could not be read",
        evidence=(why,),
        cause="The bot could not read /metrics/syncer on the client tenant cluster (see the evidence).",
        next_step="Check the bot's kubeconfig and RBAC for this cluster (get on /metrics/syncer); a 404 "
        "there means a vCluster older than v0.37.",
        guide_section="Monitor the proxy > Scrape proxy metrics",
        target=ref.name,
    )


def _gv_state(snapshot: ProxySnapshot, target: str, gv: str) -> GroupVersionState:
    return GroupVersionState(
        gv, snapshot.peers(target, gv), snapshot.cache_synced(target, gv), snapshot.peer_list_age(target, gv)
    )


# -- reasons ------------------------------------------------------------------------------------------

# The four counter families that carry a `reason`, with the words the breakdown uses for them.
REASON_FAMILIES = (
    (REQUESTS, "request"),
    (TERMINATIONS, "termination"),
    (DIAL_FAILURES, "dial failure"),
    (DISCOVERY_FALLBACKS, "discovery fallback"),
)
SINCE_START = "since the proxy started"
MIN_WINDOW = 60
MAX_WINDOW = 7 * 86400


def parse_window(text: str) -> int:
    """`15m`, `1h30m`, `90s`, `2d` in seconds; between a minute and a week."""
    return parse_duration(text, field="--window", low=MIN_WINDOW, high=MAX_WINDOW)


def reason_counts(source: ProxySnapshot, target: str) -> tuple[ReasonCount, ...]:
    """Every positive (family, reason) count of one target, faults first, then largest."""
    found = [
        ReasonCount(words, reason, value, reason_info(reason))
        for family, words in REASON_FAMILIES
        for reason, value in source.breakdown(family, "reason", target=target).items()
        if value > 0
    ]
    return tuple(sorted(found, key=lambda c: (not c.is_fault, -c.count, c.family, c.reason)))


async def run_reasons(
    ctx: CheckContext,
    target: str,
    *,
    window: int | None = None,
    prometheus: PrometheusClient | None = None,
) -> ReasonsResult:
    """The reason breakdown: from Prometheus over `window` when a client is given, else since start."""
    ref = resolve_target(ctx.settings, target)
    notes: list[str] = []
    if prometheus is not None and window is not None:
        try:
            return await _from_prometheus(ref, window, prometheus)
        except UpstreamError as err:
            notes.append(f"Prometheus could not be read ({err}); showing totals {SINCE_START} instead")
    elif window is not None:
        notes.append(f"prometheus.url is not configured: --window cannot apply; totals {SINCE_START}")
    read = await (await ctx.live()).read(ref.cluster.name)
    if read.snapshot is None:
        return ReasonsResult(
            ref.name, ref.cluster.name, SINCE_START, None, (), tuple(notes), read.unavailable
        )
    counts = reason_counts(read.snapshot, ref.name)
    return ReasonsResult(ref.name, ref.cluster.name, SINCE_START, None, counts, tuple(notes))


async def _from_prometheus(ref: TargetRef, window: int, prometheus: PrometheusClient) -> ReasonsResult:
    match = make_labels(ref.cluster.match.items())
    ask = WindowAsk("", ref.cluster.name, match, ref.name, None, window)
    samples = await prometheus.query(counters_query(ask))
    increase = window_from(ask, time.time(), samples, [], []).delta.increase
    scope = f"in the last {_fmt_window(window)} (Prometheus increase())"
    counts = reason_counts(increase, ref.name)
    return ReasonsResult(ref.name, ref.cluster.name, scope, window, counts)


def _fmt_window(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
