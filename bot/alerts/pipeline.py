"""From an accepted Alertmanager notification to Slack operations in the durable outbox.

Per notification: each alert is routed to its client cluster's channel (else `slack.default_channel`),
the clusters involved are read live within the enrichment budget (what is late is marked unavailable,
never waited for), every alert is diagnosed, and each channel's share of the group becomes one view that
is compared with the group's stored state:

    new group                -> a compact post and its details reply in the thread (or, in a storm, a
                                row of the storm's table in the summary's thread)
    new group, same cause    -> an "also firing" line on the open incident's message, and its own
      as an open incident       details reply in its thread (`bot/alerts/incident.py`,
                                `bot/alerts/incident.py`); its later notifications edit both
    later notification       -> edit both in place, plus a thread reply when alerts were added (a group
                                posted before the storm it counts in: only when its status changes,
                                while the storm lasts, the summary carrying the rest; once more, to
                                its newest content, when the storm ends)
    everything resolved      -> edit both to the resolved form (with the resolution summary's line), plus
                                the summary as its reply (`bot.alerts.resolution`); never a new post
    firing again             -> edit both back, plus a reply
    flapping (fired again    -> the message shows the count; no reply per change, one note an hour
      twice within an hour)
    a lagging replica's      -> nothing, judged before any read (`bot/alerts/stale_check.py`: unless
      stale copy                Alertmanager lists its alerts active)

The details reply carries everything the compact message leaves out and is edited in place: never a new
reply per update. The other replies say only what an engineer following the thread wants to be notified
of: new alerts, the group resolved, the group firing again (an alert of several resolving shows in the
edits, not as a reply).

Crash safety: operations are enqueued first, then the group state is saved (recording the notification's
identity), then the notification is closed (with the last group's save, in one transaction, when no storm
row holds it open). Re-running a notification after a crash at any step finds
either its identity in the group state (nothing to do) or the same outbox keys (duplicates change nothing).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from bot.alerts import blast
from bot.alerts.budget import ObserveWait, Waits, in_hand
from bot.alerts.change_enrich import ChangeHistory, ChangeRound, group_report, instance_ref
from bot.alerts.grouping import Reading, Routed, build, pods_reading, reading, route
from bot.alerts.incident import Anchor, IncidentDesk, Placement, Share, shown
from bot.alerts.log_enrich import LogRound, LogSource
from bot.alerts.outbox import DETAILS_DEFER, DETAILS_REPLY, Outbox
from bot.alerts.prom_enrich import PromEnricher, PromRound, chart_subject
from bot.alerts.resolution import ResolutionDesk, tally
from bot.alerts.stale_check import ActiveAlerts, StaleCheck
from bot.alerts.state import (
    ChannelGroup,
    applied_before,
    change_since,
    flaps_of,
    next_state,
    quiet_before,
    refired,
    with_history,
    worth_a_reply,
)
from bot.alerts.storm import StormDesk, StormPolicy
from bot.domain.alerts import AlertmanagerWebhook, AlertStatus
from bot.domain.incident import Flaps
from bot.domain.messages import AlertGroupView, GroupStatus
from bot.domain.moments import from_epoch
from bot.domain.resolution import Resolution
from bot.domain.verdict import TargetPods
from bot.live import ClusterRead
from bot.ports import Clock, SilenceList
from bot.render.alert_details import details_reply
from bot.render.alert_message import alert_group_message
from bot.render.blocks import Message
from bot.render.incident import flapping_reply
from bot.render.resolution import with_summary_line
from bot.render.slack import change_reply
from bot.store.base import AlertStore
from bot.store.models import AlertGroupState, StoredNotification
from config.settings import Settings

log = logging.getLogger(__name__)


class LiveStateReader(Protocol):
    """Live proxy state per cluster (`bot.live.LiveState` is one); failures are returned, never raised."""

    async def read(self, cluster: str) -> ClusterRead: ...

    def ready(self, cluster: str) -> ClusterRead | None:
        """What `read` would return without waiting (a fresh shared read), else None."""

    async def cancel_pending(self) -> None:
        """Stop reads still in flight (shutdown): shared reads outlive the callers that stop waiting."""


class TargetPodsSource(Protocol):
    """Target control-plane pods by target name (`bot.reads.triage.SharedTargetPods` is one)."""

    async def read(self, target: str) -> TargetPods: ...

    def ready(self, target: str) -> TargetPods | None:
        """What `read` would return without waiting, else None."""

    async def cancel_pending(self) -> None: ...


class AlertPipeline:
    """Turns stored notifications into outbox operations; one `process()` at a time."""

    def __init__(
        self,
        settings: Settings,
        store: AlertStore,
        outbox: Outbox,
        live: LiveStateReader,
        *,
        storm: StormPolicy | None = None,
        clock: Clock = time.time,
        pacing: Clock | None = None,
        prometheus: PromEnricher | None = None,
        logs: LogSource | None = None,
        pods: TargetPodsSource | None = None,
        observe_wait: ObserveWait = lambda part, seconds: None,
        alertmanager: ActiveAlerts | None = None,
        silences: SilenceList | None = None,
        arrivals: Callable[[], float | None] | None = None,
        changes: ChangeHistory | None = None,
    ) -> None:
        self._settings = settings
        # What changed before each alert, on its client and target (a fleet from the platform only).
        self._changes = changes
        # The newest arrival this process noted (None: none since it started), if every notification
        # comes through it (one replica): a storm's table then waits for no pause that is over.
        self._arrivals = arrivals
        # The summary of each resolved episode of a group's own message (`bot.alerts.resolution`).
        client = None if prometheus is None else prometheus.client
        self._resolutions = ResolutionDesk(settings, store, outbox, client, silences)
        # Asked before a share judged a stale copy is skipped (`bot.alerts.stale_check`).
        self._stale = StaleCheck(settings, alertmanager, clock)
        # Each notification's wait for its upstream reads, per part (`proxybot_enrichment_wait_seconds`).
        self._observe_wait = observe_wait
        self._prometheus = prometheus
        self._logs = logs
        # With it, each alert's target gets the quick-triage verdict (its pods read within the budget).
        self._pods = pods
        self._store = store
        self._outbox = outbox
        self._live = live
        self._clock = clock
        self._budget = settings.enrichment.timeout_seconds
        self._storms = StormDesk(
            store,
            outbox,
            storm or StormPolicy(),
            pacing or clock,
            live,
            self._resolutions.storm_resolved,
            told=clock,
        )
        self._incidents = IncidentDesk(settings, store, outbox, clock, self._resolutions)
        # Reads that outlived the budget keep running (they fill LiveState's cache for the next alert).
        self._late: set[asyncio.Future[ClusterRead]] = set()
        self._late_pods: set[asyncio.Future[TargetPods]] = set()
        # Notifications applied and waiting for their storm's row to be saved before they are closed.
        self._held: set[int] = set()
        # The last one applied: `expire_storms` asks whether it is still the newest arrival (a queue that
        # empties on a full batch is not settled by `process`; the worker's next look finds it empty).
        self._applied_last: StoredNotification | None = None

    async def restore(self) -> None:
        """Pick up state kept in the store (storms in progress, open incidents) after a restart."""
        self._applied_last = None  # another replica may have applied newer ones since
        await self._storms.restore()
        await self._incidents.restore()

    async def process(self, notification: StoredNotification, *, settle: bool = False) -> bool:
        """Enqueue the notification's Slack operations, save the groups' state, close the notification.

        Storm summaries and tables changed by it are sent when they are due. With `settle` (the worker sets
        it when the queue is empty after this one) the notification is closed only once every storm's
        row counts it, so no pending notification means the storm rows are complete: False when it is
        held open for that (`expire_storms` closes it when the rows are saved).
        """
        if notification.id in self._held:
            # Applied already and still pending until its storm's row is saved: applied again, it would
            # set its group back over any newer notification of the group applied meanwhile.
            return False
        webhook = notification.webhook
        routes = route(self._settings, webhook)
        prevs = {channel: await self._store.get_group(channel, webhook.group_key) for channel in routes}
        verdicts = {
            channel: await self._stale.judge(notification, channel, routed, prevs[channel])
            for channel, routed in routes.items()
            if not applied_before(prevs[channel], notification.identity, notification.id)
        }
        for skipped in (v.skip for v in verdicts.values() if v.skip is not None):
            await self._store.save_group(skipped)  # a stale copy: recorded as handled, nothing read for it
        routes = {c: routed for c, routed in routes.items() if c in verdicts and verdicts[c].skip is None}
        anchors = {c: await self._incidents.anchors(c, routed, prevs[c]) for c, routed in routes.items()}
        # The incidents' first groups are read with the notification's own alerts: a member's change
        # re-renders their message.
        every = [r for rs in routes.values() for r in rs] + [r for a in _flat(anchors) for r in a.routed]
        clusters = {r.source for r in every if r.source is not None}
        prom = PromRound(self._prometheus, self._settings)
        prom.start((r.alert.alertname, r.alert.labels, r.cluster) for r in every)
        logs = LogRound(self._logs, self._settings, self._budget)
        logs.start(sorted({r.cluster for r in every if r.cluster is not None}))
        targets = {r.alert.labels.get("target") for r in every if r.cluster}
        # Every client behind a shared target is read in the same round, for its blast radius.
        behind = blast.sources(self._settings, every)
        clusters |= {source for found in behind.values() for source in found}
        platform = self._settings.platform
        changes = ChangeRound(self._changes, self._budget, every=platform.refresh if platform else 0.0)
        changes.start(self._ends(every, targets))
        readings, pods = await self._enrich(clusters, prom, logs, {t for t in targets if t}, changes)

        def share(webhook: AlertmanagerWebhook, channel: str, routed: list[Routed]) -> ChannelGroup:
            """One channel's share of the round, with the blast radius of its shared targets and what
            changed on its ends before it fired."""
            group = build(webhook, channel, routed, readings, prom, logs, pods)
            radii = blast.radii(self._settings, routed, readings, behind)
            report = group_report(changes, self._settings, group.view)
            if not radii and report is None:
                return group
            return replace(group, view=replace(group.view, blast=radii, changes=report))

        def rebuild(anchor: Anchor) -> AlertGroupView:
            return share(anchor.webhook, anchor.state.channel, list(anchor.routed)).view

        # Closed with the last group's save (one store call), unless the storm rows may hold it open.
        closed, last = False, next(reversed(routes), None)
        for channel, routed in routes.items():
            group = verdicts[channel].on(share(webhook, channel, routed))
            closing = notification.id if channel == last and not settle else None
            closed = await self._apply(
                notification, group, prevs[channel], anchors.get(channel, []), rebuild, prom, closing
            )
        self._applied_last = notification
        if not await self._storms.flush(settle=settle, caught_up=self._caught_up) and settle:
            self._held.add(notification.id)
            return False
        if not closed:
            await self._store.mark_processed(notification.id)
        return True

    def _caught_up(self) -> float | None:
        """When the last notification applied arrived, if it is still the newest there is: None once a
        newer one arrived (stored or being stored), before any was applied, or when others take
        notifications in too (replicas sharing the store)."""
        applied = self._applied_last
        if self._arrivals is None or applied is None:
            return None
        last = self._arrivals()
        return None if last is not None and last > applied.received_at else applied.received_at

    async def expire_storms(self) -> list[str]:
        """Send storm summaries and tables that are due and close the notifications held for them; end
        storms quiet long enough (their keys)."""
        ended = await self._storms.expire()
        if await self._storms.flush(settle=True, caught_up=self._caught_up):
            for held in sorted(self._held):
                await self._store.mark_processed(held)
            self._held.clear()
        return ended

    def next_deadline(self) -> float | None:
        """When `expire_storms` next has something to do (wall-clock seconds), if ever."""
        return self._storms.next_deadline()

    async def aclose(self) -> None:
        """Cancel live reads still running past their budget."""
        late: list[asyncio.Future[Any]] = [*self._late, *self._late_pods]
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        await self._live.cancel_pending()
        if self._logs is not None:
            await self._logs.cancel_pending()
        if self._pods is not None:
            await self._pods.cancel_pending()
        if self._prometheus is not None:
            await self._prometheus.cancel_pending()
        if self._changes is not None:
            await self._changes.cancel_pending()

    # -- routing and enrichment ----------------------------------------------------------------------
    def _ends(self, every: Iterable[Routed], targets: Iterable[str | None]) -> set[str]:
        """The platform instances whose history the round reads: each alert's client and target."""
        if self._changes is None:
            return set()
        named = {r.cluster for r in every if r.cluster}
        clients = [c for name in named if (c := self._settings.cluster(name)) is not None]
        return {ref for c in clients if (ref := instance_ref(c)) is not None} | {t for t in targets if t}

    async def _enrich(
        self,
        clusters: Iterable[str],
        prom: PromRound,
        logs: LogRound,
        targets: set[str],
        changes: ChangeRound,
    ) -> tuple[dict[str, Reading], dict[str, TargetPods] | None]:
        waits = Waits()
        tasks = {name: self._start_read(name) for name in sorted(clusters)}
        pod_tasks = {t: self._start_pods(self._pods, t) for t in sorted(targets)} if self._pods else {}
        for part, started in (
            ("live", tasks.values()),
            ("pods", pod_tasks.values()),
            ("prometheus", prom.tasks),
            ("logs", logs.tasks),
            ("changes", changes.tasks),
        ):
            waits.track(part, started)
        waiting: list[asyncio.Future[Any]] = [
            *tasks.values(),
            *pod_tasks.values(),
            *prom.tasks,
            *logs.tasks,
            *changes.tasks,
        ]
        if waiting:
            if not all(read.done() for read in waiting):  # in a storm, most often all are in hand
                # asyncio.wait neither raises on the deadline nor cancels what is late.
                await asyncio.wait(waiting, timeout=self._budget)
            waits.report(self._observe_wait, self._budget)
        prom.collect()
        logs.collect()
        changes.collect()
        readings = {name: reading(task, self._budget) for name, task in tasks.items()}
        if self._pods is None:
            return readings, None
        return readings, {t: pods_reading(task, self._budget) for t, task in pod_tasks.items()}

    def _start_pods(self, source: TargetPodsSource, target: str) -> asyncio.Future[TargetPods]:
        task = in_hand(source.ready(target), functools.partial(source.read, target), f"pods-read-{target}")
        if not task.done():
            self._late_pods.add(task)
            task.add_done_callback(self._late_pods.discard)
        return task

    def _start_read(self, cluster: str) -> asyncio.Future[ClusterRead]:
        read = functools.partial(self._live.read, cluster)
        task = in_hand(self._live.ready(cluster), read, f"live-read-{cluster}")
        if not task.done():
            self._late.add(task)
            task.add_done_callback(_forget(self._late))
        return task

    # -- lifecycle -----------------------------------------------------------------------------------
    async def _apply(
        self,
        notification: StoredNotification,
        group: ChannelGroup,
        prev: AlertGroupState | None,
        anchors: list[Anchor],
        rebuild: Callable[[Anchor], AlertGroupView],
        prom: PromRound,
        closing: int | None = None,
    ) -> bool:
        """Apply one channel's share; True when it closed `closing` with the group's save."""
        identity = notification.identity
        view, channel = group.view, group.channel
        view = with_history(view, prev)
        readings = tally(prev, group)
        in_storm = None if prev is None else prev.facts.storm_thread
        flaps = flaps_of(prev, view, self._clock())
        if in_storm is None:
            share = Share(identity, group, view, prev, flaps, notification.id, readings)
            placed = await self._incidents.take(share, anchors, rebuild)
            if placed is Placement.MEMBER:
                # The incident's message carries it; the channel's storm counts its alerts too.
                self._storms.count_member(channel, view, new=prev is None)
                return False
            if placed is Placement.ORPHANED:
                prev = None  # its incident's message is gone: it gets its own
        members = await self._incidents.members(prev)
        if quiet_before(prev, view, self._clock()) is not None:  # not a flap: the last episode's members
            members = [m for m in members if m.status is AlertStatus.FIRING]  # ended with it
        counted: str | None = None  # the storm this group is counted in, if any
        held_message: dict[str, Any] | None = None  # its message's content, held back while its storm lasts
        if prev is None:
            in_storm = counted = await self._storms.place(channel, view)
            if in_storm is None:
                await self._outbox.post(channel, view.group_key, self._render(view, prev, members, flaps))
                await self._details(identity, channel, view)
                await self._chart(identity, channel, view, prom)
        elif in_storm is not None:
            await self._storms.report(channel, in_storm, view)
            counted = in_storm
        else:
            # A group that started a storm has its own message, and its alerts still count in the storm.
            counted = self._storms.recount(channel, view)
            # While that storm lasts its summary carries the group's changes: its own message and thread
            # are edited only when its status changes (resolved, firing again).
            folded = counted is not None and not _status_changed(prev, view)
            ended = None
            if _ends_episode(prev, view, members):
                joined = [t for m in members if (t := m.facts.impact) is not None and t.readings]
                ended = await self._resolutions.resolve(prev, view, readings, extra=joined)
            if folded:  # what its message would show now, sent once the storm ends (`StormDesk`)
                held_message = self._render(view, prev, members, flaps).as_kwargs()
            elif not (prev.status is AlertStatus.RESOLVED and view.status is GroupStatus.RESOLVED):
                flaps = await self._edit(identity, group, view, prev, members, flaps, ended)
            if refired(prev, view) and not flaps.flapping(self._clock()):
                await self._chart(identity, channel, view, prom)  # firing again: a new episode, a new chart
        state = next_state(
            identity,
            group,
            view,
            prev,
            storm_thread=in_storm,
            counted_in=counted,
            now=self._clock(),
            notification_id=notification.id,
        )
        facts = replace(state.facts, flaps=flaps, impact=readings, held_message=held_message)
        state = self._incidents.opening(replace(state, facts=facts), view, group)
        # No re-read for the `ts` the delivery worker may have written meanwhile: saving None keeps it.
        if closing is None:
            await self._store.save_group(state)
        else:
            await self._store.save_group_closing(state, closing)
        self._incidents.track(state, members)
        return closing is not None

    async def _edit(
        self,
        identity: str,
        group: ChannelGroup,
        view: AlertGroupView,
        prev: AlertGroupState,
        members: list[AlertGroupState],
        flaps: Flaps,
        ended: Resolution | None = None,
    ) -> Flaps:
        """Edit the message (with the resolution summary's line once `ended`) and its details; reply with
        what changed, or, while it flaps, a note at most once an hour. The flaps as they are to be saved."""
        message = self._render(view, prev, members, flaps)
        if ended is not None:
            message = with_summary_line(message, ended)
        await self._outbox.update(group.channel, view.group_key, message, identity)
        await self._details(identity, group.channel, view)
        now = self._clock()
        if flaps.flapping(now):
            if ended is not None:
                await self._resolutions.record(ended)  # its line on the message; no reply per flap
            if not flaps.note_due(now):
                return flaps
            note = flapping_reply(view, flaps.count(now))
            await self._outbox.reply(group.channel, view.group_key, note, f"flapping:{identity}")
            return flaps.noted(now)
        change = change_since(group, view, prev, self._now())
        if members and any(m.status is AlertStatus.FIRING for m in members):
            change = replace(change, group_status=GroupStatus.FIRING)  # the incident fires on
        if ended is not None:  # the summary is the resolved reply
            await self._resolutions.post(ended, self._now(), change_reply(change, self._now()))
        elif worth_a_reply(change, prev):
            quiet = quiet_before(prev, view, now)  # firing again after a quiet: told in the channel too
            reply = change_reply(change, self._now(), quiet=quiet)
            await self._outbox.reply(group.channel, view.group_key, reply, identity)
        return flaps

    async def _details(self, identity: str, channel: str, view: AlertGroupView) -> None:
        """The group's details reply: posted with its first message, edited in place after."""
        body = details_reply(view, self._now())
        await self._outbox.reply_in_place(
            channel, view.group_key, body, reply=DETAILS_REPLY, revision=identity, defer=DETAILS_DEFER
        )

    async def _chart(self, identity: str, channel: str, view: AlertGroupView, prom: PromRound) -> None:
        """The key series of the group's worst alert over the last hour, into its thread.

        Not when Prometheus did not bring this alert's window within the budget: asking again would hold
        the notification, and every one behind it, for a second budget.
        """
        if self._prometheus is None or view.status is not GroupStatus.FIRING:
            return
        ask = chart_subject(view.firing, self._settings)
        if ask is not None and not prom.answered(ask):
            log.warning("chart of %s not asked for: Prometheus did not bring its window", ask.target)
            return
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

    def _render(
        self, view: AlertGroupView, prev: AlertGroupState | None, members: list[AlertGroupState], flaps: Flaps
    ) -> Message:
        return alert_group_message(shown(view, prev, members, flaps, self._clock()), self._now())

    def _now(self) -> datetime:
        return from_epoch(self._clock())


def _status_changed(prev: AlertGroupState, view: AlertGroupView) -> bool:
    """The group resolved, or fires again: its own message must say so, storm or not."""
    return (prev.status is AlertStatus.FIRING) != (view.status is GroupStatus.FIRING)


def _ends_episode(prev: AlertGroupState, view: AlertGroupView, members: list[AlertGroupState]) -> bool:
    """Whether this notification resolves the message's firing episode (an incident's members included)."""
    if prev.status is not AlertStatus.FIRING or view.status is not GroupStatus.RESOLVED:
        return False
    return not any(m.status is AlertStatus.FIRING for m in members)


def _flat(anchors: dict[str, list[Anchor]]) -> list[Anchor]:
    return [a for found in anchors.values() for a in found]


def _forget(tasks: set[asyncio.Future[ClusterRead]]) -> Callable[[asyncio.Future[ClusterRead]], None]:
    def done(task: asyncio.Future[ClusterRead]) -> None:
        tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("a late live read failed: %s", task.exception())

    return done
