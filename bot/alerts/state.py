"""The alert side's state of a group between notifications, as the pipeline saves it after each one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from bot.alerts.storm import entries_of
from bot.domain.alerts import AlertStatus
from bot.domain.incident import Flaps
from bot.domain.messages import AlertGroupView, AlertView, GroupChange, GroupStatus
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
    notification_id: int | None = None,
) -> AlertGroupState:
    """The group's state once notification `identity` is applied (`ts` None keeps the stored one).

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
            _facts(identity, view, prev, storm_thread, counted_in), last_notification_id=notification_id
        ),
    )


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
