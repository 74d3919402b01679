"""The verification watch over a real store and outbox rows: `resolution.verify_after` after a group
resolves, one thread reply saying whether its targets answer again (or that it flapped), once, on the
leader only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot.alerts.verification import VerificationWatch, configured, revision
from bot.delivery.enqueue import HORIZON, Enqueuer
from bot.domain.alerts import AlertStatus
from bot.domain.resolution import EventKind, OncallEvent
from bot.domain.verification import Recheck, Verdict, VerificationOutcome, flapping
from bot.render.verification import verification_reply
from bot.store import Store, open_store
from bot.store.models import AlertGroupState, GroupFacts, OutboxItem, OutboxKind, StormRecord
from config.clusters import ClusterSettings, TargetSettings
from config.settings import Settings
from tests.fakes.config_data import cluster, config

CHANNEL, GROUP = "#alerts", '{}:{alertname="ResourceProxyNoHealthyPeers"}'
LABELS = {"alertname": "ResourceProxyNoHealthyPeers", "cluster": "prod", "target": "prod/ledger"}
AFTER = 120.0
T0 = 1_700_000_000.0  # 22:13 UTC
EPISODE = T0 - 900
OK = Recheck("prod", "prod/ledger", True, 200, 0.014, path="likely direct")
DOWN = Recheck("prod", "prod/ledger", False, 503, None, failure="upstream")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@dataclass
class Rechecks:
    """The probe and path check again, as each (client, target) answers now."""

    answer: Recheck = OK
    asked: list[tuple[str, str]] = field(default_factory=list)

    async def __call__(self, cluster: ClusterSettings, target: TargetSettings) -> Recheck:
        self.asked.append((cluster.name, target.name))
        return self.answer


class NotLeader:
    async def ensure(self) -> bool:
        return False


class Stop(Exception):
    pass


async def once(seconds: float) -> None:
    raise Stop


@dataclass
class Rig:
    store: Store
    clock: Clock
    outbox: Enqueuer
    rechecks: Rechecks
    outcomes: list[VerificationOutcome]

    def watch(self, settings: Settings | None = None, **kwargs: object) -> VerificationWatch:
        return VerificationWatch(
            settings or verifying(),
            self.store,
            self.outbox,
            self.rechecks,
            self.clock,
            self.clock,
            observe=self.outcomes.append,
            **kwargs,  # type: ignore[arg-type]
        )

    async def replies(self) -> list[OutboxItem]:
        rows = await self.store.due(self.clock() + HORIZON)
        return [r for r in rows if r.kind is OutboxKind.REPLY]

    async def resolve(self, key: str = GROUP, labels: dict[str, str] = LABELS, **row: object) -> None:
        """The alert pipeline's part: the group's row saved resolved, and its episode's record."""
        facts = GroupFacts(firing_labels=(labels,))
        await self.store.save_group(
            AlertGroupState(
                CHANNEL,
                key,
                AlertStatus.RESOLVED,
                ts="1.1",
                first_firing_at=EPISODE,
                resolved_at=self.clock(),
                facts=facts,
                **row,  # type: ignore[arg-type]
            )
        )
        event_key = f"resolved:{CHANNEL}:{key}:{EPISODE!r}"
        await self.store.record_event(
            OncallEvent(event_key, CHANNEL, key, EPISODE, EventKind.RESOLVED, self.clock(), "", "{}")
        )


def verifying(after: object = AFTER) -> Settings:
    return Settings.model_validate(config(resolution={"verify_after": after}, clusters=[cluster("prod")]))


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    clock = Clock()
    store = await open_store(f"sqlite:///{tmp_path / 'proxybot.db'}", clock=clock)
    yield Rig(store, clock, Enqueuer(store, clock, batch=50), Rechecks(), [])
    await store.close()


async def test_a_resolve_that_holds_is_verified_once_at_verify_after(rig: Rig) -> None:
    await rig.resolve()
    watch = rig.watch()
    await watch.tick()  # the record seen: the verification is stored
    stored = await rig.store.verification(CHANNEL, GROUP, EPISODE)
    assert stored is not None
    assert stored.due_at == T0 + AFTER
    rig.clock.now = T0 + AFTER - 1
    await watch.tick()
    assert await rig.replies() == []
    assert rig.rechecks.asked == []
    rig.clock.now = T0 + AFTER
    await watch.tick()
    [reply] = await rig.replies()
    assert reply.payload["text"] == "✅ verified 22:15 UTC: probe 200 in 14 ms from prod, direct path"
    assert "reply_broadcast" not in reply.payload or not reply.payload["reply_broadcast"]
    assert rig.rechecks.asked == [("prod", "prod/ledger")]
    assert rig.outcomes == [VerificationOutcome.VERIFIED]
    events = await rig.store.events_since(EventKind.VERIFICATION, 0.0)
    assert [Verdict.of_detail(e.detail) for e in events] == [
        Verdict(VerificationOutcome.VERIFIED, "verified 22:15 UTC: probe 200 in 14 ms from prod, direct path")
    ]
    # The resolved message is shown again with it (laid over as it is sent), once.
    shows = [i for i in await rig.store.due(rig.clock.now + 10**9, limit=1000) if i.key.startswith("show:")]
    assert len(shows) == 1
    rig.clock.now += 3600
    await watch.tick()
    await rig.watch().tick()  # a restarted process, too, finds it done
    assert len(await rig.replies()) == 1
    assert len(rig.rechecks.asked) == 1
    # The group itself is left resolved: the reply reopens nothing.
    row = await rig.store.get_group(CHANNEL, GROUP)
    assert row is not None
    assert row.status is AlertStatus.RESOLVED


async def test_a_target_still_down_at_verify_after_is_reported_unverified(rig: Rig) -> None:
    rig.rechecks.answer = DOWN
    await rig.resolve()
    await rig.watch().tick()
    rig.clock.now = T0 + AFTER
    await rig.watch().tick()  # a restart between the two: the stored due time holds
    [reply] = await rig.replies()
    assert reply.payload["text"] == "⚠️ resolved, but the probe from prod still fails (503 upstream)"
    assert rig.outcomes == [VerificationOutcome.UNVERIFIED]
    row = await rig.store.get_group(CHANNEL, GROUP)
    assert row is not None
    assert row.status is AlertStatus.RESOLVED


async def test_a_group_that_fired_again_before_its_verification_is_flapping(rig: Rig) -> None:
    await rig.resolve()
    watch = rig.watch()
    await watch.tick()
    # It fires again: a new episode on the same row.
    await rig.store.save_group(
        AlertGroupState(
            CHANNEL,
            GROUP,
            AlertStatus.FIRING,
            ts="1.1",
            first_firing_at=T0 + 30,
            facts=GroupFacts(firing_labels=(LABELS,)),
        )
    )
    rig.clock.now = T0 + AFTER
    await watch.tick()
    [reply] = await rig.replies()
    assert reply.payload["text"] == "🔁 fired again before its verification at 22:15 UTC: flapping"
    assert rig.rechecks.asked == []
    assert rig.outcomes == [VerificationOutcome.FLAPPING]


async def test_a_replica_that_is_not_the_leader_verifies_nothing(rig: Rig) -> None:
    await rig.resolve()
    rig.clock.now = T0 + 10 * AFTER
    with pytest.raises(Stop):
        await rig.watch(lease=NotLeader(), sleep=once).run()
    assert await rig.store.verification(CHANNEL, GROUP, EPISODE) is None
    assert await rig.replies() == []
    assert rig.rechecks.asked == []


async def test_verify_after_0_schedules_nothing_and_the_watch_is_not_run(rig: Rig) -> None:
    off = verifying(0)
    assert not configured(off)
    assert configured(verifying())
    assert configured(Settings.model_validate(config()))  # on by default: 5 min
    await rig.resolve()
    await rig.watch(off).tick()
    rig.clock.now = T0 + 3600
    await rig.watch(off).tick()
    assert await rig.store.verification(CHANNEL, GROUP, EPISODE) is None
    assert await rig.replies() == []


async def test_storms_and_groups_without_a_configured_target_are_not_verified(rig: Rig) -> None:
    await rig.resolve("storm:#alerts:1", storm=StormRecord(T0 - 600, T0 - 600, ended_at=T0))
    await rig.resolve("elsewhere", labels={**LABELS, "target": "nobody/knows"})
    await rig.watch().tick()
    assert await rig.store.verification(CHANNEL, "storm:#alerts:1", EPISODE) is None
    assert await rig.store.verification(CHANNEL, "elsewhere", EPISODE) is None


async def test_a_leader_that_died_after_queueing_the_reply_is_not_repeated(rig: Rig) -> None:
    await rig.resolve()
    await rig.watch().tick()
    rig.clock.now = T0 + AFTER
    # The dead leader recorded the outcome and queued the reply, but never closed the verification.
    verdict = flapping(rig.clock())
    await rig.store.record_event(
        OncallEvent(
            f"verification:{CHANNEL}:{GROUP}:{EPISODE!r}",
            CHANNEL,
            GROUP,
            EPISODE,
            EventKind.VERIFICATION,
            rig.clock(),
            "",
            verdict.outcome.value,
        )
    )
    await rig.outbox.reply(CHANNEL, GROUP, verification_reply(verdict), revision(EPISODE))
    await rig.watch().tick()
    assert len(await rig.replies()) == 1
    assert rig.rechecks.asked == []
    assert rig.outcomes == [VerificationOutcome.FLAPPING]
    stored = await rig.store.verification(CHANNEL, GROUP, EPISODE)
    assert stored is not None
    assert stored.outcome is VerificationOutcome.FLAPPING
