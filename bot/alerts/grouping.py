"""From one notification to one view per channel: routing alerts to channels, and diagnosing them.

Each alert goes to its client cluster's channel (else `slack.default_channel`), the cluster found by
`Settings.cluster_for_alert`: a control-plane object's namespace (ProbeFailing), its `match` labels, or
its target. Each channel's share of the group becomes one `AlertGroupView` with every alert diagnosed
from the live state and Prometheus' window read for it (what was late or failed is marked unavailable).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bot.alerts.budget import within_budget
from bot.alerts.log_enrich import LogRound
from bot.alerts.prom_enrich import PromRound
from bot.alerts.state import ChannelGroup, status_of
from bot.domain.alert_summary import PeerReading, peer_readings
from bot.domain.alerts import Alert, AlertmanagerWebhook
from bot.domain.delta import ProxyDelta
from bot.domain.diagnosis import AlertDiagnosis, diagnose_alert
from bot.domain.diagnosis_readings import Readings
from bot.domain.enrichment import Unavailable
from bot.domain.impact import ImpactSample, sample
from bot.domain.log_reference import LogEvidence
from bot.domain.messages import AlertGroupView, AlertView, GroupStatus, LiveRead
from bot.domain.snapshot import ProxySnapshot
from bot.domain.verdict import (
    LogSignals,
    TargetPods,
    TargetVerdict,
    judge,
    log_signals,
    metrics_signal,
    unreadable_metrics,
)
from bot.live import ClusterRead
from bot.render.checks_logs import with_logs
from bot.render.enrichment import live_unavailable, with_prometheus, with_verdict
from bot.render.words import counted
from config.settings import Settings

log = logging.getLogger(__name__)

NO_CLUSTER = "no configured cluster matches this alert's labels"


@dataclass(frozen=True, slots=True)
class Reading:
    """What enrichment found for one cluster (or for alerts of no cluster)."""

    snapshot: ProxySnapshot | None
    window: ProxyDelta | None
    live: LiveRead


@dataclass(frozen=True, slots=True)
class Routed:
    """One alert of the notification, with the cluster it belongs to (None: no configured cluster)."""

    alert: Alert
    cluster: str | None
    source: str | None = None  # live-state source: the cluster, or the alerting replica when addressable


def route(settings: Settings, webhook: AlertmanagerWebhook) -> dict[str, list[Routed]]:
    """The notification's alerts by channel; an alert with no channel to go to is logged and dropped."""
    routes: dict[str, list[Routed]] = {}
    for alert in webhook.alerts:
        cluster = settings.cluster_for_alert(alert.labels)
        channel = settings.slack.default_channel if cluster is None else settings.alert_channel(cluster)
        if channel is None:
            log.error(
                "alert %r of group %r matches no cluster and no slack.default_channel is set: not posted",
                alert.alertname,
                webhook.group_key,
            )
            continue
        routed = Routed(alert, None, None)
        if cluster is not None:
            routed = Routed(alert, cluster.name, cluster.source(alert.labels.get("pod")))
        routes.setdefault(channel, []).append(routed)
    return routes


def reading(task: asyncio.Future[ClusterRead], budget: float) -> Reading:
    """What one live read brought by the end of the enrichment budget."""
    read = within_budget(task, budget)
    if isinstance(read, Unavailable):
        if read.error is not None:
            log.error("live read failed: %s: %s", type(read.error).__name__, read.error)
        return Reading(None, None, LiveRead.missing(live_unavailable(read)))
    if read.snapshot is None:
        return Reading(None, None, LiveRead.missing(read.unavailable or "no live state"))
    at = datetime.fromtimestamp(read.read_at, UTC)
    return Reading(read.snapshot, read.window, LiveRead.read(at, read.replica))


def pods_reading(task: asyncio.Future[TargetPods], budget: float) -> TargetPods:
    """What one target-pods read brought by the end of the enrichment budget (late is said so)."""
    read = within_budget(task, budget)
    if isinstance(read, Unavailable):
        return TargetPods.missing(live_unavailable(read).replace("the live read", "the read"))
    return read


def build(
    webhook: AlertmanagerWebhook,
    channel: str,
    routed: list[Routed],
    readings: Mapping[str, Reading],
    prom: PromRound,
    logs: LogRound | None = None,
    pods: Mapping[str, TargetPods] | None = None,
) -> ChannelGroup:
    """One channel's share of the notification, every alert diagnosed (and, with `pods`, the verdict of
    each alert's target from its control-plane pods)."""
    unmatched = Reading(None, None, LiveRead.missing(NO_CLUSTER))
    memo: dict[tuple[Any, ...], AlertDiagnosis] = {}
    views: dict[str, AlertView] = {}
    for r in routed:
        found = unmatched if r.source is None else readings[r.source]
        views[r.alert.fingerprint] = _alert_view(r.alert, _diagnosis(r, found, prom, logs, memo, pods or {}))
    clusters = {r.cluster for r in routed}
    sources = {r.source for r in routed}
    live = _merge_live([unmatched if c is None else readings[c] for c in sorted(sources, key=str)])
    alerts = tuple(views.values())
    status, resolved_at = status_of(alerts)
    view = AlertGroupView(
        group_key=webhook.group_key,
        status=status,
        alerts=alerts,
        started_at=min(a.starts_at for a in alerts),
        live=live,
        cluster=next(iter(clusters)) if len(clusters) == 1 else None,
        resolved_at=resolved_at,
        truncated_alerts=webhook.truncated_alerts,
        peers=_peers(routed, readings),
        external_url=webhook.external_url,
    )
    return ChannelGroup(
        channel=channel,
        view=view,
        firing=frozenset(r.alert.fingerprint for r in routed if r.alert.firing),
        resolved=frozenset(r.alert.fingerprint for r in routed if not r.alert.firing),
        by_fingerprint=views,
        impact=_impact_samples(routed, readings),
    )


def _impact_samples(routed: list[Routed], readings: Mapping[str, Reading]) -> tuple[ImpactSample, ...]:
    """Each source read for the share: its failed-request counters and peers of the share's targets."""
    targets: dict[str, set[str]] = {}
    for r in routed:
        if r.source is not None and (target := r.alert.labels.get("target")):
            targets.setdefault(r.source, set()).add(target)
    found = []
    for source, names in sorted(targets.items()):
        read = readings[source]
        if read.snapshot is not None and read.live.read_at is not None:
            found.append(sample(source, read.live.read_at.timestamp(), read.snapshot, names))
    return tuple(found)


def _diagnosis(
    r: Routed,
    found: Reading,
    prom: PromRound,
    logs: LogRound | None,
    memo: dict[tuple[Any, ...], AlertDiagnosis],
    pods: Mapping[str, TargetPods],
) -> AlertDiagnosis:
    # A storm repeats the same alert on many HA replicas and group/versions: explain each shape once.
    labels = r.alert.labels
    shape = tuple(labels.get(k) for k in ("alertname", "target", "group_version", "pod", "severity"))
    key = (r.cluster, *shape)
    if key not in memo:
        # Prometheus' window, when it answered in time, is preferred to the delta of our own two reads.
        outcome = prom.outcome(r.alert.alertname, labels, r.cluster)
        window = outcome.window.delta if outcome and outcome.window else found.window
        diagnosis = diagnose_alert(r.alert.alertname, labels, found.snapshot, window)
        diagnosis = with_prometheus(diagnosis, outcome)
        target = labels.get("target")
        # One reading: the logs shown as evidence are the logs the verdict rests on.
        lines = _log_lines(logs, r)
        read = None
        if isinstance(lines, LogEvidence) and lines.unavailable is None:
            scope = f"{lines.scope} of {counted(len(lines.pods), 'pod')}"
            read = log_signals([m.reference.key for m in lines.matches], scope)
        if r.cluster is not None and target is not None and target in pods:
            diagnosis = with_verdict(diagnosis, _verdict(found, window, target, pods[target], read))
        memo[key] = with_logs(diagnosis, lines)
    return memo[key]


def _log_lines(logs: LogRound | None, r: Routed) -> LogEvidence | Unavailable | None:
    if logs is None:
        return None
    labels = r.alert.labels
    return logs.evidence(r.cluster, labels.get("target"), labels.get("group_version") or None)


def _verdict(
    found: Reading, window: ProxyDelta | None, target: str, pods: TargetPods, logs: LogSignals | None
) -> TargetVerdict:
    if found.snapshot is None:
        metrics = unreadable_metrics(found.live.unavailable or "no live state")
    else:
        metrics = metrics_signal(Readings(found.snapshot, window, target))
    return judge(pods, metrics, logs)


def _peers(routed: list[Routed], readings: Mapping[str, Reading]) -> tuple[PeerReading, ...]:
    """The peer caches of the share's targets, per source read (an alert without a target: all of them)."""
    wanted: dict[str, tuple[Reading, set[str]]] = {}
    for r in routed:
        read = None if r.source is None else readings[r.source]
        if r.source is not None and read is not None and read.snapshot is not None:
            target = r.alert.labels.get("target")
            names = wanted.setdefault(r.source, (read, set()))[1]
            names.update([target] if target else read.snapshot.targets())
    out: list[PeerReading] = []
    for source in sorted(wanted):
        read, names = wanted[source]
        if read.snapshot is not None:
            out.extend(peer_readings(read.snapshot, names, read.live.replica))
    return tuple(out)


def _alert_view(alert: Alert, diagnosis: AlertDiagnosis) -> AlertView:
    return AlertView(
        name=alert.alertname or "unnamed alert",
        status=GroupStatus(alert.status.value),
        starts_at=alert.starts_at,
        labels=alert.labels,
        annotations=alert.annotations,
        ends_at=alert.ends_at,
        diagnosis=diagnosis,
        generator_url=alert.generator_url,
    )


def _merge_live(readings: list[Reading]) -> LiveRead:
    """One live line for a message whose alerts came from one or several clusters."""
    if len(readings) == 1:
        return readings[0].live
    missing = [r.live.unavailable for r in readings if not r.live.ok and r.live.unavailable]
    if missing:
        return LiveRead.missing("; ".join(dict.fromkeys(missing)))
    times = [r.live.read_at for r in readings if r.live.read_at is not None]
    return LiveRead.read(min(times)) if times else LiveRead.missing("no live state")
