"""One incident, one message: a new group whose live diagnosis names an open incident's cause joins it.

An incident is opened by a group posted on its own whose alerts name a cause (`bot.domain.incident`): its
`GroupFacts.cause` is the key (client cluster, target, cause) and its message is the incident's. A later
new group in the same channel whose diagnosis names the same key (a failing probe: the incident of its
cluster) is not posted: it becomes a member (`GroupFacts.incident`), shown on the incident's message as an
"also firing" line. Membership is for good: a member firing again later goes to the same message. The
message is firing while any of its groups fires; it is re-rendered when a member changes from its first
group's stored alerts (`GroupFacts.alerts`), read live in the member's round (`Anchor`, `companions`).

A member has no message of its own, so its share of the incident's thread (`MemberThread`) is one details
reply (`member_details_reply`: what joined and the shared cause, then every finding, the reason counts with
their meanings, the per-replica readings and the quantiles), named after the member (`member_reply`):
posted when it joins, edited in place by each later notification of the member, its header turning
resolved when the member resolves. Besides it, the thread gets only what a group's own thread would
(`worth_a_reply`): alerts added, the incident resolved with the member's last alert, the member firing
again; while it flaps, one note an hour instead.

Crash safety as the pipeline's: operations first (their outbox keys made from the notification and the
member, so a re-run queues nothing new), then the first group's row (its member list), then the member's
row (which records the notification), then the notification is closed; a reply whose post Slack took but
whose answer was lost is found in the thread by its metadata (`bot/delivery/send.py`), not posted again.
Which incidents are open is kept in memory per leadership term (`restore()` reads it back from the store),
so deciding costs no store scan.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import Enum
from typing import Any

from bot.alerts.grouping import Routed, route
from bot.alerts.outbox import DETAILS_DEFER, DETAILS_REPLY, Outbox
from bot.alerts.resolution import ResolutionDesk
from bot.alerts.state import ChannelGroup, change_since, next_state, with_history, worth_a_reply
from bot.domain.alerts import AlertmanagerWebhook, AlertStatus
from bot.domain.alerts_catalog import PROBE_FAILING
from bot.domain.findings import Severity
from bot.domain.impact import ImpactTally
from bot.domain.incident import (
    ACROSS_CLIENTS,
    FLAP_WINDOW_SECONDS,
    MAX_MEMBERS,
    Cause,
    CauseKey,
    Flaps,
    IncidentLine,
    IncidentView,
    OpenIncident,
    group_cause,
    leading_member,
    pick_incident,
    probe_subject,
)
from bot.domain.messages import AlertGroupView, GroupStatus, group_id
from bot.domain.moments import from_epoch
from bot.domain.resolution import Resolution
from bot.ports import Clock
from bot.render.alert_details import details_reply, member_details_reply
from bot.render.alert_message import alert_group_message
from bot.render.incident import flapping_reply
from bot.render.resolution import with_summary_line
from bot.render.slack import change_reply
from bot.store.base import GroupStore
from bot.store.models import AlertGroupState
from config.settings import Settings


def member_reply(member_key: str) -> str:
    """The name of a member group's details reply in its incident message's thread (one per member)."""
    return f"{DETAILS_REPLY}:{group_id(member_key)}"


class MemberThread:
    """Queues a member group's replies in its incident message's thread."""

    def __init__(self, outbox: Outbox, clock: Clock) -> None:
        self._outbox = outbox
        self._clock = clock

    async def details(
        self,
        identity: str,
        channel: str,
        incident: str,
        view: AlertGroupView,
        cause: Cause | None,
        *,
        heads: bool = False,
        whose: str | None = None,
    ) -> None:
        """The member's details reply in the thread of message `incident` (its first group's key):
        posted the first time, edited in place (once per notification `identity`) after; `heads`: the
        member pages hardest, so the message is headed by it; `whose`: its client, another than the
        message's."""
        body = member_details_reply(view, cause, self._now(), heads=heads, whose=whose)
        await self._outbox.reply_in_place(
            channel,
            incident,
            body,
            reply=member_reply(view.group_key),
            revision=identity,
            defer=DETAILS_DEFER,
        )

    async def first_details(self, identity: str, channel: str, view: AlertGroupView) -> None:
        """The first group's own details reply, edited from the reading a member's notification re-rendered
        the incident's message with: each version of the message and its details tell one reading."""
        body = details_reply(view, self._now())
        await self._outbox.reply_in_place(
            channel,
            view.group_key,
            body,
            reply=DETAILS_REPLY,
            revision=f"member:{identity}",
            defer=DETAILS_DEFER,
        )

    async def changes(
        self,
        identity: str,
        group: ChannelGroup,
        view: AlertGroupView,
        prev: AlertGroupState,
        flaps: Flaps,
        incident: AlertGroupView,
    ) -> Flaps:
        """A member's later notification, beyond its details: a reply when it is worth one, or, while it
        flaps, a note at most once an hour. The flaps as they are to be saved."""
        now, where = self._clock(), incident.group_key
        if flaps.flapping(now):
            if flaps.note_due(now):
                note = flapping_reply(view, flaps.count(now))
                await self._outbox.reply(group.channel, where, note, f"flapping:{identity}")
                return flaps.noted(now)
            return flaps
        # As the incident stands: "all resolved" only when its last group resolves, and a member resolving
        # while the incident fires is left to the edits (its line, its details reply's header).
        change = change_since(group, view, prev, self._now())
        change = replace(change, group_status=incident.status, started_at=incident.started_at)
        if worth_a_reply(change, prev):
            reply = change_reply(change, self._now())
            await self._outbox.reply(group.channel, where, reply, f"member:{identity}")
        return flaps

    def _now(self) -> datetime:
        return from_epoch(self._clock())


log = logging.getLogger(__name__)

MAX_STORED_ALERTS = 50  # alerts of an incident's first group kept to re-render its message
MAX_CANDIDATES = 5  # open incidents looked at for one new group


def members_of(first: AlertGroupState, known: Iterable[AlertGroupState]) -> list[AlertGroupState]:
    """The groups that joined the incident whose message is `first`'s, in the order they joined: each
    listed by it and pointing back to it (a member that left, or was reset, does not count)."""
    by_key = {g.group_key: g for g in known if g.channel == first.channel}
    found = (by_key.get(key) for key in first.facts.members)
    return [
        g for g in found if g is not None and g.facts.incident == first.group_key and _this_episode(g, first)
    ]


def _this_episode(member: AlertGroupState, first: AlertGroupState) -> bool:
    """Whether `member` belongs to `first`'s current episode: firing, or resolved since that began or
    within a flap window before (a flapping incident keeps its members; one resolved before a quiet that
    ended when `first` fired again is history)."""
    if first.status is AlertStatus.RESOLVED or member.status is not AlertStatus.RESOLVED:
        return True
    began, ended = first.first_firing_at, member.resolved_at
    return began is None or ended is None or ended >= began - FLAP_WINDOW_SECONDS


@dataclass(frozen=True)
class Anchor:
    """An incident's first group, with its stored alerts routed for this round's live reads."""

    state: AlertGroupState
    webhook: AlertmanagerWebhook
    routed: tuple[Routed, ...]


Rebuild = Callable[[Anchor], AlertGroupView]


@dataclass(frozen=True)
class Share:
    """One channel's share of a notification as it is applied: its group and view (with its history), the
    group's previous row and flaps, the notification's stored id and the readings tallied for its impact."""

    identity: str
    group: ChannelGroup
    view: AlertGroupView
    prev: AlertGroupState | None
    flaps: Flaps
    notification_id: int | None = None
    readings: ImpactTally | None = None


class Placement(Enum):
    """Where a notification's group goes."""

    OWN = "own"  # its own message (the pipeline's usual path)
    MEMBER = "member"  # an incident's message carries it: done
    ORPHANED = "orphaned"  # a member whose incident's message is gone: post it as a new group


EXTERNAL_URL = "externalURL"


def stored_alerts(group: ChannelGroup) -> tuple[dict[str, Any], ...]:
    """The group's alerts as Alertmanager sent them (bounded), to rebuild its view later."""
    found = []
    for fingerprint, a in list(group.by_fingerprint.items())[:MAX_STORED_ALERTS]:
        ends = "0001-01-01T00:00:00Z" if a.ends_at is None else a.ends_at.isoformat()
        found.append(
            {
                "status": a.status.value,
                "labels": dict(a.labels),
                "annotations": dict(a.annotations),
                "startsAt": a.starts_at.isoformat(),
                "endsAt": ends,
                "fingerprint": fingerprint,
                "generatorURL": a.generator_url,
                # The notification's own field, kept with each alert: the rebuilt view links the same
                # Alertmanager silence page (`stored_webhook` moves it back).
                EXTERNAL_URL: group.view.external_url,
            }
        )
    return tuple(found)


def stored_webhook(state: AlertGroupState) -> AlertmanagerWebhook | None:
    """The group's last alerts as a notification, None when none are stored (or they no longer parse)."""
    if not state.facts.alerts:
        return None
    firing = any(a.get("status") == "firing" for a in state.facts.alerts)
    alerts = [{k: v for k, v in a.items() if k != EXTERNAL_URL} for a in state.facts.alerts]
    external = next((a[EXTERNAL_URL] for a in state.facts.alerts if isinstance(a.get(EXTERNAL_URL), str)), "")
    body = {
        "version": "4",
        "groupKey": state.group_key,
        "status": "firing" if firing else "resolved",
        "externalURL": external,
        "alerts": alerts,
    }
    try:
        # As JSON: the webhook's times are strict RFC 3339 strings, which Python-side validation refuses.
        return AlertmanagerWebhook.model_validate_json(json.dumps(body))
    except ValueError as error:
        log.error("the stored alerts of group %r do not parse: %s", state.group_key, error)
        return None


def key_of(view: AlertGroupView) -> CauseKey | None:
    """The incident key a group's live diagnosis names (one cluster and target), if any."""
    firing = view.firing
    if view.cluster is None or not firing:
        return None
    diagnoses = [a.diagnosis for a in sorted(firing, key=lambda a: -a.severity)]
    if _is_probe(view):
        found = probe_subject(diagnoses)
        return None if found is None else CauseKey(view.cluster, found[0], found[1])
    targets = {a.target for a in firing}
    cause = group_cause(diagnoses)
    if len(targets) != 1 or None in targets or cause is None:
        return None
    return CauseKey(view.cluster, str(targets.pop()), cause)


def _is_probe(view: AlertGroupView) -> bool:
    return all(a.name == PROBE_FAILING for a in view.alerts)


def _routed_probe(routed: Sequence[Routed]) -> bool:
    return all(r.alert.alertname == PROBE_FAILING for r in routed)


def line_of(state: AlertGroupState, now: float) -> IncidentLine:
    """A member group's line on the incident's message, from its stored state."""
    labels = state.facts.firing_labels
    names = tuple(dict.fromkeys(lab.get("alertname", "") for lab in labels if lab.get("alertname")))
    targets = sorted({lab["target"] for lab in labels if lab.get("target")})
    gvs = tuple(sorted({lab["group_version"] for lab in labels if lab.get("group_version")}))
    severities = [Severity.from_label(lab.get("severity", "")) or Severity.WARNING for lab in labels]
    probes = sorted({f"{lab.get('namespace', '')}/{lab['cronjob']}" for lab in labels if lab.get("cronjob")})
    return IncidentLine(
        names=names,
        target=targets[0] if len(targets) == 1 else None,
        group_versions=gvs,
        severity=max(severities, default=Severity.WARNING),
        firing=state.status is AlertStatus.FIRING,
        since=None if state.first_firing_at is None else from_epoch(state.first_firing_at),
        resolved_at=None if state.resolved_at is None else from_epoch(state.resolved_at),
        flaps=state.facts.flaps.count(now),
        cronjob=probes[0] if len(probes) == 1 else None,
        alerts=max(len(labels), 1),
        cluster=None if state.facts.cause is None else state.facts.cause.cluster,
    )


def shown(
    view: AlertGroupView,
    own: AlertGroupState | None,
    members: Sequence[AlertGroupState],
    flaps: Flaps,
    now: float,
) -> AlertGroupView:
    """The view as its message shows it: with the groups that joined it and its flap count; firing while
    any of its groups fires, resolved when the last one resolves."""
    # A member's client is named only when it is another than the message's own.
    lines = tuple(_whose(line_of(m, now), view.cluster) for m in members)
    names = tuple(dict.fromkeys([*view.names(), *(n for line in lines for n in line.names)]))
    cause = None if own is None or own.facts.cause is None else own.facts.cause.cause
    incident = IncidentView(cause=cause, names=names, members=lines, flaps=flaps.count(now))
    if not incident.shown:
        return view
    if view.status is GroupStatus.FIRING or incident.any_member_firing:
        return replace(view, incident=incident, status=GroupStatus.FIRING, resolved_at=None)
    ends = [t for t in (view.resolved_at, *(line.resolved_at for line in lines)) if t is not None]
    return replace(view, incident=incident, resolved_at=max(ends, default=None))


def _whose(line: IncidentLine, own: str | None) -> IncidentLine:
    return replace(line, cluster=None) if line.cluster == own else line


class IncidentDesk:
    """Decides which new groups join an open incident, and keeps incidents' messages and threads."""

    def __init__(
        self,
        settings: Settings,
        store: GroupStore,
        outbox: Outbox,
        clock: Clock,
        resolutions: ResolutionDesk | None = None,
    ) -> None:
        self._settings = settings
        # The incident's resolution summary when a member's resolve ends it (`bot.alerts.resolution`).
        self._resolutions = resolutions
        self._store = store
        self._outbox = outbox
        self._clock = clock
        self._thread = MemberThread(outbox, clock)
        # Open incidents per channel, by their first group's key.
        self._open: dict[str, dict[str, OpenIncident]] = {}

    async def restore(self) -> None:
        """Which incidents are open, from the store (another replica may have led meanwhile)."""
        self._open.clear()
        states = await self._store.groups()
        by_key = {(s.channel, s.group_key): s for s in states}
        for state in states:
            if _may_open(state):
                members = [by_key.get((state.channel, m)) for m in state.facts.members]
                self.track(state, [m for m in members if m is not None])

    def track(self, anchor: AlertGroupState, members: Iterable[AlertGroupState]) -> None:
        """Keep an incident's first group's openness current after it or one of its members is saved."""
        key = anchor.facts.cause
        if key is None or not _may_open(anchor):
            return
        channel = self._open.setdefault(anchor.channel, {})
        firing = anchor.status is AlertStatus.FIRING or any(m.status is AlertStatus.FIRING for m in members)
        taken = any(i.key == key and i.anchor != anchor.group_key for i in channel.values())
        if firing and not taken:
            opened = anchor.first_firing_at if anchor.first_firing_at is not None else self._clock()
            channel.setdefault(anchor.group_key, OpenIncident(key, anchor.group_key, opened))
        elif not firing:
            channel.pop(anchor.group_key, None)

    # -- before enrichment ---------------------------------------------------------------------------
    async def anchors(
        self, channel: str, routed: Sequence[Routed], prev: AlertGroupState | None
    ) -> list[Anchor]:
        """The incidents a channel's share of a notification may go to: its own (a member's), else the
        open ones of its cluster and target (a failing probe: of its cluster), their alerts routed."""
        if prev is not None and prev.facts.incident is not None:
            keys = [prev.facts.incident]
        elif prev is None:
            keys = [i.anchor for i in self._candidates(channel, routed)]
        else:
            return []
        found = []
        for key in keys:
            anchor = await self._anchor(channel, key)
            if anchor is not None:
                found.append(anchor)
        return found

    def _candidates(self, channel: str, routed: Sequence[Routed]) -> list[OpenIncident]:
        clusters = {r.cluster for r in routed}
        targets = {r.alert.labels.get("target") for r in routed}
        if len(clusters) != 1 or None in clusters:
            return []
        probe = _routed_probe(routed)
        if not probe and (len(targets) != 1 or None in targets):
            return []
        cluster, target = clusters.pop(), targets.pop()
        open_here = self._open.get(channel, {}).values()
        fits = [i for i in open_here if i.key.cluster == cluster and (probe or i.key.target == target)]
        # A target this client shares with others: their incidents about it may be this group's too.
        client = self._settings.cluster(str(cluster))
        mine = {t.name for t in client.targets} if client is not None else set()
        fits += [
            i
            for i in open_here
            if i.key.cluster != cluster
            and i.key.cause in ACROSS_CLIENTS
            and (i.key.target in mine if probe else i.key.target == target)
            and len(self._settings.forwarders(i.key.target)) > 1
        ]
        return sorted(fits, key=lambda i: i.opened_at)[:MAX_CANDIDATES]

    async def _anchor(self, channel: str, key: str) -> Anchor | None:
        state = await self._store.get_group(channel, key)
        if state is None or not _may_open(state):
            # Folded into a storm's thread after it opened (or gone): its message carries no incident.
            log.info("incident group %r in %s no longer has a message of its own", key, channel)
            self._open.get(channel, {}).pop(key, None)
            return None
        webhook = stored_webhook(state)
        routed = () if webhook is None else tuple(route(self._settings, webhook).get(channel, ()))
        if webhook is None or not routed:
            return None
        return Anchor(state, webhook, routed)

    # -- after diagnosis -----------------------------------------------------------------------------
    async def take(self, share: Share, anchors: Sequence[Anchor], rebuild: Rebuild) -> Placement:
        """Apply the group to the incident it belongs to or joins now, if any (the notification's stored
        id is kept on a member's row, as on any group's: an older one replayed later is not applied)."""
        prev = share.prev
        if prev is not None and prev.facts.incident is not None:
            anchor = next((a for a in anchors if a.state.group_key == prev.facts.incident), None)
            if anchor is None:
                return Placement.ORPHANED
            await self._member(share, anchor, rebuild)
            return Placement.MEMBER
        if prev is not None:
            return Placement.OWN
        anchor = self._joins(share.view, anchors)
        if anchor is None:
            return Placement.OWN
        await self._member(share, anchor, rebuild)
        return Placement.MEMBER

    def _joins(self, view: AlertGroupView, anchors: Sequence[Anchor]) -> Anchor | None:
        if view.status is not GroupStatus.FIRING:
            return None
        chosen = pick_incident(key_of(view), view.cluster, self._open_of(anchors), probe=_is_probe(view))
        anchor = None if chosen is None else next(a for a in anchors if a.state.group_key == chosen.anchor)
        if anchor is not None and len(anchor.state.facts.members) >= MAX_MEMBERS:
            return None
        return anchor

    def _open_of(self, anchors: Sequence[Anchor]) -> list[OpenIncident]:
        found = []
        for a in anchors:
            incident = self._open.get(a.state.channel, {}).get(a.state.group_key)
            if incident is not None:
                found.append(incident)
        return found

    async def _member(self, share: Share, anchor: Anchor, rebuild: Rebuild) -> None:
        identity, group, view, prev, flaps = share.identity, share.group, share.view, share.prev, share.flaps
        channel, first = group.channel, anchor.state
        now = self._clock()
        state = next_state(
            identity,
            group,
            view,
            prev,
            storm_thread=None,
            counted_in=None,
            notification_id=share.notification_id,
            now=now,
        )
        # Its own client on the incident's key: a member of another client than the first's says whose.
        key = first.facts.cause
        if key is not None and view.cluster is not None:
            key = replace(key, cluster=view.cluster)
        facts = replace(state.facts, incident=first.group_key, cause=key, flaps=flaps, impact=share.readings)
        state = replace(state, facts=facts)
        keys = tuple(dict.fromkeys([*first.facts.members, view.group_key]))
        first = replace(first, ts=None, facts=replace(first.facts, members=keys))
        members = await self._members(first, {view.group_key: state})
        own = with_history(rebuild(anchor), first)
        incident = shown(own, first, members, first.facts.flaps, now)
        message = alert_group_message(incident, from_epoch(now))
        ended = await self._ended(first, prev, incident, members)
        if ended is not None:
            message = with_summary_line(message, ended)
        await self._outbox.update(channel, first.group_key, message, f"member:{identity}")
        await self._thread.first_details(identity, channel, own)
        cause = None if first.facts.cause is None else first.facts.cause.cause
        lead = leading_member(own.severity, incident.incident)
        heads = lead is not None and lead == _whose(line_of(state, now), incident.cluster)
        whose = None if view.cluster == incident.cluster else view.cluster
        await self._thread.details(identity, channel, first.group_key, view, cause, heads=heads, whose=whose)
        if ended is not None and prev is not None and self._resolutions is not None:
            change = change_since(group, view, prev, from_epoch(now))
            change = replace(change, group_status=incident.status, started_at=incident.started_at)
            await self._resolutions.post(ended, from_epoch(now), change_reply(change, from_epoch(now)))
        elif prev is not None:
            noted = await self._thread.changes(identity, group, view, prev, flaps, incident)
            state = replace(state, facts=replace(state.facts, flaps=noted))
        # The first group's row before the member's: the member's records the notification as applied.
        await self._store.save_group(first)
        await self._store.save_group(state)
        self.track(first, members)

    async def _ended(
        self,
        first: AlertGroupState,
        prev: AlertGroupState | None,
        incident: AlertGroupView,
        members: list[AlertGroupState],
    ) -> Resolution | None:
        """The incident's resolution when this member's resolve ends it (its first group resolved before),
        from the first group's and every member's readings."""
        ends = (
            prev is not None and prev.status is AlertStatus.FIRING and incident.status is GroupStatus.RESOLVED
        )
        if self._resolutions is None or not ends:
            return None
        tallies = [t for g in (first, *members) if (t := g.facts.impact) is not None and t.readings]
        return await self._resolutions.resolve(first, incident, ImpactTally(), extra=tallies)

    async def members(self, state: AlertGroupState | None) -> list[AlertGroupState]:
        """The member groups of an incident's first group (those whose rows still point back to it)."""
        return [] if state is None or not state.facts.members else await self._members(state, {})

    async def _members(
        self, first: AlertGroupState, fresh: Mapping[str, AlertGroupState]
    ) -> list[AlertGroupState]:
        rows = [
            fresh.get(key) or await self._store.get_group(first.channel, key) for key in first.facts.members
        ]
        return members_of(first, [row for row in rows if row is not None])

    def opening(self, state: AlertGroupState, view: AlertGroupView, group: ChannelGroup) -> AlertGroupState:
        """A group with its own message, as saved: it may open an incident (its cause key), and its
        alerts are kept to re-render its message when a member changes."""
        if not _may_open(state) or state.facts.incident is not None:
            return state
        cause = state.facts.cause or key_of(view)
        if cause is None:
            return state
        return replace(state, facts=replace(state.facts, cause=cause, alerts=stored_alerts(group)))


def _may_open(state: AlertGroupState) -> bool:
    """A group with a message of its own: not a storm's row, not in a storm's thread, not a member."""
    return state.storm is None and state.facts.storm_thread is None and state.facts.incident is None
