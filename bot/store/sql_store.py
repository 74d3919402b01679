"""The one implementation of the store (`bot.store.base.Store`), over either backend.

Each store method is written once here: it reads the clock, names this process where a lease or claim
needs it, and hands the operation of its table's module (`groups`, `outbox`, ...; `bot.store.steps`) to
the backend, which runs it as one transaction: `bot.store.sqlite` on its store thread,
`bot.store.postgres` on a pooled connection. What the two backends do differently is in those modules
alone: how they accept a notification (SQLite commits concurrent ones together) and how they open,
run and close.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from types import TracebackType
from typing import Any, ParamSpec, Protocol, Self, TypeVar

from bot.domain.alerts import AlertmanagerWebhook, AlertStatus
from bot.domain.changes import InstanceFacts, InstanceVersion
from bot.domain.escalation import Escalation, EscalationOutcome
from bot.domain.resolution import EventKind, OncallEvent
from bot.domain.verification import Verification, VerificationOutcome
from bot.ports import Clock
from bot.store import acks as ack_sql
from bot.store import digests as digest_sql
from bot.store import fleet_readings as fleet_sql
from bot.store import groups as group_sql
from bot.store import instance_changes as changes_sql
from bot.store import leases as lease_sql
from bot.store import notifications as notification_sql
from bot.store import oncall as oncall_sql
from bot.store import outbox as outbox_sql
from bot.store import silences_made as silences_sql
from bot.store import write_probe as probe_sql
from bot.store.digests import DigestRun, FleetSample
from bot.store.escalations import ESCALATIONS
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
from bot.store.notifications import PendingNotification
from bot.store.steps import Steps
from bot.store.verifications import VERIFICATIONS

T = TypeVar("T")
P = ParamSpec("P")


class Backend(Protocol):
    """A database the store's operations run on, each as one transaction."""

    name: str

    async def run(self, operation: Callable[P, Steps[T]], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """`operation(*args, **kwargs)`, run to its answer; StoreError when the database fails it. The
        operation may be started again (a PostgreSQL connection found dead): it is built here, not given."""
        ...

    async def accept(self, arrival: PendingNotification) -> Accepted: ...

    async def close(self) -> None: ...


class SqlStore:
    """The store on a backend: every method of `bot.store.base.Store`, documented there."""

    def __init__(self, backend: Backend, clock: Clock, owner: str) -> None:
        self._db = backend
        self._clock = clock
        self._owner = owner

    @property
    def backend(self) -> str:
        return self._db.name

    @property
    def owner(self) -> str:
        return self._owner

    # -- notifications -------------------------------------------------------------------------------
    async def accept(self, raw: bytes, webhook: AlertmanagerWebhook, received_at: float) -> Accepted:
        return await self._db.accept(PendingNotification(raw, webhook, received_at))

    async def pending(
        self, limit: int | None = None, *, besides: AbstractSet[int] = frozenset()
    ) -> list[StoredNotification]:
        return await self._db.run(notification_sql.pending, limit, self._clock(), besides)

    async def pending_count(self) -> int:
        return await self._db.run(notification_sql.pending_count)

    async def notification(self, notification_id: int) -> StoredNotification | None:
        return await self._db.run(notification_sql.by_id, notification_id)

    async def mark_processed(self, notification_id: int) -> bool:
        return await self._db.run(notification_sql.mark_processed, notification_id, self._clock())

    # -- alert groups --------------------------------------------------------------------------------
    async def get_group(self, channel: str, group_key: str) -> AlertGroupState | None:
        return await self._db.run(group_sql.get, channel, group_key)

    async def save_group(self, state: AlertGroupState) -> AlertGroupState:
        return await self._db.run(group_sql.save, state, self._clock())

    async def save_group_closing(self, state: AlertGroupState, notification_id: int) -> AlertGroupState:
        return await self._db.run(group_sql.save, state, self._clock(), closing=notification_id)

    async def record_post(self, channel: str, group_key: str, ts: str, channel_id: str) -> None:
        await self._db.run(group_sql.record_post, channel, group_key, ts, channel_id, self._clock())

    async def groups(
        self, channel: str | None = None, status: AlertStatus | None = None
    ) -> list[AlertGroupState]:
        return await self._db.run(group_sql.listing, channel, status)

    async def firing_posts(self) -> list[AlertGroupState]:
        return await self._db.run(group_sql.firing_posts)

    async def firing_messages(self) -> list[AlertGroupState]:
        return await self._db.run(group_sql.firing_messages)

    async def channel_id_of(self, channel: str) -> str | None:
        return await self._db.run(group_sql.channel_id_of, channel)

    # -- acknowledgements ----------------------------------------------------------------------------
    async def acknowledge(self, ack: Acknowledgement) -> Acknowledgement:
        return await self._db.run(ack_sql.take, ack)

    async def acknowledgement(self, channel: str, group_key: str) -> Acknowledgement | None:
        return await self._db.run(ack_sql.current, channel, group_key)

    async def unacknowledge(self, channel: str, group_key: str, episode: float) -> bool:
        return await self._db.run(ack_sql.drop, channel, group_key, episode)

    # -- escalations ---------------------------------------------------------------------------------
    async def schedule_escalation(self, escalation: Escalation) -> Escalation:
        return await self._db.run(ESCALATIONS.schedule, escalation)

    async def due_escalations(self, now: float, limit: int = 50) -> list[Escalation]:
        return await self._db.run(ESCALATIONS.due, now, limit)

    async def close_escalation(self, escalation: Escalation, outcome: EscalationOutcome) -> bool:
        return await self._db.run(ESCALATIONS.close, escalation, outcome, self._clock())

    async def escalation(self, channel: str, group_key: str, episode: float) -> Escalation | None:
        return await self._db.run(ESCALATIONS.get, Escalation(channel, group_key, episode, 0.0))

    # -- verifications after resolve -----------------------------------------------------------------
    async def schedule_verification(self, verification: Verification) -> Verification:
        return await self._db.run(VERIFICATIONS.schedule, verification)

    async def due_verifications(self, now: float, limit: int = 50) -> list[Verification]:
        return await self._db.run(VERIFICATIONS.due, now, limit)

    async def close_verification(self, verification: Verification, outcome: VerificationOutcome) -> bool:
        return await self._db.run(VERIFICATIONS.close, verification, outcome, self._clock())

    async def verification(self, channel: str, group_key: str, episode: float) -> Verification | None:
        return await self._db.run(VERIFICATIONS.get, Verification(channel, group_key, episode, 0.0))

    # -- on-call events ------------------------------------------------------------------------------
    async def record_event(self, event: OncallEvent) -> bool:
        return await self._db.run(oncall_sql.record, event)

    async def episode_events(self, channel: str, group_key: str, episode: float) -> list[OncallEvent]:
        return await self._db.run(oncall_sql.of_episode, channel, group_key, episode)

    async def events_since(self, kind: EventKind, since: float) -> list[OncallEvent]:
        return await self._db.run(oncall_sql.of_kind, kind, since)

    # -- the fleet read from the platform ------------------------------------------------------------
    async def save_fleet_reading(self, platform: str, prefix: str, instances: str) -> None:
        await self._db.run(fleet_sql.save, platform, prefix, instances, self._clock())

    async def last_fleet_reading(self, platform: str) -> FleetReading | None:
        return await self._db.run(fleet_sql.last, platform)

    # -- each platform instance's history of what defines its proxy -----------------------------------
    async def record_instance_versions(
        self, platform: str, versions: Sequence[tuple[str, InstanceFacts]], *, keep: int, keep_for: float
    ) -> list[str]:
        now = self._clock()
        return await self._db.run(changes_sql.record, platform, versions, now, keep, now - keep_for)

    async def instance_history(self, platform: str, instance: str, since: float) -> list[InstanceVersion]:
        return await self._db.run(changes_sql.history, platform, instance, since)

    # -- the silences proxybot made ------------------------------------------------------------------
    async def record_silence_made(self, silence_id: str, created_by: str) -> None:
        await self._db.run(silences_sql.record, silence_id, created_by, self._clock())

    async def silences_made(self, ids: Sequence[str]) -> dict[str, str]:
        return await self._db.run(silences_sql.makers, ids) if ids else {}

    # -- outbox --------------------------------------------------------------------------------------
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
        now = self._clock()
        due_at = now if not_before is None else not_before
        op = (key, channel, kind, payload)
        return await self._db.run(outbox_sql.enqueue, op, due_at, now, replace_pending)

    async def due(self, now: float, limit: int = 50) -> list[OutboxItem]:
        return await self._db.run(outbox_sql.due, now, limit)

    async def outbox_item(self, key: str) -> OutboxItem | None:
        return await self._db.run(outbox_sql.by_key, key)

    async def last_payload(self, channel: str, key: str, prefix: str) -> Mapping[str, Any] | None:
        return await self._db.run(outbox_sql.last_payload, channel, key, prefix)

    async def next_attempt_at(self) -> float | None:
        return await self._db.run(outbox_sql.next_attempt_at)

    async def oldest_pending_at(self) -> float | None:
        return await self._db.run(outbox_sql.oldest_pending_at)

    async def complete(self, item_id: int, result: Mapping[str, Any] | None = None) -> bool:
        return await self._db.run(outbox_sql.complete, item_id, result, self._clock())

    async def mark_sending(self, item_id: int, at: float | None, *, fence: str | None = None) -> bool:
        held = None if fence is None else (fence, self._owner)
        return await self._db.run(outbox_sql.mark_sending, item_id, at, self._clock(), held)

    async def retry_later(self, item_id: int, at: float, error: str) -> bool:
        return await self._db.run(outbox_sql.retry_later, item_id, at, error, self._clock())

    async def give_up(self, item_id: int, error: str) -> bool:
        return await self._db.run(outbox_sql.give_up, item_id, error, self._clock())

    async def depth(self) -> int:
        return await self._db.run(outbox_sql.depth)

    # -- digests -------------------------------------------------------------------------------------
    async def claim_digest(self, period: str, ttl: float = 60.0) -> tuple[DigestClaim, float | None]:
        return await self._db.run(digest_sql.claim, period, self._owner, self._clock(), ttl)

    async def renew_digest(self, period: str, ttl: float = 60.0) -> bool:
        return await self._db.run(digest_sql.renew, period, self._owner, self._clock() + ttl)

    async def finish_digest(self, period: str, summary: Mapping[str, Any]) -> None:
        await self._db.run(digest_sql.finish, period, summary, self._clock())

    async def last_digest(self, other_than: str | None = None) -> DigestRun | None:
        return await self._db.run(digest_sql.last_posted, other_than)

    async def add_fleet_sample(self, sample: FleetSample, keep_after: float) -> None:
        await self._db.run(digest_sql.add_sample, sample, keep_after)

    async def fleet_samples(self, since: float) -> list[FleetSample]:
        return await self._db.run(digest_sql.samples, since)

    # -- leases --------------------------------------------------------------------------------------
    async def hold_lease(self, name: str, ttl: float) -> float | None:
        return await self._db.run(lease_sql.hold, name, self._owner, self._clock(), ttl)

    async def release_lease(self, name: str) -> None:
        await self._db.run(lease_sql.release, name, self._owner)

    # -- housekeeping --------------------------------------------------------------------------------
    async def check_writable(self) -> None:
        await self._db.run(probe_sql.probe, self._owner, self._clock())

    async def prune(self, before: float) -> int:
        # Identities and keys go with their rows: the retention is also the deduplication window.
        return await self._db.run(_prune, before)

    async def close(self) -> None:
        await self._db.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def _prune(before: float) -> Steps[int]:
    return (yield from notification_sql.prune(before)) + (yield from outbox_sql.prune(before))
