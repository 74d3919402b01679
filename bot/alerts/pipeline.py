"""From an accepted Alertmanager notification to Slack operations in the durable outbox.

Per notification: each alert is routed to its client cluster's channel (else `slack.default_channel`),
the clusters involved are read live within the enrichment budget (what is late is marked unavailable,
never waited for), every alert is diagnosed, and each channel's share of the group becomes one view that
is compared with the group's stored state:

    new group                -> post (or, in a storm, a line in the storm summary's thread)
    later notification       -> edit in place, plus a thread reply when alerts were added or resolved
    everything resolved      -> edit to the resolved form, plus a reply; never a new top-level post

Crash safety: operations are enqueued first, then the group state is saved (recording the notification's
identity), then the notification is closed. Re-running a notification after a crash at any step finds
either its identity in the group state (nothing to do) or the same outbox keys (duplicates change nothing).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from bot.alerts.prom_enrich import PromEnricher, PromRound, chart_subject, with_prometheus
from bot.alerts.storm import (
    IN_STORM,
    STORM_COUNT,
    StormDesk,
    StormPolicy,
    StormStore,
    entries_of,
    storm_count_details,
)
from bot.domain.alerts import Alert, AlertmanagerWebhook, AlertStatus
from bot.domain.delta import ProxyDelta
from bot.domain.diagnosis import AlertDiagnosis, diagnose_alert
from bot.domain.messages import AlertGroupView, AlertView, GroupChange, GroupStatus, LiveRead
from bot.domain.snapshot import ProxySnapshot
from bot.live import ClusterRead
from bot.render.blocks import Message
from bot.render.slack import alert_group_message, change_reply
from bot.store.models import AlertGroupState, Enqueued, StoredNotification
from config.settings import Settings

log = logging.getLogger(__name__)

# Group details key holding the firing alerts' labels (read by the Silence button).
ALERT_LABELS = "alert_labels"

Clock = Callable[[], float]
NO_CLUSTER = "no configured cluster matches this alert's labels"


class LiveSource(Protocol):
    """Live proxy state per cluster (`bot.live.LiveState` is one); failures are returned, never raised."""

    async def read(self, cluster: str) -> ClusterRead: ...


class PipelineStore(StormStore, Protocol):
    """What the pipeline needs of the store (`bot.store.Store` is one)."""

    async def mark_processed(self, notification_id: int) -> bool: ...


class Outbox(Protocol):
    """Queues Slack operations and wakes their worker (`bot.delivery.worker.Delivery` is one)."""

    async def post(self, channel: str, group_key: str, message: Message) -> Enqueued: ...

    async def update(self, channel: str, group_key: str, message: Message, revision: str) -> Enqueued: ...

    async def reply(self, channel: str, group_key: str, message: Message, revision: str) -> Enqueued: ...

    async def upload_png(
        self, channel: str, group_key: str, png: bytes, *, filename: str, title: str, revision: str
    ) -> Enqueued: ...

    def notify(self) -> None: ...


@dataclass(frozen=True, slots=True)
class _Reading:
    """What enrichment found for one cluster (or for alerts of no cluster)."""

    snapshot: ProxySnapshot | None
    window: ProxyDelta | None
    live: LiveRead


@dataclass(frozen=True, slots=True)
class _Routed:
    alert: Alert
    cluster: str | None
    source: str | None = None  # live-state source: the cluster, or the alerting replica when addressable


@dataclass(frozen=True)
class _Group:
    """One channel's share of a notification, ready to compare with the stored state."""

    channel: str
    view: AlertGroupView
    firing: frozenset[str]  # fingerprints firing in this notification
    resolved: frozenset[str]  # fingerprints reported resolved in this notification
    by_fingerprint: Mapping[str, AlertView]


class AlertPipeline:
    """Turns stored notifications into outbox operations; one `process()` at a time."""

    def __init__(
        self,
        settings: Settings,
        store: PipelineStore,
        outbox: Outbox,
        live: LiveSource,
        *,
        storm: StormPolicy | None = None,
        clock: Clock = time.time,
        prometheus: PromEnricher | None = None,
    ) -> None:
        self._settings = settings
        self._prometheus = prometheus
        self._store = store
        self._outbox = outbox
        self._live = live
        self._clock = clock
        self._budget = settings.enrichment.timeout_seconds
        self._storms = StormDesk(store, outbox, storm or StormPolicy(), clock)
        # Reads that outlived the budget keep running (they fill LiveState's cache for the next alert).
        self._late: set[asyncio.Task[ClusterRead]] = set()
        # Notifications applied and waiting for their storm's row to be saved before they are closed.
        self._held: set[int] = set()

    async def restore(self) -> None:
        """Pick up state kept in the store (storms in progress) after a restart."""
        await self._storms.restore()

    async def process(self, notification: StoredNotification, *, settle: bool = False) -> bool:
        """Enqueue the notification's Slack operations, save the groups' state, close the notification.

        Storm summaries changed by it are sent when their linger is over. With `settle` (the worker sets
        it when the queue is empty after this one) the notification is closed only once every storm's
        row counts it, so no pending notification means the storm rows are complete: False when it is
        held open for that (`expire_storms` closes it when the rows are saved).
        """
        webhook = notification.webhook
        routes = self._route(webhook)
        clusters = {r.source for routed in routes.values() for r in routed if r.source is not None}
        prom = PromRound(self._prometheus, self._settings)
        prom.start((r.alert.alertname, r.alert.labels, r.cluster) for rs in routes.values() for r in rs)
        readings = await self._enrich(clusters, prom)
        for channel, routed in routes.items():
            group = _build(webhook, channel, routed, readings, prom)
            await self._apply(notification.identity, group)
        if not await self._storms.flush(settle=settle) and settle:
            self._held.add(notification.id)
            return False
        await self._store.mark_processed(notification.id)
        return True

    async def expire_storms(self) -> list[str]:
        """Send storm summaries whose linger is over and close the notifications held for them; end
        storms quiet long enough (their keys)."""
        ended = await self._storms.expire()
        if await self._storms.flush(settle=True):
            for held in sorted(self._held):
                await self._store.mark_processed(held)
            self._held.clear()
        return ended

    def next_deadline(self) -> float | None:
        """When `expire_storms` next has something to do (wall-clock seconds), if ever."""
        return self._storms.next_deadline()

    async def aclose(self) -> None:
        """Cancel live reads still running past their budget."""
        for task in list(self._late):
            task.cancel()
        await asyncio.gather(*self._late, return_exceptions=True)
        if self._prometheus is not None:
            await self._prometheus.cancel_pending()

    # -- routing and enrichment ----------------------------------------------------------------------
    def _route(self, webhook: AlertmanagerWebhook) -> dict[str, list[_Routed]]:
        routes: dict[str, list[_Routed]] = {}
        for alert in webhook.alerts:
            cluster = self._settings.cluster_for_alert(alert.labels)
            if cluster is not None:
                channel = self._settings.alert_channel(cluster)
            else:
                channel = self._settings.slack.default_channel
            if channel is None:
                log.error(
                    "alert %r of group %r matches no cluster and no slack.default_channel is set: not posted",
                    alert.alertname,
                    webhook.group_key,
                )
                continue
            routed = _Routed(alert, None, None)
            if cluster is not None:
                routed = _Routed(alert, cluster.name, cluster.source(alert.labels.get("pod")))
            routes.setdefault(channel, []).append(routed)
        return routes

    async def _enrich(self, clusters: Iterable[str], prom: PromRound) -> dict[str, _Reading]:
        tasks = {name: self._start_read(name) for name in sorted(clusters)}
        waiting = [*tasks.values(), *prom.tasks]
        if waiting:
            # asyncio.wait neither raises on the deadline nor cancels what is late.
            await asyncio.wait(waiting, timeout=self._budget)
        prom.collect()
        return {name: _reading(task, self._budget) for name, task in tasks.items()}

    def _start_read(self, cluster: str) -> asyncio.Task[ClusterRead]:
        task = asyncio.create_task(self._live.read(cluster), name=f"live-read-{cluster}")
        self._late.add(task)
        task.add_done_callback(_forget(self._late))
        return task

    # -- lifecycle -----------------------------------------------------------------------------------
    async def _apply(self, identity: str, group: _Group) -> None:
        view, channel = group.view, group.channel
        prev = await self._store.get_group(channel, view.group_key)
        if prev is not None and prev.details.get("last_notification") == identity:
            return  # applied before a crash; its operations are already queued
        view = _with_history(view, prev)
        in_storm = None if prev is None else prev.details.get(IN_STORM)
        counted: str | None = None  # the storm this group is counted in, if any
        if prev is None:
            in_storm = counted = await self._storms.place(channel, view)
            if in_storm is None:
                await self._outbox.post(channel, view.group_key, self._render(view))
                await self._chart(identity, channel, view)
        elif isinstance(in_storm, str):
            await self._storms.report(channel, in_storm, view)
            counted = in_storm
        else:
            # A group that started a storm has its own message, and its alerts still count in the storm.
            counted = self._storms.recount(channel, view)
            if not (prev.status is AlertStatus.RESOLVED and view.status is GroupStatus.RESOLVED):
                await self._edit(identity, group, view, prev)
            if prev.status is AlertStatus.RESOLVED and view.status is GroupStatus.FIRING:
                await self._chart(identity, channel, view)  # firing again: a new episode, a new chart
        storm = in_storm if isinstance(in_storm, str) else None
        await self._save(identity, group, view, prev, storm, counted)

    async def _edit(self, identity: str, group: _Group, view: AlertGroupView, prev: AlertGroupState) -> None:
        await self._outbox.update(group.channel, view.group_key, self._render(view), identity)
        change = GroupChange(
            group_key=view.group_key,
            at=self._now(),
            new=tuple(group.by_fingerprint[f] for f in sorted(group.firing - prev.firing_fingerprints)),
            resolved=tuple(
                group.by_fingerprint[f] for f in sorted(group.resolved & prev.firing_fingerprints)
            ),
            group_status=view.status,
            started_at=view.started_at,
        )
        if change.meaningful:
            await self._outbox.reply(
                group.channel, view.group_key, change_reply(change, self._now()), identity
            )

    async def _chart(self, identity: str, channel: str, view: AlertGroupView) -> None:
        """The key series of the group's worst alert over the last hour, into its thread."""
        if self._prometheus is None or view.status is not GroupStatus.FIRING:
            return
        ask = chart_subject(view.firing, self._settings)
        image = None if ask is None else await self._prometheus.try_chart(ask, self._budget)
        if image is not None:
            # Keyed by the notification that opened the episode: a re-run after a crash uploads nothing new.
            await self._outbox.upload_png(
                channel,
                view.group_key,
                image.png,
                filename=image.filename,
                title=image.title,
                revision=f"chart:{identity}",
            )

    async def _save(
        self,
        identity: str,
        group: _Group,
        view: AlertGroupView,
        prev: AlertGroupState | None,
        storm: str | None,
        counted: str | None,
    ) -> None:
        # No re-read for the `ts` the delivery worker may have written meanwhile: saving None keeps it.
        firing = group.firing
        if view.truncated_alerts and prev is not None:
            # Alerts Alertmanager left out are not known to be resolved: keep them as firing.
            firing = (prev.firing_fingerprints | group.firing) - group.resolved
        details: dict[str, Any] = {**(prev.details if prev else {}), "last_notification": identity}
        if storm is not None:
            details[IN_STORM] = storm
        if counted is not None:
            # The group's share of the storm's count, durable with the group (the storm row lags).
            details[STORM_COUNT] = storm_count_details(counted, entries_of(view))
        # The labels of the firing alerts, for the Silence button's matchers (bounded: a group can be big).
        firing_labels = [dict(a.labels) for a in view.alerts if a.status is GroupStatus.FIRING][:50]
        if firing_labels:
            details[ALERT_LABELS] = firing_labels
        await self._store.save_group(
            AlertGroupState(
                channel=group.channel,
                group_key=view.group_key,
                status=AlertStatus(view.status.value),
                ts=None,
                first_firing_at=view.started_at.timestamp(),
                resolved_at=None if view.resolved_at is None else view.resolved_at.timestamp(),
                firing_fingerprints=firing,
                details=details,
            )
        )

    def _render(self, view: AlertGroupView) -> Message:
        return alert_group_message(view, self._now())

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)


# -- building a group's view -------------------------------------------------------------------------


def _forget(tasks: set[asyncio.Task[ClusterRead]]) -> Callable[[asyncio.Task[ClusterRead]], None]:
    def done(task: asyncio.Task[ClusterRead]) -> None:
        tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("a late live read failed: %s", task.exception())

    return done


def _reading(task: asyncio.Task[ClusterRead], budget: float) -> _Reading:
    if not task.done():
        return _Reading(None, None, LiveRead.missing(f"enrichment took longer than {budget:g}s"))
    if task.cancelled():
        return _Reading(None, None, LiveRead.missing("the live read was cancelled"))
    error = task.exception()
    if error is not None:
        log.error("live read failed: %s: %s", type(error).__name__, error)
        return _Reading(None, None, LiveRead.missing(f"the live read failed ({type(error).__name__})"))
    read = task.result()
    if read.snapshot is None:
        return _Reading(None, None, LiveRead.missing(read.unavailable or "no live state"))
    at = datetime.fromtimestamp(read.read_at, UTC)
    return _Reading(read.snapshot, read.window, LiveRead.read(at, read.replica))


def _build(
    webhook: AlertmanagerWebhook,
    channel: str,
    routed: list[_Routed],
    readings: Mapping[str, _Reading],
    prom: PromRound,
) -> _Group:
    unmatched = _Reading(None, None, LiveRead.missing(NO_CLUSTER))
    memo: dict[tuple[Any, ...], AlertDiagnosis] = {}
    views: dict[str, AlertView] = {}
    for r in routed:
        reading = unmatched if r.source is None else readings[r.source]
        views[r.alert.fingerprint] = _alert_view(r.alert, _diagnosis(r, reading, prom, memo))
    clusters = {r.cluster for r in routed}
    cluster = next(iter(clusters)) if len(clusters) == 1 else None
    sources = {r.source for r in routed}
    live = _merge_live([unmatched if c is None else readings[c] for c in sorted(sources, key=str)])
    alerts = tuple(views.values())
    firing = any(a.status is GroupStatus.FIRING for a in alerts)
    ended = [a.ends_at for a in alerts if a.ends_at is not None]
    view = AlertGroupView(
        group_key=webhook.group_key,
        status=GroupStatus.FIRING if firing else GroupStatus.RESOLVED,
        alerts=alerts,
        started_at=min(a.starts_at for a in alerts),
        live=live,
        cluster=cluster,
        resolved_at=None if firing or not ended else max(ended),
        truncated_alerts=webhook.truncated_alerts,
    )
    return _Group(
        channel=channel,
        view=view,
        firing=frozenset(r.alert.fingerprint for r in routed if r.alert.firing),
        resolved=frozenset(r.alert.fingerprint for r in routed if not r.alert.firing),
        by_fingerprint=views,
    )


def _diagnosis(
    r: _Routed, reading: _Reading, prom: PromRound, memo: dict[tuple[Any, ...], AlertDiagnosis]
) -> AlertDiagnosis:
    # A storm repeats the same alert on many HA replicas and group/versions: explain each shape once.
    labels = r.alert.labels
    shape = tuple(labels.get(k) for k in ("alertname", "target", "group_version", "pod", "severity"))
    key = (r.cluster, *shape)
    if key not in memo:
        # Prometheus' window, when it answered in time, is preferred to the delta of our own two reads.
        outcome = prom.outcome(r.alert.alertname, labels, r.cluster)
        window = outcome.window.delta if outcome and outcome.window else reading.window
        found = diagnose_alert(r.alert.alertname, labels, reading.snapshot, window)
        memo[key] = with_prometheus(found, outcome)
    return memo[key]


def _alert_view(alert: Alert, diagnosis: AlertDiagnosis) -> AlertView:
    return AlertView(
        name=alert.alertname or "unnamed alert",
        status=GroupStatus(alert.status.value),
        starts_at=alert.starts_at,
        labels=alert.labels,
        annotations=alert.annotations,
        ends_at=alert.ends_at,
        diagnosis=diagnosis,
    )


def _merge_live(readings: list[_Reading]) -> LiveRead:
    """One live line for a message whose alerts came from one or several clusters."""
    if len(readings) == 1:
        return readings[0].live
    missing = [r.live.unavailable for r in readings if not r.live.ok and r.live.unavailable]
    if missing:
        return LiveRead.missing("; ".join(dict.fromkeys(missing)))
    times = [r.live.read_at for r in readings if r.live.read_at is not None]
    return LiveRead.read(min(times)) if times else LiveRead.missing("no live state")


def _with_history(view: AlertGroupView, prev: AlertGroupState | None) -> AlertGroupView:
    """The view with the incident's start kept from earlier notifications (alerts come and go)."""
    if prev is None or prev.status is AlertStatus.RESOLVED or prev.first_firing_at is None:
        return view
    started = min(view.started_at, datetime.fromtimestamp(prev.first_firing_at, UTC))
    return replace(view, started_at=started)
