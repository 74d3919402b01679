"""The alert pipeline against a real SQLite store, the real delivery outbox API and a fake live source."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.alerts.pipeline import AlertPipeline
from bot.alerts.prom_enrich import PromEnricher
from bot.alerts.prom_queries import FAMILY
from bot.alerts.storm import StormPolicy
from bot.clients.prometheus import Sample, Series
from bot.delivery.worker import Delivery
from bot.domain.alerts import AlertmanagerWebhook
from bot.errors import UpstreamError
from bot.live import ClusterRead
from bot.store import (
    AlertGroupState,
    OutboxItem,
    OutboxKind,
    OutboxState,
    Store,
    StoredNotification,
    open_store,
)
from config.settings import Settings
from tests.fakes.alert_pipeline import Clock, FakeLive, NoSlack, alert, cluster_config, settings, webhook


class Harness:
    """A store, the outbox API over it, the pipeline, and helpers to feed and inspect them."""

    def __init__(self, store: Store, clock: Clock, live: FakeLive, config: Settings) -> None:
        self.store = store
        self.clock = clock
        self.live = live
        self.outbox = Delivery(store, NoSlack(), clock=clock)
        self.pipeline = self.make_pipeline(config)

    def make_pipeline(self, config: Settings, policy: StormPolicy | None = None) -> AlertPipeline:
        return AlertPipeline(config, self.store, self.outbox, self.live, storm=policy, clock=self.clock)

    async def accept(self, raw: bytes) -> None:
        await self.store.accept(raw, AlertmanagerWebhook.model_validate_json(raw), self.clock())

    async def run(self, raw: bytes | None = None) -> None:
        if raw is not None:
            await self.accept(raw)
        pending = await self.store.pending()
        for notification in pending:
            # As the worker does: the notification that empties the queue settles the storm summaries.
            await self.pipeline.process(notification, settle=notification is pending[-1])

    async def settle(self) -> None:
        """What the worker's deadline loop does once a linger has passed: summaries go out."""
        self.clock.now += StormPolicy().linger_seconds
        await self.pipeline.expire_storms()

    async def items(self) -> list[OutboxItem]:
        return await self.store.due(self.clock() + 10 * 86400, limit=10_000)

    async def kinds(self) -> list[tuple[OutboxKind, str]]:
        return [(i.kind, i.channel) for i in await self.items()]


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    clock = Clock()
    store = await open_store(f"sqlite:///{tmp_path / 'proxybot.db'}", clock=clock)
    h = Harness(store, clock, FakeLive(), settings())
    yield h
    await h.pipeline.aclose()
    await store.close()


def text_of(item: OutboxItem) -> str:
    return json.dumps(item.payload)


# -- lifecycle ---------------------------------------------------------------------------------------


async def test_first_notification_is_one_enriched_post_in_the_clusters_channel(harness: Harness) -> None:
    await harness.run(webhook([alert("a1")]))
    items = await harness.items()
    assert [(i.kind, i.channel) for i in items] == [(OutboxKind.POST, "#alpha-alerts")]
    payload = items[0].payload
    assert set(payload) == {"group_key", "text", "blocks"}
    assert payload["group_key"] == '{}:{alertname="ResourceProxyNoHealthyPeers"}'
    assert payload["text"].startswith("FIRING: ResourceProxyNoHealthyPeers")
    assert "Live state read" in text_of(items[0])  # enriched, not "unavailable"
    assert "peers: healthy 0, quarantined 2, half_open 0" in text_of(items[0])  # diagnosed live
    assert harness.live.reads == ["alpha"]
    assert await harness.store.pending_count() == 0


async def test_a_new_alert_in_the_group_edits_in_place_and_replies(harness: Harness) -> None:
    await harness.run(webhook([alert("a1")]))
    await harness.run(webhook([alert("a1"), alert("a2", target="team-b/queue")]))
    items = await harness.items()
    assert [i.kind for i in items] == [OutboxKind.POST, OutboxKind.UPDATE, OutboxKind.REPLY]
    assert {i.payload["group_key"] for i in items} == {items[0].payload["group_key"]}
    assert "2 firing" in text_of(items[1])
    assert items[2].payload["text"] == "1 new"
    assert "team-b/queue" in text_of(items[2])


async def test_a_notification_without_added_or_resolved_alerts_edits_without_a_reply(
    harness: Harness,
) -> None:
    await harness.run(webhook([alert("a1")]))
    harness.clock.now += 3600
    # The same alert with a new start (it flapped between evaluations): a new notification, same alerts.
    await harness.run(webhook([{**alert("a1"), "startsAt": "2023-11-14T22:00:01Z"}]))
    items = await harness.items()
    assert [i.kind for i in items] == [OutboxKind.POST, OutboxKind.UPDATE]
    assert "updated 23:13:20 UTC" in text_of(items[1])


async def test_all_resolved_turns_the_message_resolved_without_a_new_post(harness: Harness) -> None:
    await harness.run(webhook([alert("a1"), alert("a2", target="team-b/queue")]))
    await harness.run(
        webhook([alert("a1", resolved=True), alert("a2", target="team-b/queue", resolved=True)])
    )
    items = await harness.items()
    assert [i.kind for i in items] == [OutboxKind.POST, OutboxKind.UPDATE, OutboxKind.REPLY]
    assert items[1].payload["text"].startswith("RESOLVED")
    assert "Resolved after 12 min" in text_of(items[1])
    assert "2 resolved" in items[2].payload["text"]
    state = await harness.store.get_group("#alpha-alerts", items[0].payload["group_key"])
    assert state is not None
    assert state.status.value == "resolved"
    assert state.firing_fingerprints == frozenset()


async def test_a_group_firing_again_after_resolving_is_edited_back_not_reposted(harness: Harness) -> None:
    await harness.run(webhook([alert("a1")]))
    await harness.run(webhook([alert("a1", resolved=True)]))
    again = {**alert("a1"), "startsAt": "2023-11-15T08:00:00Z"}
    await harness.run(webhook([again]))
    kinds = [i.kind for i in await harness.items()]
    assert kinds.count(OutboxKind.POST) == 1
    assert kinds[-2:] == [OutboxKind.UPDATE, OutboxKind.REPLY]


async def test_redelivery_of_the_same_notification_adds_nothing(harness: Harness) -> None:
    raw = webhook([alert("a1")])
    await harness.run(raw)
    before = await harness.items()
    await harness.run(raw)  # the intake's dedupe: already processed, nothing pending
    stored = await harness.store.pending()
    assert stored == []
    # Even processing the stored notification again (a crash after Slack, before closing) adds nothing.
    again = StoredNotification(
        1,
        AlertmanagerWebhook.model_validate_json(raw).identity(),
        0.0,
        raw,
        AlertmanagerWebhook.model_validate_json(raw),
    )
    await harness.pipeline.process(again)
    assert [(i.id, i.key) for i in await harness.items()] == [(i.id, i.key) for i in before]


async def test_an_alert_of_no_cluster_goes_plainly_to_the_default_channel(harness: Harness) -> None:
    await harness.run(webhook([alert("x1", "SomethingElse", cluster=None)], group="{}:other"))
    items = await harness.items()
    assert [(i.kind, i.channel) for i in items] == [(OutboxKind.POST, "#proxy-alerts")]
    assert "no configured cluster matches" in text_of(items[0])
    assert "SomethingElse" in items[0].payload["text"]
    assert harness.live.reads == []


async def test_one_group_spanning_two_clusters_is_one_message_in_each_channel(harness: Harness) -> None:
    await harness.run(webhook([alert("a1", cluster="alpha"), alert("b1", cluster="beta")]))
    assert sorted(await harness.kinds()) == [
        (OutboxKind.POST, "#alpha-alerts"),
        (OutboxKind.POST, "#beta-alerts"),
    ]
    assert sorted(harness.live.reads) == ["alpha", "beta"]


async def test_late_enrichment_is_marked_unavailable_and_not_waited_for(harness: Harness) -> None:
    harness.live.gate = asyncio.Event()  # never opened: the read hangs
    harness.pipeline = harness.make_pipeline(settings(timeout=0.01))
    await harness.run(webhook([alert("a1")]))
    items = await harness.items()
    assert [i.kind for i in items] == [OutboxKind.POST]
    assert "live state unavailable: enrichment took longer than 0.01s" in text_of(items[0])
    assert await harness.store.pending_count() == 0


async def test_a_failed_cluster_read_names_the_reason(harness: Harness) -> None:
    class Refusing(FakeLive):
        async def read(self, cluster: str) -> ClusterRead:
            return ClusterRead(cluster, 0.0, None, None, f"cluster {cluster}: 403 forbidden")

    harness.live = Refusing()
    harness.pipeline = harness.make_pipeline(settings())
    await harness.run(webhook([alert("a1")]))
    assert "live state unavailable: cluster alpha: 403 forbidden" in text_of((await harness.items())[0])


# -- crash safety ------------------------------------------------------------------------------------


class CrashingStore:
    """The real store, except that one method raises once, like a process dying at that step."""

    def __init__(self, store: Store, crash_in: str) -> None:
        self._store = store
        self._crash_in = crash_in

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)
        if name != self._crash_in:
            return method

        async def crash(*args: Any, **kwargs: Any) -> Any:
            self._crash_in = ""
            raise RuntimeError(f"killed in {name}")

        return crash


@pytest.mark.parametrize("crash_in", ["save_group", "mark_processed"])
async def test_a_crash_before_closing_then_a_rerun_adds_no_outbox_items(
    harness: Harness, crash_in: str
) -> None:
    await harness.run(webhook([alert("a1")]))
    raw = webhook([alert("a1"), alert("a2", target="team-b/queue")])
    await harness.accept(raw)
    crashing = CrashingStore(harness.store, crash_in)
    doomed = AlertPipeline(settings(), crashing, harness.outbox, harness.live, clock=harness.clock)
    [notification] = await harness.store.pending()
    with pytest.raises(RuntimeError, match="killed"):
        await doomed.process(notification)
    after_crash = [(i.kind, i.key) for i in await harness.items()]
    assert [k for k, _ in after_crash] == [OutboxKind.POST, OutboxKind.UPDATE, OutboxKind.REPLY]
    await harness.run()  # a fresh pipeline's worker drains what is still pending
    assert [(i.kind, i.key) for i in await harness.items()] == after_crash
    assert await harness.store.pending_count() == 0


async def test_a_crash_before_the_first_post_is_recorded_does_not_post_twice(harness: Harness) -> None:
    await harness.accept(webhook([alert("a1")]))
    doomed = AlertPipeline(
        settings(),
        CrashingStore(harness.store, "save_group"),
        harness.outbox,
        harness.live,
        clock=harness.clock,
    )
    [notification] = await harness.store.pending()
    with pytest.raises(RuntimeError):
        await doomed.process(notification)
    await harness.run()
    assert [i.kind for i in await harness.items()] == [OutboxKind.POST]


# -- storm mode --------------------------------------------------------------------------------------


def storm_webhook(i: int, cluster: str = "alpha") -> bytes:
    return webhook(
        [alert(f"s{i}", cluster=cluster, target=f"team-{i}/db")], group=f'{{}}:{{target="team-{i}/db"}}'
    )


def lines_in(items: list[OutboxItem]) -> int:
    replies = [i for i in items if i.kind is OutboxKind.REPLY]
    return sum(len(i.payload["blocks"][0]["text"]["text"].splitlines()) for i in replies)


async def test_thirty_new_groups_become_a_storm_summary_and_thread_lines(harness: Harness) -> None:
    for i in range(30):
        await harness.accept(storm_webhook(i, cluster="alpha" if i % 2 else "beta"))
    # Both clusters post to one channel here, so the cause reads "several clients at once".
    harness.pipeline = harness.make_pipeline(settings(channel="#fleet"))
    await harness.run()
    await harness.settle()
    items = await harness.items()
    posts = [i for i in items if i.kind is OutboxKind.POST]
    # The ten groups before the storm was recognisable had not gone out: they joined its thread.
    [summary_post] = posts
    storm_key = summary_post.payload["group_key"]
    assert storm_key.startswith("storm:#fleet:")
    assert lines_in(items) == 30
    replies = [i for i in items if i.kind is OutboxKind.REPLY]
    assert len(replies) < 30  # lines are gathered, not one Slack call each
    assert all(r.payload["group_key"] == storm_key for r in replies)
    latest = [i for i in items if i.kind is not OutboxKind.REPLY and i.payload["group_key"] == storm_key][-1]
    assert latest.kind is OutboxKind.UPDATE
    assert "30 alerts" in latest.payload["text"]
    assert "shared platform path" in latest.payload["text"]
    folded = await harness.store.outbox_item('post:#fleet:{}:{target="team-0/db"}')
    assert folded is not None
    assert (folded.state, folded.result) == (OutboxState.DONE, {"folded_into": storm_key})


async def storm_rows(harness: Harness, channel: str = "#alpha-alerts") -> list[AlertGroupState]:
    return [g for g in await harness.store.groups(channel) if g.group_key.startswith("storm:")]


async def test_the_summary_is_posted_at_once_then_edited_at_most_once_per_linger(harness: Harness) -> None:
    policy = StormPolicy(groups=2, linger_seconds=2.0, settle_seconds=0.25)
    harness.pipeline = harness.make_pipeline(settings(), policy)

    async def edits() -> list[OutboxItem]:
        return [i for i in await harness.items() if i.kind is OutboxKind.UPDATE]

    for i in range(3):
        await harness.accept(storm_webhook(i))
    for notification in await harness.store.pending():
        assert await harness.pipeline.process(notification)  # not settling: closed at once
    summary = [i for i in await harness.items() if i.kind is OutboxKind.POST]
    assert [i.payload["group_key"][:7] for i in summary] == ["storm:#"]
    assert "3 alerts" in summary[0].payload["text"]  # the groups that started it are counted at once
    for i in range(3, 20):
        await harness.accept(storm_webhook(i))
    await harness.run()
    assert await edits() == []  # seventeen more groups within the linger: no edit yet
    # The last one is held open until the storm's row counts it (nothing pending = rows complete).
    assert [n.webhook.group_key for n in await harness.store.pending()] == ['{}:{target="team-19/db"}']
    assert harness.pipeline.next_deadline() == harness.clock.now + 0.25
    harness.clock.now += 0.25
    await harness.pipeline.expire_storms()  # the worker's deadline loop
    assert await harness.store.pending() == []
    assert await edits() == []  # the row is saved; Slack still waits for the linger
    [row] = await storm_rows(harness)
    assert len(row.details["entries"]) == 20
    harness.clock.now += 1.75
    await harness.pipeline.expire_storms()
    [edit] = await edits()
    assert "20 alerts" in edit.payload["text"]
    await harness.run(storm_webhook(20))
    await harness.run(storm_webhook(21))
    assert len(await edits()) == 1
    harness.clock.now += 2.0
    await harness.pipeline.expire_storms()
    assert "22 alerts" in (await edits())[-1].payload["text"]


async def test_later_alerts_of_a_group_posted_before_the_storm_count_in_the_summary(
    harness: Harness,
) -> None:
    policy = StormPolicy(groups=2)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    await harness.run(storm_webhook(0))
    posted = await harness.store.outbox_item('post:#alpha-alerts:{}:{target="team-0/db"}')
    assert posted is not None
    await harness.store.complete(posted.id, {"ts": "1.0"})  # it went out before the storm
    for i in range(1, 4):
        await harness.run(storm_webhook(i))
    group = '{}:{target="team-0/db"}'
    two = webhook([alert("s0", target="team-0/db"), alert("s0b", target="team-0/db")], group=group)
    await harness.run(two)
    await harness.settle()
    edits = [i for i in await harness.items() if i.kind is OutboxKind.UPDATE]
    assert group in [e.payload["group_key"] for e in edits]  # its own message is edited in place
    summary = [e for e in edits if e.payload["group_key"].startswith("storm:")][-1]
    assert "5 alerts" in summary.payload["text"]
    [row] = await storm_rows(harness)
    assert len(row.details["entries"][group]) == 2
    state = await harness.store.get_group("#alpha-alerts", group)
    assert state is not None
    assert "storm" not in state.details  # it keeps its own message
    assert len(state.details["storm_count"]["entries"]) == 2


async def test_a_storm_ends_after_quiet_and_new_groups_post_again(harness: Harness) -> None:
    policy = StormPolicy(groups=2, window_seconds=60, quiet_seconds=120)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for i in range(4):
        await harness.run(storm_webhook(i))
    storm_key = next(
        i.payload["group_key"]
        for i in await harness.items()
        if i.kind is OutboxKind.POST and i.payload["group_key"].startswith("storm:")
    )
    await harness.settle()  # the summary's last edit went out: only the storm's end is ahead
    assert harness.pipeline.next_deadline() == harness.clock.now + 118
    harness.clock.now += 117
    assert await harness.pipeline.expire_storms() == []
    harness.clock.now += 1
    assert await harness.pipeline.expire_storms() == [storm_key]
    last = (await harness.items())[-1]
    assert last.kind is OutboxKind.UPDATE
    assert "storm over" in last.payload["text"]
    state = await harness.store.get_group("#alpha-alerts", storm_key)
    assert state is not None
    assert state.status.value == "resolved"
    await harness.run(storm_webhook(10))
    assert (await harness.items())[-1].kind is OutboxKind.POST
    assert (await harness.items())[-1].payload["group_key"] == '{}:{target="team-10/db"}'


async def test_a_change_in_a_storm_group_goes_to_the_storm_thread(harness: Harness) -> None:
    harness.pipeline = harness.make_pipeline(settings(), StormPolicy(groups=1))
    await harness.run(storm_webhook(0))
    await harness.run(storm_webhook(1))
    await harness.settle()
    before = {i.id for i in await harness.items()}
    resolved = webhook([alert("s1", target="team-1/db", resolved=True)], group='{}:{target="team-1/db"}')
    await harness.run(resolved)
    await harness.settle()
    new = [i for i in await harness.items() if i.id not in before]
    assert {i.payload["group_key"] for i in new} == {new[0].payload["group_key"]}
    assert new[0].payload["group_key"].startswith("storm:")
    assert sorted(i.kind for i in new) == [OutboxKind.REPLY, OutboxKind.UPDATE]  # a line, a fresh count
    assert "resolved" in text_of(next(i for i in new if i.kind is OutboxKind.REPLY))


async def test_a_storm_survives_a_restart(harness: Harness) -> None:
    policy = StormPolicy(groups=1)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    await harness.run(storm_webhook(0))
    await harness.run(storm_webhook(1))
    restarted = harness.make_pipeline(settings(), policy)
    await restarted.restore()
    harness.pipeline = restarted
    await harness.run(storm_webhook(2))
    storm_posts = [
        i
        for i in await harness.items()
        if i.kind is OutboxKind.POST and i.payload["group_key"].startswith("storm:")
    ]
    assert len(storm_posts) == 1
    assert restarted.next_deadline() is not None


async def test_a_restart_counts_the_groups_saved_after_the_last_summary(harness: Harness) -> None:
    policy = StormPolicy(groups=1, linger_seconds=2.0)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for i in range(2):
        await harness.run(storm_webhook(i))
    for i in range(2, 5):
        await harness.accept(storm_webhook(i))
    for notification in await harness.store.pending():
        await harness.pipeline.process(notification)  # within the linger: no summary, no storm row save
    [row] = await storm_rows(harness)
    assert len(row.details["entries"]) == 2
    restarted = harness.make_pipeline(settings(), policy)
    await restarted.restore()  # the process died here
    harness.pipeline = restarted
    await harness.run(storm_webhook(5))
    edits = [i for i in await harness.items() if i.kind is OutboxKind.UPDATE]
    assert "6 alerts" in edits[-1].payload["text"]
    [row] = await storm_rows(harness)
    assert len(row.details["entries"]) == 6


# -- Prometheus enrichment and the chart ------------------------------------------------------------

REQUESTS_METRIC = "vcluster_proxy_request_total"


class FakePrometheus:
    """Answers the enrichment's queries from fixed numbers; can be held at a gate or made to refuse."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.ranges: list[str] = []
        self.gate: asyncio.Event | None = None
        self.refuse: str | None = None

    async def _wait(self, expr: str) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.refuse is not None:
            raise UpstreamError(self.refuse)

    async def query(
        self, expr: str, *, at: float | None = None, timeout: float | None = None
    ) -> list[Sample]:
        self.queries.append(expr)
        await self._wait(expr)
        when = at or 0.0
        if "histogram_quantile" in expr:
            return [Sample({FAMILY: "vcluster_proxy_request_duration_seconds"}, 0.23, when)]
        if "_bucket" in expr:
            family = "vcluster_proxy_request_duration_seconds"
            return [
                Sample({FAMILY: family, "le": le, "verb": "get"}, n, when)
                for le, n in (("0.1", 80.0), ("0.25", 120.0), ("+Inf", 120.0))
            ]
        labels = {FAMILY: REQUESTS_METRIC, "group_version": "example.com/v1", "verb": "get", "code": "503"}
        return [Sample({**labels, "reason": "no_peer"}, 42.0, when)]

    async def query_range(
        self, expr: str, *, start: float, end: float, step: float, timeout: float | None = None
    ) -> list[Series]:
        self.ranges.append(expr)
        await self._wait(expr)
        points = tuple((start + i * step, 2.0 if i < 60 else 0.0) for i in range(int((end - start) / step)))
        return [Series({"group_version": "example.com/v1"}, points)]

    async def aclose(self) -> None:
        pass


@pytest.fixture
async def prom_harness(harness: Harness) -> AsyncIterator[tuple[Harness, FakePrometheus]]:
    fake = FakePrometheus()
    enricher = PromEnricher(fake, clock=harness.clock)
    harness.pipeline = AlertPipeline(
        settings(),
        harness.store,
        harness.outbox,
        harness.live,
        clock=harness.clock,
        prometheus=enricher,
    )
    yield harness, fake
    await enricher.aclose()


async def test_prometheus_counts_and_p99_join_the_live_state(
    prom_harness: tuple[Harness, FakePrometheus],
) -> None:
    harness, fake = prom_harness
    await harness.run(webhook([alert("a1")]))
    post = (await harness.items())[0]
    text = text_of(post)
    assert "Live state read" in text
    assert "peers: healthy 0, quarantined 2, half_open 0" in text
    assert "Requests by reason (last 15m, from Prometheus): no_peer 42" in text
    assert "p99 (last 15m, from Prometheus): requests 230 ms (120); dials: too few to tell (0)" in text
    # The diagnosis counted Prometheus' window, not totals since the proxy started.
    assert "42 requests" in text
    assert "since the proxy started" not in text
    # The series are the alert's target in the configured cluster (match labels), never anything else.
    assert all('cluster="alpha"' in q and 'target="team-a/db"' in q for q in fake.queries)


async def test_the_first_post_gets_one_chart_in_its_thread(
    prom_harness: tuple[Harness, FakePrometheus],
) -> None:
    harness, fake = prom_harness
    await harness.run(webhook([alert("a1")]))
    items = await harness.items()
    assert [i.kind for i in items] == [OutboxKind.POST, OutboxKind.UPLOAD]
    upload = items[1]
    assert upload.key.startswith('upload:#alpha-alerts:{}:{alertname="ResourceProxyNoHealthyPeers"}:chart:')
    assert base64.b64decode(upload.payload["png"]).startswith(b"\x89PNG\r\n\x1a\n")
    assert upload.payload["filename"] == "team-a-db-healthy-peers.png"
    assert upload.payload["title"] == "team-a/db: healthy peers per group/version, last hour"
    assert fake.ranges == [
        'min by (group_version) (vcluster_proxy_peers{cluster="alpha",target="team-a/db",state="healthy"})'
    ]


async def test_later_notifications_and_redeliveries_add_no_chart(
    prom_harness: tuple[Harness, FakePrometheus],
) -> None:
    harness, fake = prom_harness
    first = webhook([alert("a1")])
    await harness.run(first)
    await harness.run(first)
    await harness.run(webhook([alert("a1"), alert("a2", target="team-b/queue")]))
    kinds = [i.kind for i in await harness.items()]
    assert kinds.count(OutboxKind.UPLOAD) == 1
    assert len(fake.ranges) == 1


async def test_firing_again_after_resolving_is_a_new_episode_with_a_new_chart(
    prom_harness: tuple[Harness, FakePrometheus],
) -> None:
    harness, _ = prom_harness
    await harness.run(webhook([alert("a1")]))
    await harness.run(webhook([alert("a1", resolved=True)]))
    await harness.run(webhook([alert("a1"), alert("a3")]))
    uploads = [i for i in await harness.items() if i.kind is OutboxKind.UPLOAD]
    assert len(uploads) == 2
    assert len({u.key for u in uploads}) == 2


async def test_late_prometheus_is_marked_unavailable_within_the_budget(harness: Harness) -> None:
    fake = FakePrometheus()
    fake.gate = asyncio.Event()
    enricher = PromEnricher(fake, clock=harness.clock)
    harness.pipeline = AlertPipeline(
        settings(timeout=0.2),
        harness.store,
        harness.outbox,
        harness.live,
        clock=harness.clock,
        prometheus=enricher,
    )
    await harness.run(webhook([alert("a1")]))
    items = await harness.items()
    text = text_of(items[0])
    assert "Window counts (last 15m, from Prometheus): unavailable: took longer than 0.2s" in text
    assert "Live state read" in text  # the live read was on time and is used
    assert [i.kind for i in items] == [OutboxKind.POST]  # the chart was late too: not uploaded
    fake.gate.set()
    await enricher.aclose()


async def test_prometheus_refusing_names_the_reason_and_posts_anyway(
    prom_harness: tuple[Harness, FakePrometheus],
) -> None:
    harness, fake = prom_harness
    fake.refuse = "Prometheus http://prom /api/v1/query: refused (bad_data): parse error"
    await harness.run(webhook([alert("a1")]))
    items = await harness.items()
    assert [i.kind for i in items] == [OutboxKind.POST]
    assert "unavailable: Prometheus http://prom /api/v1/query: refused (bad_data)" in text_of(items[0])


async def test_an_alert_of_no_cluster_asks_prometheus_nothing(
    prom_harness: tuple[Harness, FakePrometheus],
) -> None:
    harness, fake = prom_harness
    await harness.run(webhook([alert("x1", cluster=None, target="nobody/knows")]))
    assert fake.queries == []
    assert fake.ranges == []


# -- HA replicas -------------------------------------------------------------------------------------


async def test_an_alert_from_an_addressable_replica_is_enriched_from_that_replica(
    harness: Harness,
) -> None:
    alpha = {**cluster_config("alpha", None), "replicas": {"alpha-0": "alpha-0-context"}}
    data = {"slack": {"default_channel": "#proxy-alerts"}, "clusters": [alpha, cluster_config("beta", None)]}
    pipeline = harness.make_pipeline(Settings.model_validate(data))
    pinned = alert("a1")
    pinned["labels"]["pod"] = "alpha-0"
    elsewhere = alert("a2", cluster="beta")
    elsewhere["labels"]["pod"] = "beta-1"  # beta lists no replicas: read through its Service
    await harness.accept(webhook([pinned, elsewhere]))
    for notification in await harness.store.pending():
        await pipeline.process(notification)
    await pipeline.aclose()
    assert sorted(harness.live.reads) == ["alpha/alpha-0", "beta"]
    by_channel = {i.channel: json.dumps(i.payload, ensure_ascii=False) for i in await harness.items()}
    assert "Replica read:* `alpha-0`" in by_channel["#alpha-alerts"]
    assert "from replica `alpha-0`" in by_channel["#alpha-alerts"]
    assert "Replica read:* —" in by_channel["#beta-alerts"]
