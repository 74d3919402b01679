"""The alert side's state of a group between notifications, as the pipeline saves it after each one.

A stale copy (`bot.domain.stale`: every alert it shows firing was seen resolved with the same startsAt,
from a lagging Alertmanager replica) is not applied; in a notification that brings something new too, the
stale alerts are shown resolved as they were seen (`staleness`), so they never turn the message back.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from bot.alerts.storm import entries_of
from bot.domain.alerts import AlertStatus
from bot.domain.impact import ImpactSample
from bot.domain.incident import FLAP_WINDOW_SECONDS, Flaps
from bot.domain.messages import AlertGroupView, AlertView, GroupChange, GroupStatus
from bot.domain.stale import Ended, SeenResolved
from bot.store.models import AlertGroupState, GroupFacts, StormShare

# How many firing alerts' labels a group keeps for the Silence button (a group can be big).
MAX_LABEL_SETS = 50


@dataclass(frozen=True)
class ChannelGroup:
    """One channel's share of a notification, ready to compare with the stored state."""

    channel: str
    view: AlertGroupView
    firing: frozenset[str]  # fingerprints firing in this notification
    resolved: frozenset[str]  # fingerprints reported resolved in this notification
    by_fingerprint: Mapping[str, AlertView]
    # This notification's live readings of the share's targets (the resolution summary's own counts).
    impact: tuple[ImpactSample, ...] = ()


def status_of(alerts: tuple[AlertView, ...]) -> tuple[GroupStatus, datetime | None]:
    """A group's status from its alerts: firing while any fires, else resolved when the last one ended."""
    if any(a.status is GroupStatus.FIRING for a in alerts):
        return GroupStatus.FIRING, None
    ended = [a.ends_at for a in alerts if a.ends_at is not None]
    return GroupStatus.RESOLVED, max(ended, default=None)


@dataclass(frozen=True)
class Staleness:
    """A channel's share of a notification judged against the alerts its group saw resolved."""

    group: ChannelGroup  # with its stale firing alerts shown resolved, as they were seen
    whole: bool  # every alert firing in it is stale and it brings nothing newer: not applied
    stale: frozenset[str] = frozenset()  # the fingerprints taken as older copies


def staleness(
    group: ChannelGroup,
    prev: AlertGroupState | None,
    now: float,
    active: Collection[tuple[str, datetime]] = (),
) -> Staleness:
    """Which of the notification's firing alerts are older copies of alerts the group saw resolved;
    none that Alertmanager lists `active` (fingerprint, startsAt to the millisecond, as its API says)."""
    if prev is None:
        return Staleness(group, whole=False)
    seen = prev.facts.seen_resolved
    ended = {
        fp: found
        for fp in group.firing
        if (found := seen.stale(fp, group.by_fingerprint[fp].starts_at, now)) is not None
        and (fp, to_millisecond(group.by_fingerprint[fp].starts_at)) not in active
    }
    if not ended:
        return Staleness(group, whole=False)
    known = {fp for fp in group.resolved if seen.ended(fp, group.by_fingerprint[fp].starts_at) is not None}
    news = group.resolved - (known - prev.firing_fingerprints)
    whole = set(ended) == group.firing and not news and not group.view.truncated_alerts
    return Staleness(_shown_resolved(group, ended), whole=whole, stale=frozenset(ended))


def to_millisecond(at: datetime) -> datetime:
    """`at` as Alertmanager's API writes it (truncated to the millisecond)."""
    return at.replace(microsecond=at.microsecond // 1000 * 1000)


def _shown_resolved(group: ChannelGroup, ended: Mapping[str, Ended]) -> ChannelGroup:
    views = {
        fp: replace(a, status=GroupStatus.RESOLVED, ends_at=ended[fp].ends_at) if fp in ended else a
        for fp, a in group.by_fingerprint.items()
    }
    alerts = tuple(views[fp] for fp in group.by_fingerprint)
    status, resolved_at = status_of(alerts)
    view = replace(group.view, alerts=alerts, status=status, resolved_at=resolved_at)
    stale = frozenset(ended)
    return replace(
        group, view=view, firing=group.firing - stale, resolved=group.resolved | stale, by_fingerprint=views
    )


def handled(prev: AlertGroupState, identity: str, notification_id: int) -> AlertGroupState:
    """The group as it was, with a notification recorded as handled (a replay of it is skipped too)."""
    facts = replace(prev.facts, last_notification=identity, last_notification_id=notification_id)
    return replace(prev, ts=None, facts=facts)


def applied_before(prev: AlertGroupState | None, identity: str, notification_id: int | None = None) -> bool:
    """Whether the notification was applied before a crash (its operations are already queued), or is
    older than the one applied last (stored before it: replayed after a stop that left both open)."""
    if prev is None:
        return False
    last_id = prev.facts.last_notification_id
    older = notification_id is not None and last_id is not None and notification_id < last_id
    return prev.facts.last_notification == identity or older


def with_history(view: AlertGroupView, prev: AlertGroupState | None) -> AlertGroupView:
    """The view with the incident's start and its worst state kept from earlier notifications (alerts
    come and go); a group firing again after it resolved starts a new incident."""
    if prev is None or prev.status is AlertStatus.RESOLVED:
        return view
    started = view.started_at
    if prev.first_firing_at is not None:
        started = min(started, datetime.fromtimestamp(prev.first_firing_at, UTC))
    return replace(view, started_at=started, worst_seen=prev.facts.worst_seen)


def refired(prev: AlertGroupState | None, view: AlertGroupView) -> bool:
    """Whether the group fires again after it had resolved (a resolve -> fire transition)."""
    return prev is not None and prev.status is AlertStatus.RESOLVED and view.status is GroupStatus.FIRING


def quiet_before(prev: AlertGroupState | None, view: AlertGroupView, now: float) -> float | None:
    """How long a group firing again had been resolved, when longer than the flap window: its message sits
    far up the channel by then, and an edit notifies nobody (None: not a re-fire, or a flap)."""
    if not refired(prev, view) or prev is None or prev.resolved_at is None:
        return None
    quiet = now - prev.resolved_at
    return quiet if quiet >= FLAP_WINDOW_SECONDS else None


def flaps_of(prev: AlertGroupState | None, view: AlertGroupView, now: float) -> Flaps:
    """The group's flaps once this notification is applied."""
    kept = Flaps() if prev is None else prev.facts.flaps
    return kept.record(now, refired=refired(prev, view))


def change_since(
    group: ChannelGroup, view: AlertGroupView, prev: AlertGroupState, at: datetime
) -> GroupChange:
    """What a notification changed in a group: alerts new since the last one, alerts now resolved."""
    return GroupChange(
        group_key=view.group_key,
        at=at,
        new=tuple(group.by_fingerprint[f] for f in sorted(group.firing - prev.firing_fingerprints)),
        resolved=tuple(group.by_fingerprint[f] for f in sorted(group.resolved & prev.firing_fingerprints)),
        group_status=view.status,
        started_at=view.started_at,
        ended_at=view.ended_at(at) if view.status is GroupStatus.RESOLVED else None,
    )


def worth_a_reply(change: GroupChange, prev: AlertGroupState) -> bool:
    """A change the thread's followers want a notification of: new alerts, the group resolved, or the
    group firing again. One alert of several resolving is left to the edits (and a member of an incident
    resolving while the incident fires: `change.group_status` is the incident's)."""
    if change.new:
        return True
    was_firing = prev.status is AlertStatus.FIRING
    return bool(change.resolved) and was_firing and change.group_status is GroupStatus.RESOLVED


def next_state(
    identity: str,
    group: ChannelGroup,
    view: AlertGroupView,
    prev: AlertGroupState | None,
    *,
    storm_thread: str | None,
    counted_in: str | None,
    now: float,
    notification_id: int | None = None,
) -> AlertGroupState:
    """The group's state once notification `identity` is applied at `now` (`ts` None keeps the stored one).

    `storm_thread`: the storm whose thread carries the group; `counted_in`: the storm that counts it.
    """
    firing = group.firing
    if view.truncated_alerts and prev is not None:
        # Alerts Alertmanager left out are not known to be resolved: keep them as firing.
        firing = (prev.firing_fingerprints | group.firing) - group.resolved
    return AlertGroupState(
        channel=group.channel,
        group_key=view.group_key,
        status=AlertStatus(view.status.value),
        ts=None,
        first_firing_at=view.started_at.timestamp(),
        resolved_at=None if view.resolved_at is None else view.resolved_at.timestamp(),
        firing_fingerprints=firing,
        facts=replace(
            _facts(identity, view, prev, storm_thread, counted_in),
            last_notification_id=notification_id,
            seen_resolved=_seen_resolved(group, prev, now),
        ),
    )


def _seen_resolved(group: ChannelGroup, prev: AlertGroupState | None, now: float) -> SeenResolved:
    kept = prev.facts.seen_resolved if prev is not None else SeenResolved()
    by_fp = group.by_fingerprint
    return kept.record(((fp, by_fp[fp].starts_at, by_fp[fp].ends_at) for fp in sorted(group.resolved)), now)


def _facts(
    identity: str,
    view: AlertGroupView,
    prev: AlertGroupState | None,
    storm_thread: str | None,
    counted_in: str | None,
) -> GroupFacts:
    kept = prev.facts if prev is not None else GroupFacts()
    labels = tuple(dict(a.labels) for a in view.alerts if a.status is GroupStatus.FIRING)[:MAX_LABEL_SETS]
    # Facts this function does not set (the incident's, the flaps) are kept: their writers set them.
    return replace(
        kept,
        last_notification=identity,
        storm_thread=storm_thread if storm_thread is not None else kept.storm_thread,
        # The group's share of the storm's count, durable with the group (the storm row lags).
        storm_share=kept.storm_share if counted_in is None else StormShare(counted_in, entries_of(view)),
        # Once the group has none firing, the last firing alerts' labels stay (a later Silence press).
        firing_labels=labels or kept.firing_labels,
        worst_seen=view.worst_now(),
    )
