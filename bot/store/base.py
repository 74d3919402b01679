"""The store's interface: what every backend (SQLite for one replica, PostgreSQL for several) provides.

Both backends behave the same; `tests/bot/store/` runs one suite against each. Replicas share one PostgreSQL
store (SQLite is one process's: the shipped single-replica variant); work that must happen once is claimed
in the store, by the store's `owner` (one per process):

- a **lease** (`hold_lease`) names the one process that runs a worker (the alert pipeline, the outbox)
  until it stops renewing it; another takes over once it has expired;
- a **digest period** is claimed (`claim_digest`) by one process, which renews the claim while it builds;
- a **post in flight** is marked (`mark_sending`) before chat.postMessage, so whoever sends the row next
  looks for the message in Slack before posting it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from types import TracebackType
from typing import Any, Protocol, Self

from bot.domain.alerts import AlertmanagerWebhook, AlertStatus
from bot.domain.changes import InstanceFacts, InstanceVersion
from bot.domain.escalation import Escalation, EscalationOutcome
from bot.domain.resolution import EventKind, OncallEvent
from bot.domain.verification import Verification, VerificationOutcome
from bot.store.digests import DigestRun, FleetSample
from bot.store.models import (
    Accepted,
    Acknowledgement,
    AlertGroupState,
    DigestClaim,
    Enqueued,
    FleetReading,
    OutboxItem,
    OutboxKind,
    StoredNotification,
)


class NotificationSink(Protocol):
    """Where the webhook puts what it accepted (the store, or the app's counting wrapper of it)."""

    async def accept(self, raw: bytes, webhook: AlertmanagerWebhook, received_at: float) -> Accepted:
        """Store a notification durably (committed when this returns); an equal one is kept once."""
        ...


class NotificationStore(NotificationSink, Protocol):
    """Accepted notifications: the webhook stores them, the alert worker takes and closes them."""

    async def pending(
        self, limit: int | None = None, *, besides: AbstractSet[int] = frozenset()
    ) -> list[StoredNotification]:
        """Accepted notifications not yet processed, oldest first, at most `limit`; those whose id is in
        `besides` (the caller has them already) are left out, neither counted nor parsed again."""
        ...

    async def pending_count(self) -> int: ...

    async def notification(self, notification_id: int) -> StoredNotification | None:
        """An accepted notification by id, processed or not; None when unknown (pruned) or unreadable."""
        ...

    async def mark_processed(self, notification_id: int) -> bool:
        """Close a notification; False when it was unknown or already processed."""
        ...


class GroupStore(Protocol):
    """Alert groups' rows: the pipeline and its desks save them, delivery and the buttons read them."""

    async def get_group(self, channel: str, group_key: str) -> AlertGroupState | None: ...

    async def save_group(self, state: AlertGroupState) -> AlertGroupState:
        """Insert or replace the group's state; returns it with `updated_at` stamped."""
        ...

    async def record_post(self, channel: str, group_key: str, ts: str, channel_id: str) -> None:
        """Store where the group's message is in Slack (the delivery side's part of the group's row)."""
        ...

    async def groups(
        self, channel: str | None = None, status: AlertStatus | None = None
    ) -> list[AlertGroupState]:
        """Groups, optionally of one channel and/or status, least recently updated first."""
        ...

    async def firing_posts(self) -> list[AlertGroupState]:
        """Firing groups with a message of their own (no storm rows), oldest first."""
        ...

    async def firing_messages(self) -> list[AlertGroupState]:
        """Firing posted messages, storm summaries included, oldest first (their members are not: a
        member of an incident or a storm has no message of its own)."""
        ...

    async def acknowledge(self, ack: Acknowledgement) -> Acknowledgement:
        """Store `ack` unless its group's episode is acknowledged already; the episode's holder after."""
        ...

    async def acknowledgement(self, channel: str, group_key: str) -> Acknowledgement | None:
        """The group's acknowledgement, when it is of the group's current firing episode."""
        ...

    async def unacknowledge(self, channel: str, group_key: str, episode: float) -> bool:
        """Drop the acknowledgement of the group's `episode`; whether there was one."""
        ...

    async def record_event(self, event: OncallEvent) -> bool:
        """Record an on-call event once per its `key`; False when that key was recorded before."""
        ...

    async def episode_events(self, channel: str, group_key: str, episode: float) -> list[OncallEvent]:
        """The events of one firing episode of a group, oldest first."""
        ...

    async def events_since(self, kind: EventKind, since: float) -> list[OncallEvent]:
        """Every event of `kind` at or after `since`, oldest first (the digest's on-call figures)."""
        ...

    async def channel_id_of(self, channel: str) -> str | None:
        """The Slack ID of a configured channel, as some group's post in it answered; None if unknown."""
        ...

    async def save_fleet_reading(self, platform: str, prefix: str, instances: str) -> None:
        """Keep the list of instances `platform` answered (replacing the last), stamped now."""
        ...

    async def last_fleet_reading(self, platform: str) -> FleetReading | None:
        """The last list of instances kept for `platform`; None if none was ever read."""
        ...

    async def record_silence_made(self, silence_id: str, created_by: str) -> None:
        """Remember that proxybot made this silence, with the author it wrote (kept once per id)."""
        ...

    async def silences_made(self, ids: Sequence[str]) -> dict[str, str]:
        """Of these silence ids, those proxybot made, each with the author it wrote."""
        ...


class EscalationStore(Protocol):
    """Escalation deadlines of firing episodes (`bot.alerts.escalation` is their one writer; the resolution
    summary reads whether an episode's was sent)."""

    async def schedule_escalation(self, escalation: Escalation) -> Escalation:
        """Store the episode's escalation unless it has one already; the stored one (its first deadline)."""
        ...

    async def due_escalations(self, now: float, limit: int = 50) -> list[Escalation]:
        """Pending escalations due by `now`, earliest first."""
        ...

    async def close_escalation(self, escalation: Escalation, outcome: EscalationOutcome) -> bool:
        """Record how a pending escalation ended; False when it was closed already (or unknown)."""
        ...

    async def escalation(self, channel: str, group_key: str, episode: float) -> Escalation | None: ...


class VerificationStore(Protocol):
    """Verifications after resolve of resolved episodes (`bot.alerts.verification` is their one writer)."""

    async def schedule_verification(self, verification: Verification) -> Verification:
        """Store the episode's verification unless it has one already; the stored one (its first due time)."""
        ...

    async def due_verifications(self, now: float, limit: int = 50) -> list[Verification]:
        """Pending verifications due by `now`, earliest first."""
        ...

    async def close_verification(self, verification: Verification, outcome: VerificationOutcome) -> bool:
        """Record how a pending verification ended; False when it was closed already (or unknown)."""
        ...

    async def verification(self, channel: str, group_key: str, episode: float) -> Verification | None: ...


class ChangeStore(Protocol):
    """Each platform instance's history of what defines its proxy (`bot.fleet.history` records it from each
    reading; alert enrichment reads it, `bot.alerts.change_enrich`)."""

    async def record_instance_versions(
        self, platform: str, versions: Sequence[tuple[str, InstanceFacts]], *, keep: int, keep_for: float
    ) -> list[str]:
        """Record, stamped now, each instance's facts that differ from its newest version (an instance seen
        first is its first version); those recorded. Each instance keeps its newest version, and of the
        others the last `keep` read within `keep_for` seconds."""
        ...

    async def instance_history(self, platform: str, instance: str, since: float) -> list[InstanceVersion]:
        """The instance's versions read after `since` and the one before them, oldest first (none when
        nothing of it was ever recorded)."""
        ...


class AlertStore(NotificationStore, GroupStore, EscalationStore, Protocol):
    """What the alert worker and its pipeline need: the notifications, the groups, and the escalations
    (a resolution summary says whether its episode's was sent)."""

    async def save_group_closing(self, state: AlertGroupState, notification_id: int) -> AlertGroupState:
        """`save_group`, and the notification closed in the same transaction (one store call where a
        storm's notifications made two; the group's state is never saved without the close, nor after)."""
        ...


class OutboxStore(Protocol):
    """The Slack outbox's rows (`bot/delivery/` is their only user)."""

    async def enqueue(
        self,
        key: str,
        channel: str,
        kind: OutboxKind,
        payload: Mapping[str, Any],
        *,
        not_before: float | None = None,
        replace_pending: bool = False,
    ) -> Enqueued:
        """Queue a Slack operation once per `key`.

        A key seen before is a duplicate and changes nothing, except that `replace_pending=True` swaps
        the payload of a row still pending (debounced edits: the newest content wins, one call is made).
        """
        ...

    async def due(self, now: float, limit: int = 50) -> list[OutboxItem]:
        """Pending operations whose time has come, earliest first (then in enqueue order).

        Rows are not leased one by one: the process holding the outbox lease sends them.
        """
        ...

    async def outbox_item(self, key: str) -> OutboxItem | None: ...
    async def last_payload(self, channel: str, key: str, prefix: str) -> Mapping[str, Any] | None:
        """The payload of the newest outbox row of `channel` keyed `key` or starting with `prefix` (a
        message's post and its edits: `bot.delivery.keys`), or None."""
        ...

    async def next_attempt_at(self) -> float | None:
        """When the earliest pending operation becomes due (None when nothing is pending)."""
        ...

    async def complete(self, item_id: int, result: Mapping[str, Any] | None = None) -> bool:
        """Mark delivered, keeping Slack's answer; False when the row was not pending."""
        ...

    async def mark_sending(self, item_id: int, at: float | None, *, fence: str | None = None) -> bool:
        """Record that a post of the row starts at `at` (its outcome unknown until Slack answers); None
        clears the mark (Slack answered with a refusal: no message was made). With `fence`, only while
        this process holds that lease; False when it does not, or the row is no longer pending."""
        ...

    async def retry_later(self, item_id: int, at: float, error: str) -> bool:
        """Count a failed try and schedule the next one at `at`; False when the row was not pending."""
        ...

    async def give_up(self, item_id: int, error: str) -> bool:
        """Stop retrying an operation Slack will never accept (kept as `failed` with the reason)."""
        ...

    async def depth(self) -> int:
        """Pending operations, due or not."""
        ...

    async def oldest_pending_at(self) -> float | None:
        """When the oldest pending operation was enqueued (None when nothing is pending)."""
        ...


class DigestStore(Protocol):
    """Digest periods claimed and posted, and the fleet samples behind the charts."""

    async def claim_digest(self, period: str, ttl: float = 60.0) -> tuple[DigestClaim, float | None]:
        """Claim `period` for `ttl` seconds: CLAIMED (post it), POSTED (it went out) or BUSY with the
        time the other process's claim runs out (it may still post it)."""
        ...

    async def renew_digest(self, period: str, ttl: float = 60.0) -> bool:
        """Extend this process's claim on `period`; False when the claim is no longer ours."""
        ...

    async def finish_digest(self, period: str, summary: Mapping[str, Any]) -> None:
        """Record `period` as posted, with the summary the next digest compares against."""
        ...

    async def last_digest(self, other_than: str | None = None) -> DigestRun | None:
        """The most recently posted digest, other than `other_than`."""
        ...

    async def add_fleet_sample(self, sample: FleetSample, keep_after: float) -> None:
        """Store a fleet sample for digest charts; older samples than `keep_after` are dropped."""
        ...

    async def fleet_samples(self, since: float) -> list[FleetSample]: ...


class LeaseStore(Protocol):
    """The leases that name the one process running a worker."""

    @property
    def owner(self) -> str:
        """Who this process is in leases and claims (host, pid and a random part)."""
        ...

    async def hold_lease(self, name: str, ttl: float) -> float | None:
        """Take or renew the lease `name` for `ttl` seconds; its expiry when this process holds it now,
        None when another process holds it (and it has not expired)."""
        ...

    async def release_lease(self, name: str) -> None:
        """Give the lease up (a clean stop), so another process need not wait for it to expire."""
        ...


class Store(
    AlertStore,
    EscalationStore,
    VerificationStore,
    ChangeStore,
    OutboxStore,
    DigestStore,
    LeaseStore,
    Protocol,
):
    """Accepted notifications, alert group lifecycle, the Slack outbox, digests and leases; each part is
    its own protocol above, for the code that needs only that part."""

    @property
    def backend(self) -> str:
        """`sqlite` or `postgresql`, for logs and /readyz."""
        ...

    # -- housekeeping --------------------------------------------------------------------------------
    async def check_writable(self) -> None:
        """Commit one small write (the readiness probe); StoreError when the store cannot write now."""
        ...

    async def prune(self, before: float) -> int:
        """Delete processed notifications and finished outbox rows last touched before `before`."""
        ...

    async def close(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None: ...
