"""The alert pipeline against a real SQLite store, the real delivery outbox API and a fake live source.

Storm mode is tested in `test_storm.py`; the harness is `tests.fakes.alert_pipeline`.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.alerts.pipeline import AlertPipeline
from bot.alerts.prom_enrich import PromEnricher
from bot.clients.prometheus import Sample, Series
from bot.domain.alerts import AlertmanagerWebhook
from bot.domain.incident import FLAP_WINDOW_SECONDS
from bot.errors import UpstreamError
from bot.live import ClusterRead
from bot.prom_queries import FAMILY
from bot.store import (
    OutboxKind,
    Store,
    StoredNotification,
)
from config.settings import Settings
from tests.fakes.alert_pipeline import (
    FakeLive,
    Harness,
    alert,
    cluster_config,
    details_of,
    settings,
    text_of,
    webhook,
)

# -- lifecycle ---------------------------------------------------------------------------------------


async def test_first_notification_is_one_enriched_post_and_its_details_in_the_clusters_channel(
    harness: Harness,
) -> None:
    await harness.run(webhook([alert("a1")]))
    items = await harness.items()
    assert [(i.kind, i.channel) for i in items] == [
        (OutboxKind.POST, "#alpha-alerts"),
        (OutboxKind.REPLY, "#alpha-alerts"),
    ]
    payload = items[0].payload
    assert set(payload) == {"group_key", "text", "blocks", "shown_at"}  # shown_at: what its ages count from
    assert payload["group_key"] == '{}:{alertname="ResourceProxyNoHealthyPeers"}'
    assert payload["text"].startswith("FIRING: ResourceProxyNoHealthyPeers")
    assert "Live state read" in text_of(items[0])  # enriched, not "unavailable"
    assert "healthy 0, quarantined 2, half_open 0" in text_of(items[0])  # diagnosed live
    # The details reply: keyed once per group, so every later notification edits it in place.
    assert items[1].key == f"reply:#alpha-alerts:{payload['group_key']}:details"
    assert items[1].payload["group_key"] == payload["group_key"]
    assert "example.com/v1: peers: healthy 0, quarantined 2, half_open 0" in text_of(items[1])
    assert harness.live.reads == ["alpha"]
    assert await harness.store.pending_count() == 0


async def test_a_new_alert_in_the_group_edits_both_in_place_and_replies(harness: Harness) -> None:
    await harness.run(webhook([alert("a1")]))
    await harness.run(webhook([alert("a1"), alert("a2", target="team-b/queue")]))
    items = await harness.items()
    assert [i.kind for i in items] == [
        OutboxKind.POST, OutboxKind.REPLY, OutboxKind.UPDATE, OutboxKind.REPLY_EDIT, OutboxKind.REPLY,
    ]  # fmt: skip
    assert {i.payload["group_key"] for i in items} == {items[0].payload["group_key"]}
    assert "2 alerts firing" in text_of(items[2])
    assert items[3].payload["reply"] == "details"
    assert "team-b/queue" in text_of(items[3])
    assert items[4].payload["text"] == "1 new"
    assert "team-b/queue" in text_of(items[4])


async def test_a_notification_without_added_or_resolved_alerts_edits_without_a_reply(
    harness: Harness,
) -> None:
    await harness.run(webhook([alert("a1")]))
    harness.clock.now += 3600
    # The same alert with a new start (it flapped between evaluations): a new notification, same alerts.
    await harness.run(webhook([{**alert("a1"), "startsAt": "2023-11-14T22:00:01Z"}]))
    items = await harness.items()
    assert [i.kind for i in items] == [
        OutboxKind.POST,
        OutboxKind.REPLY,
        OutboxKind.UPDATE,
        OutboxKind.REPLY_EDIT,
    ]
    assert "updated 23:13:20 UTC" in text_of(items[2])
    assert "updated 23:13:20 UTC" in text_of(items[3])


async def test_all_resolved_turns_the_message_resolved_without_a_new_post(harness: Harness) -> None:
    await harness.run(webhook([alert("a1"), alert("a2", target="team-b/queue")]))
    await harness.run(
        webhook([alert("a1", resolved=True), alert("a2", target="team-b/queue", resolved=True)])
    )
    items = await harness.items()
    assert [i.kind for i in items] == [
        OutboxKind.POST, OutboxKind.REPLY, OutboxKind.UPDATE, OutboxKind.REPLY_EDIT, OutboxKind.REPLY,
    ]  # fmt: skip
    assert items[2].payload["text"].startswith("RESOLVED")
    assert "Resolved after 12 min" in text_of(items[2])
    # The worst state the incident reached, kept from the firing notification.
    assert (
        "worst: 🔴 no healthy peers, all 2 quarantined"
        in json.loads(text_of(items[2]))["blocks"][1]["text"]["text"]
    )
    assert items[3].payload["text"].startswith("Details: resolved")
    assert "2 resolved" in items[4].payload["text"]
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
    assert kinds.count(OutboxKind.REPLY) == 3  # the details, "resolved", "firing again"
    assert kinds[-3:] == [OutboxKind.UPDATE, OutboxKind.REPLY_EDIT, OutboxKind.REPLY]


async def test_firing_again_within_the_flap_window_is_told_in_the_thread_only(harness: Harness) -> None:
    await harness.run(webhook([alert("a1")]))
    await harness.run(webhook([alert("a1", resolved=True)]))
    harness.clock.now += FLAP_WINDOW_SECONDS - 300  # (each run moves the clock on a minute)
    await harness.run(webhook([{**alert("a1"), "startsAt": "2023-11-15T08:00:00Z"}]))
    again = (await harness.items())[-1]
    assert again.kind is OutboxKind.REPLY
    assert "reply_broadcast" not in again.payload  # a flap: the message counts them, the channel is spared


async def test_firing_again_after_a_quiet_hour_is_also_shown_in_the_channel(harness: Harness) -> None:
    """The message of a group that fires again hours after it resolved sits far up the channel, and an
    edit notifies nobody: the "firing again" reply is broadcast to the channel, saying since when it was
    quiet."""
    await harness.run(webhook([alert("a1")]))
    await harness.run(webhook([alert("a1", resolved=True)]))
    harness.clock.now += 4 * 3600
    await harness.run(webhook([{**alert("a1"), "startsAt": "2023-11-15T12:00:00Z"}]))
    again = (await harness.items())[-1]
    assert again.kind is OutboxKind.REPLY
    assert again.payload["reply_broadcast"] is True
    assert again.payload["text"].startswith("Firing again")
    assert "Firing again, 4 h 1 min after it resolved" in text_of(again)  # (each run: a minute)


async def test_one_alert_of_several_resolving_is_an_edit_not_a_reply(harness: Harness) -> None:
    await harness.run(webhook([alert("a1"), alert("a2", target="team-b/queue")]))
    await harness.run(webhook([alert("a1"), alert("a2", target="team-b/queue", resolved=True)]))
    items = await harness.items()
    assert [i.kind for i in items] == [
        OutboxKind.POST,
        OutboxKind.REPLY,
        OutboxKind.UPDATE,
        OutboxKind.REPLY_EDIT,
    ]
    assert "1 alert firing, 1 resolved" in text_of(items[2])


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
    assert [(i.kind, i.channel) for i in items] == [
        (OutboxKind.POST, "#proxy-alerts"),
        (OutboxKind.REPLY, "#proxy-alerts"),
    ]
    assert "no configured cluster matches" in text_of(items[0])
    assert "SomethingElse" in items[0].payload["text"]
    assert harness.live.reads == []


async def test_a_failing_probe_goes_to_the_cluster_whose_control_plane_namespace_it_names(
    harness: Harness,
) -> None:
    # kube-state-metrics' labels only, scraped in the control plane cluster: no `cluster`, no `target`.
    probe = alert("p1", "ResourceProxyProbeFailing", cluster=None)
    probe["labels"] = {
        "alertname": "ResourceProxyProbeFailing",
        "namespace": "vcluster-beta",
        "cronjob": "proxy-probe",
        "job": "kube-state-metrics",
        "severity": "critical",
    }
    elsewhere = {**probe, "fingerprint": "p2", "labels": {**probe["labels"], "namespace": "vcluster-gone"}}
    await harness.run(webhook([probe, elsewhere], group='{}:{alertname="ResourceProxyProbeFailing"}'))
    items = await harness.items()
    assert sorted((i.kind, i.channel) for i in items) == [
        (OutboxKind.POST, "#beta-alerts"),
        (OutboxKind.POST, "#proxy-alerts"),
        (OutboxKind.REPLY, "#beta-alerts"),
        (OutboxKind.REPLY, "#proxy-alerts"),
    ]
    by_channel = {i.channel: i.payload for i in items if i.kind is OutboxKind.POST}
    assert by_channel["#beta-alerts"]["text"] == "FIRING: ResourceProxyProbeFailing (beta)"
    assert "no configured cluster matches" in json.dumps(by_channel["#proxy-alerts"])
    assert harness.live.reads == ["beta"]


async def test_one_group_spanning_two_clusters_is_one_message_in_each_channel(harness: Harness) -> None:
    await harness.run(webhook([alert("a1", cluster="alpha"), alert("b1", cluster="beta")]))
    assert sorted(await harness.kinds()) == [
        (OutboxKind.POST, "#alpha-alerts"),
        (OutboxKind.POST, "#beta-alerts"),
        (OutboxKind.REPLY, "#alpha-alerts"),
        (OutboxKind.REPLY, "#beta-alerts"),
    ]
    assert sorted(harness.live.reads) == ["alpha", "beta"]


async def test_late_enrichment_is_marked_unavailable_and_not_waited_for(harness: Harness) -> None:
    harness.live.gate = asyncio.Event()  # never opened: the read hangs
    harness.pipeline = harness.make_pipeline(settings(timeout=0.01))
    await harness.run(webhook([alert("a1")]))
    items = await harness.items()
    assert [i.kind for i in items] == [OutboxKind.POST, OutboxKind.REPLY]
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


async def test_a_read_in_hand_is_used_without_reading_again(harness: Harness) -> None:
    class InHand(FakeLive):
        """Its source had a fresh read: `ready` gives it, so `read` must not be called."""

        def ready(self, cluster: str) -> ClusterRead | None:
            return ClusterRead(cluster, 1_700_000_000.0, self.snapshot, None, None)

    harness.live = InHand()
    harness.pipeline = harness.make_pipeline(settings())
    await harness.run(webhook([alert("a1")]))
    assert "healthy 0, quarantined 2, half_open 0" in text_of((await harness.items())[0])  # diagnosed live
    assert harness.live.reads == []


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


# A notification that empties the queue (`settle`) is saved, then closed once the storm rows count it; any
# other is closed with its group's save, in one store call.
@pytest.mark.parametrize(
    ("crash_in", "settle"), [("save_group_closing", False), ("save_group", True), ("mark_processed", True)]
)
async def test_a_crash_before_closing_then_a_rerun_adds_no_outbox_items(
    harness: Harness, crash_in: str, settle: bool
) -> None:
    await harness.run(webhook([alert("a1")]))
    raw = webhook([alert("a1"), alert("a2", target="team-b/queue")])
    await harness.accept(raw)
    crashing = CrashingStore(harness.store, crash_in)
    doomed = AlertPipeline(settings(), crashing, harness.outbox, harness.live, clock=harness.clock)
    [notification] = await harness.store.pending()
    with pytest.raises(RuntimeError, match="killed"):
        await doomed.process(notification, settle=settle)
    after_crash = [(i.kind, i.key) for i in await harness.items()]
    assert [k for k, _ in after_crash] == [
        OutboxKind.POST, OutboxKind.REPLY, OutboxKind.UPDATE, OutboxKind.REPLY_EDIT, OutboxKind.REPLY,
    ]  # fmt: skip
    await harness.run()  # a fresh pipeline's worker drains what is still pending
    assert [(i.kind, i.key) for i in await harness.items()] == after_crash
    assert await harness.store.pending_count() == 0


async def test_an_older_notification_replayed_after_a_newer_one_changes_nothing(harness: Harness) -> None:
    """A stop that left two notifications of a group open (applied, not yet closed) replays both: the older
    one must not set the message back to its state."""
    await harness.accept(webhook([alert("a1")]))
    await harness.accept(webhook([alert("a1"), alert("a2", target="team-b/queue")]))
    older, newer = await harness.store.pending()
    await harness.pipeline.process(newer)
    before = [(i.kind, i.key) for i in await harness.items()]
    state = await harness.store.get_group("#alpha-alerts", older.webhook.group_key)
    assert state is not None
    assert state.facts.last_notification_id == newer.id
    await harness.pipeline.process(older)
    assert [(i.kind, i.key) for i in await harness.items()] == before
    again = await harness.store.get_group("#alpha-alerts", older.webhook.group_key)
    assert again is not None
    assert (again.facts.last_notification, len(again.firing_fingerprints)) == (newer.identity, 2)
    assert await harness.store.pending_count() == 0


async def test_a_crash_before_the_first_post_is_recorded_does_not_post_twice(harness: Harness) -> None:
    await harness.accept(webhook([alert("a1")]))
    doomed = AlertPipeline(
        settings(),
        CrashingStore(harness.store, "save_group_closing"),
        harness.outbox,
        harness.live,
        clock=harness.clock,
    )
    [notification] = await harness.store.pending()
    with pytest.raises(RuntimeError):
        await doomed.process(notification)
    await harness.run()
    assert [i.kind for i in await harness.items()] == [OutboxKind.POST, OutboxKind.REPLY]


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
    text = text_of(details_of(await harness.items()))
    assert "Live state read" in text
    assert "peers: healthy 0, quarantined 2, half_open 0" in text
    assert "Requests by reason (last 15m, from Prometheus): no_peer 42" in text
    assert "p99 (last 15m, from Prometheus): requests 230 ms (120); dials: too few to tell (0)" in text
    # The diagnosis counted Prometheus' window, not totals since the proxy started.
    assert "42 requests" in text
    assert "no_peer since the proxy started" not in text
    # The series are the alert's target in the configured cluster (match labels), never anything else.
    assert all('cluster="alpha"' in q and 'target="team-a/db"' in q for q in fake.queries)


async def test_the_first_post_gets_one_chart_in_its_thread(
    prom_harness: tuple[Harness, FakePrometheus],
) -> None:
    harness, fake = prom_harness
    await harness.run(webhook([alert("a1")]))
    items = await harness.items()
    assert [i.kind for i in items] == [OutboxKind.POST, OutboxKind.REPLY, OutboxKind.UPLOAD]
    upload = items[2]
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
        settings(timeout=1.0),
        harness.store,
        harness.outbox,
        harness.live,
        clock=harness.clock,
        prometheus=enricher,
    )
    started = asyncio.get_running_loop().time()
    await harness.run(webhook([alert("a1")]))
    took = asyncio.get_running_loop().time() - started
    items = await harness.items()
    text = text_of(details_of(items))
    assert "Window counts (last 15m, from Prometheus): unavailable: took longer than 1s" in text
    assert "Live state read" in text  # the live read was on time and is used
    assert [i.kind for i in items] == [OutboxKind.POST, OutboxKind.REPLY]  # the details reply; no chart
    # Prometheus did not bring the window: the chart is not asked for, the notification costs one budget.
    assert fake.ranges == []
    # One budget, not two in a row: a budget of 1 s leaves a loaded machine 0.9 s of scheduling delay
    # before the bound (at 0.2 s a busy runner crossed it).
    assert took < 1.0 * 1.9
    fake.gate.set()
    await enricher.aclose()


async def test_prometheus_refusing_names_the_reason_and_posts_anyway(
    prom_harness: tuple[Harness, FakePrometheus],
) -> None:
    harness, fake = prom_harness
    fake.refuse = "Prometheus http://prom /api/v1/query: refused (bad_data): parse error"
    await harness.run(webhook([alert("a1")]))
    items = await harness.items()
    assert [i.kind for i in items] == [OutboxKind.POST, OutboxKind.REPLY]
    assert "unavailable: Prometheus http://prom /api/v1/query: refused (bad_data)" in text_of(items[1])


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
    posts = [i for i in await harness.items() if i.kind is OutboxKind.POST]
    by_channel = {i.channel: json.dumps(i.payload, ensure_ascii=False) for i in posts}
    assert "Live state read 22:13:20 UTC (just now) from replica `alpha-0`" in by_channel["#alpha-alerts"]
    assert "from replica" not in by_channel["#beta-alerts"]
