"""What the store hands out: plain immutable values, no SQL and no connection behind them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bot.domain.acknowledgement import Acknowledgement as Acknowledgement  # handed out by the store
from bot.domain.alert_summary import WorstSeen
from bot.domain.alerts import AlertmanagerWebhook, AlertStatus
from bot.domain.impact import ImpactTally
from bot.domain.incident import CauseKey, Flaps
from bot.domain.stale import SeenResolved
from bot.domain.storm import StormEntry


@dataclass(frozen=True, slots=True)
class Accepted:
    """The outcome of accepting a notification: its row, and whether an equal one was already stored."""

    id: int
    duplicate: bool


@dataclass(frozen=True, slots=True)
class StoredNotification:
    """An accepted notification as stored: the body exactly as received and its validated form."""

    id: int
    identity: str
    received_at: float
    raw: bytes
    webhook: AlertmanagerWebhook


@dataclass(frozen=True, slots=True)
class StormShare:
    """A group's share of one storm's count: the storm's key and one entry per alert of the group."""

    storm: str
    entries: tuple[StormEntry, ...]


@dataclass(frozen=True, slots=True)
class GroupFacts:
    """What the alert side keeps of a group between notifications (the delivery side keeps `ts`)."""

    # The notification applied last: a re-run after a crash finds it and queues nothing again.
    last_notification: str | None = None
    # Its row id: a notification stored before it and replayed after it (a stop that left both open) is
    # older than what the message shows, and is not applied again over it.
    last_notification_id: int | None = None
    # The storm whose thread carries the group instead of a message of its own.
    storm_thread: str | None = None
    # The group's share of the storm it is counted in, durable with the group (the storm's row lags).
    storm_share: StormShare | None = None
    # The labels of the firing alerts, for the Silence button's matchers (bounded: a group can be big).
    firing_labels: tuple[Mapping[str, str], ...] = ()
    # The worst state the group's current incident reached, for its resolved message.
    worst_seen: WorstSeen | None = None
    # The incident the group's message carries (as its first message) or joined: its cause key.
    cause: CauseKey | None = None
    # For a group that joined another's incident: that group's key (its message carries this one).
    incident: str | None = None
    # For the first message of an incident: the groups that joined it, in the order they joined.
    members: tuple[str, ...] = ()
    # The last notification's alerts as Alertmanager sent them (bounded; kept by incidents' first
    # groups): the incident's message is re-rendered from them, read live, when a member changes.
    alerts: tuple[Mapping[str, Any], ...] = ()
    # The group's resolve -> fire transitions in the flap window, and its last note about flapping.
    flaps: Flaps = field(default_factory=Flaps)
    # The alerts seen resolved, by fingerprint (bounded): a copy still showing them firing with the same
    # startsAt, from a lagging Alertmanager replica, is older than what the message shows.
    seen_resolved: SeenResolved = field(default_factory=SeenResolved)
    # The firing episode's own readings of its targets' failed requests and peers (the resolution
    # summary's impact without Prometheus); started afresh with each episode.
    impact: ImpactTally | None = None
    # A group posted before the storm that counts it: what its own message would show now (`text`,
    # `blocks`), held back while the storm's summary carries its changes, and sent once the storm ends.
    held_message: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class StormRecord:
    """A storm summary's own state, kept on its row `storm:<channel>:<n>` by the storm desk."""

    started_at: float
    last_new_at: float
    ended_at: float | None = None
    posted: bool = False
    # Every group's entries as of the storm's last save, by group key.
    entries: Mapping[str, tuple[StormEntry, ...]] = field(default_factory=dict)
    # The revision of the table of targets uploaded into its thread (replaced, the old one is deleted).
    table: str | None = None
    # When the summary and table were last sent (they change at most once per refresh).
    refreshed_at: float | None = None


@dataclass(frozen=True, slots=True)
class AlertGroupState:
    """What proxybot knows of one Alertmanager alert group in one Slack channel across notifications.

    The alert side writes every field but `ts` and `channel_id`, which the delivery side writes when the
    group's message is posted (`Store.record_post`).
    """

    channel: str
    group_key: str
    status: AlertStatus
    # Slack `ts` of the group's message once it has been posted; None until then.
    ts: str | None = None
    first_firing_at: float | None = None
    resolved_at: float | None = None
    firing_fingerprints: frozenset[str] = frozenset()
    facts: GroupFacts = GroupFacts()
    # Set on a storm summary's row only (its `group_key` is a storm key).
    storm: StormRecord | None = None
    updated_at: float | None = None
    # The Slack ID of `channel` (which may be a `#name`), from the post's answer; None until posted,
    # and for messages stored before proxybot kept it.
    channel_id: str | None = None


class OutboxKind(StrEnum):
    """The Slack operations the outbox carries."""

    POST = "post"
    UPDATE = "update"
    REPLY = "reply"
    REPLY_EDIT = "reply_edit"  # an edit of one of a message's replies, in place
    UPLOAD = "upload"
    DELETE_FILE = "delete_file"  # the files of an earlier upload (a storm's replaced table)


class Withdrawal(StrEnum):
    """What became of a group's queued post when a storm asked for it back (`Delivery.withdraw_post`)."""

    FOLDED = "folded"  # it never goes out: withdrawn now, or before into the same storm
    UNQUEUED = "unqueued"  # no post was ever queued for the group
    OUT = "out"  # it went out, is going out right now, was folded into another storm, or was given up


class OutboxState(StrEnum):
    """Where an outbox operation is: waiting (possibly for a retry), delivered, or given up."""

    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Enqueued:
    """The outcome of enqueueing: the row, whether the key existed, and whether its payload was replaced."""

    id: int
    duplicate: bool
    replaced: bool = False


@dataclass(frozen=True, slots=True)
class OutboxItem:
    """One Slack operation in the outbox."""

    id: int
    key: str
    channel: str
    kind: OutboxKind
    payload: Mapping[str, Any]
    state: OutboxState
    # Failed tries so far (retry_later and give_up count one each; a success does not).
    attempts: int
    next_attempt_at: float
    created_at: float
    last_error: str | None = None
    result: Mapping[str, Any] | None = None
    # When a chat.postMessage of this row was last started without a definite answer (a timeout, a crash
    # of the sender): Slack may hold the message, so the next try looks for it first (`Store.mark_sending`).
    sent_at: float | None = None


class DigestClaim(StrEnum):
    """The answer to claiming a digest period."""

    CLAIMED = "claimed"  # this process builds and posts it
    POSTED = "posted"  # it went out already
    BUSY = "busy"  # another process is building it right now (its claim is live)


@dataclass(frozen=True, slots=True)
class FleetReading:
    """The last list of instances a platform answered (JSON, as it came), its prefix, and when."""

    prefix: str
    instances: str
    read_at: float
