"""The escalation watch over a real store and outbox rows: one broadcast reply per unowned firing episode,
at its deadline on the bot's clock, none when acknowledged or silenced first, none twice."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from bot.alerts.escalation import EscalationWatch, configured, revision
from bot.alerts.silences import covering, shown
from bot.delivery.enqueue import HORIZON, Enqueuer
from bot.domain.acknowledgement import Acknowledgement
from bot.domain.alerts import AlertStatus
from bot.domain.escalation import EscalationOutcome
from bot.domain.findings import Severity
from bot.domain.silences import Matcher, Silence
from bot.domain.storm import StormEntry
from bot.render.escalation import escalation_reply
from bot.store import Store, open_store
from bot.store.models import AlertGroupState, GroupFacts, OutboxItem, OutboxKind, StormRecord, StormShare
from config.settings import Settings
from tests.bot.alerts.test_silences import silence
from tests.fakes.config_data import cluster, config

CHANNEL, GROUP = "#alerts", '{}:{alertname="ResourceProxyNoHealthyPeers"}'
CRITICAL = {"alertname": "ResourceProxyNoHealthyPeers", "cluster": "prod", "severity": "critical"}
ONCALL = "<!subteam^S0123ONCALL>"
STORM = "storm:#alerts:1"
AFTER = 120.0
T0 = 1_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@dataclass
class Silences:
    """Alertmanager's silences as the silence watch last read them."""

    listed: tuple[Silence, ...] = ()
    # What Alertmanager holds but the last read has not seen yet (made in amtool since).
    unread: tuple[Silence, ...] = ()
    reads: int = 0

    async def refresh(self) -> None:
        self.listed, self.unread, self.reads = (*self.listed, *self.unread), (), self.reads + 1

    def shown_for(self, label_sets: Sequence[Mapping[str, str]]) -> Silence | None:
        return shown(covering(self.listed, label_sets))


@dataclass
class Rig:
    store: Store
    clock: Clock
    outbox: Enqueuer
    silences: Silences
    outcomes: list[EscalationOutcome]

    def watch(self, settings: Settings | None = None) -> EscalationWatch:
        return EscalationWatch(
            settings or escalating(),
            self.store,
            self.outbox,
            self.clock,
            silences=self.silences,
            observe=self.outcomes.append,
        )

    async def replies(self) -> list[OutboxItem]:
        rows = await self.store.due(self.clock() + HORIZON)
        return [r for r in rows if r.kind is OutboxKind.REPLY]


def escalating(**escalation: object) -> Settings:
    return Settings.model_validate(
        config(escalation={"after": AFTER, "mention": ONCALL, **escalation}, clusters=[cluster("prod")])
    )


def group(
    key: str = GROUP, *, labels: Mapping[str, str] = CRITICAL, episode: float = T0, **facts: object
) -> AlertGroupState:
    return AlertGroupState(
        CHANNEL,
        key,
        AlertStatus.FIRING,
        ts="1.1",
        first_firing_at=episode,
        facts=replace(GroupFacts(firing_labels=(labels,)), **facts),
    )


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    clock = Clock()
    store = await open_store(f"sqlite:///{tmp_path / 'proxybot.db'}", clock=clock)
    yield Rig(store, clock, Enqueuer(store, clock, batch=50), Silences(), [])
    await store.close()


async def test_an_unowned_critical_message_gets_one_broadcast_reply_at_its_deadline(rig: Rig) -> None:
    await rig.store.save_group(group())
    watch = rig.watch()
    await watch.tick()  # seen posted: the deadline is stored
    stored = await rig.store.escalation(CHANNEL, GROUP, T0)
    assert stored is not None
    assert stored.due_at == T0 + AFTER
    rig.clock.now = T0 + AFTER - 1
    await watch.tick()
    assert await rig.replies() == []
    rig.clock.now = T0 + AFTER
    await watch.tick()
    [reply] = await rig.replies()
    assert reply.payload["reply_broadcast"] is True
    assert ONCALL in reply.payload["text"]
    assert reply.payload["text"].startswith(f"🚨 Escalated to {ONCALL} at ")
    assert "within 2 min of its post" in reply.payload["text"]
    assert rig.outcomes == [EscalationOutcome.SENT]
    rig.clock.now += 3600
    await watch.tick()
    await rig.watch().tick()  # a restarted process, too, finds it done
    assert len(await rig.replies()) == 1
    assert rig.outcomes == [EscalationOutcome.SENT]


async def test_a_deadline_survives_a_restart_and_is_not_moved_by_it(rig: Rig) -> None:
    await rig.store.save_group(group())
    await rig.watch().tick()
    rig.clock.now = T0 + AFTER - 10
    await rig.watch().tick()  # a new process sees the episode again: the first deadline stands
    assert await rig.replies() == []
    rig.clock.now = T0 + AFTER
    await rig.watch().tick()
    assert len(await rig.replies()) == 1


async def test_acknowledged_before_the_deadline_nothing_is_sent(rig: Rig) -> None:
    await rig.store.save_group(group())
    watch = rig.watch()
    await watch.tick()
    await rig.store.acknowledge(Acknowledgement(CHANNEL, GROUP, T0, "U0ALICE01", "alice", T0 + 5))
    rig.clock.now = T0 + AFTER
    await watch.tick()
    assert await rig.replies() == []
    assert rig.outcomes == [EscalationOutcome.ACKNOWLEDGED]
    stored = await rig.store.escalation(CHANNEL, GROUP, T0)
    assert stored is not None
    assert stored.outcome is EscalationOutcome.ACKNOWLEDGED


async def test_acknowledged_and_then_unacknowledged_before_the_deadline_it_escalates(rig: Rig) -> None:
    await rig.store.save_group(group())
    watch = rig.watch()
    await watch.tick()
    await rig.store.acknowledge(Acknowledgement(CHANNEL, GROUP, T0, "U0ALICE01", "alice", T0 + 5))
    await rig.store.unacknowledge(CHANNEL, GROUP, T0)
    rig.clock.now = T0 + AFTER
    await watch.tick()
    assert len(await rig.replies()) == 1


async def test_silenced_at_the_deadline_nothing_is_sent(rig: Rig) -> None:
    await rig.store.save_group(group())
    watch = rig.watch()
    await watch.tick()
    rig.silences.listed = (silence("s1", Matcher("cluster", "prod")),)
    rig.clock.now = T0 + AFTER
    await watch.tick()
    assert await rig.replies() == []
    assert rig.outcomes == [EscalationOutcome.SILENCED]


async def test_a_silence_made_elsewhere_since_the_last_read_is_read_before_the_reply(rig: Rig) -> None:
    await rig.store.save_group(group())
    watch = rig.watch()
    await watch.tick()
    rig.silences.unread = (silence("s1", Matcher("cluster", "prod")),)
    rig.clock.now = T0 + AFTER
    await watch.tick()
    assert rig.silences.reads == 1
    assert await rig.replies() == []
    assert rig.outcomes == [EscalationOutcome.SILENCED]


async def test_a_resolved_episode_is_closed_and_firing_again_starts_a_new_deadline(rig: Rig) -> None:
    await rig.store.save_group(group())
    watch = rig.watch()
    await watch.tick()
    await rig.store.save_group(replace(group(), status=AlertStatus.RESOLVED, resolved_at=T0 + 30))
    rig.clock.now = T0 + AFTER
    await watch.tick()
    assert rig.outcomes == [EscalationOutcome.ENDED]
    second = T0 + 500
    rig.clock.now = second
    await rig.store.save_group(group(episode=second))
    await watch.tick()
    rig.clock.now = second + AFTER
    await watch.tick()
    [reply] = await rig.replies()
    assert reply.key.endswith(revision(second))
    assert rig.outcomes == [EscalationOutcome.ENDED, EscalationOutcome.SENT]


async def test_only_listed_severities_escalate_and_an_empty_mention_turns_it_off(rig: Rig) -> None:
    await rig.store.save_group(group(labels={**CRITICAL, "severity": "warning"}))
    await rig.watch().tick()
    await rig.watch(escalating(mention="")).tick()
    assert await rig.store.escalation(CHANNEL, GROUP, T0) is None
    await rig.watch(escalating(severities=["warning"])).tick()
    assert await rig.store.escalation(CHANNEL, GROUP, T0) is not None


async def test_a_clusters_mention_is_used_for_its_alerts(rig: Rig) -> None:
    settings = Settings.model_validate(
        config(
            escalation={"after": AFTER, "mention": ONCALL},
            clusters=[cluster("prod", escalation={"mention": "<@U0PRODLEAD>", "after": "1m"})],
        )
    )
    await rig.store.save_group(group())
    watch = rig.watch(settings)
    await watch.tick()
    rig.clock.now = T0 + 60
    await watch.tick()
    [reply] = await rig.replies()
    assert "<@U0PRODLEAD>" in reply.payload["text"]
    assert ONCALL not in reply.payload["text"]


async def test_an_incident_or_storm_escalates_by_the_alerts_it_carries(rig: Rig) -> None:
    quiet = {**CRITICAL, "severity": "info"}
    await rig.store.save_group(group("first", labels=quiet, members=("member",)))
    await rig.store.save_group(replace(group("member", incident="first"), ts=None))
    entry = StormEntry("ResourceProxyNoHealthyPeers", Severity.CRITICAL, "in-storm", target="prod/ledger")
    record = StormRecord(started_at=T0, last_new_at=T0, posted=True, entries={"in-storm": (entry,)})
    await rig.store.save_group(replace(group(STORM, labels=quiet), storm=record))
    await rig.store.save_group(replace(group("in-storm", storm_thread=STORM), ts=None))
    await rig.watch().tick()
    assert await rig.store.escalation(CHANNEL, "first", T0) is not None
    assert await rig.store.escalation(CHANNEL, STORM, T0) is not None
    assert await rig.store.escalation(CHANNEL, "member", T0) is None, "its message is the incident's"
    assert await rig.store.escalation(CHANNEL, "in-storm", T0) is None, "its message is the storm's"


async def test_a_group_posted_before_its_storm_leaves_the_page_to_the_storm(rig: Rig) -> None:
    # Posted on its own before the storm was recognised, its alerts count in the storm: the storm's summary
    # pages once for the outage, the early groups do not each page as well.
    entry = StormEntry("ResourceProxyNoHealthyPeers", Severity.CRITICAL, "early", target="prod/ledger")
    record = StormRecord(started_at=T0, last_new_at=T0, posted=True, entries={"early": (entry,)})
    await rig.store.save_group(replace(group(STORM, labels={}), storm=record))
    await rig.store.save_group(group("early", storm_share=StormShare(STORM, (entry,))))
    watch = rig.watch()
    await watch.tick()
    rig.clock.now = T0 + AFTER
    await watch.tick()
    assert await rig.store.escalation(CHANNEL, "early", T0) is None
    replies = await rig.replies()
    assert [r.payload["group_key"] for r in replies] == [STORM], "one page, the storm's"


async def test_a_storm_is_silenced_when_a_silence_covers_its_groups(rig: Rig) -> None:
    entry = StormEntry("ResourceProxyNoHealthyPeers", Severity.CRITICAL, "in-storm", target="prod/ledger")
    record = StormRecord(started_at=T0, last_new_at=T0, posted=True, entries={"in-storm": (entry,)})
    await rig.store.save_group(replace(group(STORM, labels={}), storm=record))
    await rig.store.save_group(replace(group("in-storm", storm_thread=STORM), ts=None))
    watch = rig.watch()
    await watch.tick()
    rig.silences.listed = (silence("s1", Matcher("cluster", "prod")),)
    rig.clock.now = T0 + AFTER
    await watch.tick()
    assert await rig.replies() == []
    assert rig.outcomes == [EscalationOutcome.SILENCED]


async def test_a_leader_that_died_after_queueing_the_reply_is_not_repeated(rig: Rig) -> None:
    await rig.store.save_group(group())
    await rig.watch().tick()
    rig.clock.now = T0 + AFTER
    # The dead leader queued the reply but never closed the deadline; an acknowledgement came after.
    await rig.outbox.reply(CHANNEL, GROUP, escalation_reply(ONCALL, AFTER, rig.clock()), revision(T0))
    await rig.store.acknowledge(Acknowledgement(CHANNEL, GROUP, T0, "U0ALICE01", "alice", T0 + AFTER))
    await rig.watch().tick()
    assert len(await rig.replies()) == 1
    assert rig.outcomes == [EscalationOutcome.SENT]


def test_the_watch_runs_only_where_some_alert_can_escalate() -> None:
    assert configured(escalating())
    assert not configured(Settings.model_validate(config()))
    by_one_cluster = config(clusters=[cluster("prod", escalation={"mention": "<@U0PRODLEAD>"})])
    assert configured(Settings.model_validate(by_one_cluster))
    assert not configured(escalating(severities=[]))
