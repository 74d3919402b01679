"""The resolution summary through the real pipeline, store and outbox: one reply per episode, its line on
the resolved message, the bot's own readings (a reset counted from zero), who acknowledged, the checks
and escalations recorded for the episode, the episode's record for the digest; and Prometheus' counts
when it is configured, the readings when it fails."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from bot.alerts.resolution import ResolutionDesk
from bot.alerts.storm import StormPolicy
from bot.clients.prometheus import Sample
from bot.domain.escalation import Escalation, EscalationOutcome
from bot.domain.impact import ImpactTally, sample
from bot.domain.messages import AlertGroupView, AlertView, GroupStatus, LiveRead
from bot.domain.parser import parse_syncer
from bot.domain.resolution import EpisodeRecord, EventKind, OncallEvent
from bot.domain.silences import Matcher, Silence
from bot.errors import UpstreamError
from bot.store.models import Acknowledgement, OutboxItem, OutboxKind
from config.escalation import EscalationSettings
from tests.fakes.alert_pipeline import Harness, alert, settings, webhook

CHANNEL = "#alpha-alerts"
EPISODE = datetime(2023, 11, 14, 22, 0, tzinfo=UTC).timestamp()


def page(no_peer: float, quarantined: int = 2) -> str:
    t = 'target="team-a/db",group_version="example.com/v1"'
    return f"""# TYPE vcluster_proxy_request_total counter
vcluster_proxy_request_total{{{t},verb="get",code="503",reason="no_peer"}} {no_peer}
vcluster_proxy_request_total{{{t},verb="get",code="200",reason="upstream"}} 500
# TYPE vcluster_proxy_peers gauge
vcluster_proxy_peers{{{t},state="healthy"}} {2 - quarantined}
vcluster_proxy_peers{{{t},state="quarantined"}} {quarantined}
vcluster_proxy_peers{{{t},state="half_open"}} 0
vcluster_proxy_peer_cache_synced{{{t}}} 1
"""


def shown(item: OutboxItem) -> str:
    return json.dumps(item.payload, ensure_ascii=False)


def summaries(items: list[OutboxItem]) -> list[OutboxItem]:
    return [i for i in items if i.kind is OutboxKind.REPLY and "Resolution summary" in shown(i)]


async def fire_then_resolve(harness: Harness, *pages: str) -> str:
    """Fire, one reading per page (the last one with the resolved notification); the group's key."""
    harness.live.snapshot = parse_syncer(pages[0])
    await harness.run(webhook([alert("a1")]))
    for text in pages[1:-1]:
        harness.live.snapshot = parse_syncer(text)
        harness.clock.now += 60
        await harness.run(webhook([alert("a1"), alert("a2")]))  # a later notification of the episode
    harness.live.snapshot = parse_syncer(pages[-1])
    await harness.run(webhook([alert("a1", resolved=True), alert("a2", resolved=True)]))
    items = await harness.items()
    return str(items[0].payload["group_key"])


async def test_the_summary_counts_the_bots_own_readings_with_a_reset_from_zero(harness: Harness) -> None:
    # 40 at the first post; 55 a minute later; the pod restarted: 9 at the resolve.
    key = await fire_then_resolve(harness, page(40), page(55, quarantined=2), page(9, quarantined=0))
    items = await harness.items()
    [summary] = summaries(items)
    text = shown(summary)
    assert "24 failed requests" in text  # 15, then 9 counted from zero
    assert "`503` `no_peer`: 24" in text
    assert "1 counter reset(s) found" in text
    assert "proxybot's own readings" in text
    assert "never acknowledged" in text
    assert "Peak quarantined peers: 2" in text
    assert "2 resolved" in summary.payload["text"]  # what the resolving notification changed comes first
    resolved_message = [i for i in items if i.kind is OutboxKind.UPDATE][-1]
    assert "🧾 Fired 12 min, never acknowledged, 24 failed requests" in shown(resolved_message)
    [record] = await harness.store.events_since(EventKind.RESOLVED, 0.0)
    found = EpisodeRecord.from_json(json.loads(record.detail))
    assert (found.targets, found.acked_after, found.failed) == (("team-a/db",), None, 24.0)
    assert record.group_key == key


async def test_a_replayed_resolve_adds_no_second_summary(harness: Harness) -> None:
    await fire_then_resolve(harness, page(40), page(41))
    resolved = webhook([alert("a1", resolved=True), alert("a2", resolved=True)])
    await harness.run(resolved)  # Alertmanager's HA peer delivers it again
    assert len(summaries(await harness.items())) == 1
    assert len(await harness.store.events_since(EventKind.RESOLVED, 0.0)) == 1


async def test_who_acknowledged_and_what_was_run_and_escalated_in_the_episode(harness: Harness) -> None:
    paging = EscalationSettings(after=600, mention="<!subteam^S1ONCALL>")
    harness.pipeline = harness.make_pipeline(settings().model_copy(update={"escalation": paging}))
    harness.live.snapshot = parse_syncer(page(40))
    await harness.run(webhook([alert("a1")]))
    key = str((await harness.items())[0].payload["group_key"])
    # The escalation side's row: scheduled, then sent at its deadline (closed on the store's clock).
    due = await harness.store.schedule_escalation(Escalation(CHANNEL, key, EPISODE, EPISODE + 600))
    now, harness.clock.now = harness.clock.now, EPISODE + 601
    assert await harness.store.close_escalation(due, EscalationOutcome.SENT)
    harness.clock.now = now
    ack = Acknowledgement(CHANNEL, key, EPISODE, "U0ALICE", "alice", EPISODE + 180)
    await harness.store.acknowledge(ack)
    for e in (
        OncallEvent("c1", CHANNEL, key, EPISODE, EventKind.PROBE, EPISODE + 200, "alice", "Probe x: failed"),
        OncallEvent("old", CHANNEL, key, EPISODE - 9000, EventKind.PROBE, EPISODE - 8000, "bob", "earlier"),
    ):
        await harness.store.record_event(e)
    await harness.run(webhook([alert("a1", resolved=True)]))
    [summary] = summaries(await harness.items())
    text = shown(summary)
    assert "acknowledged by alice 3 min after it fired" in text
    assert "Probe now by alice at 22:03 UTC: Probe x: failed" in text
    assert "earlier" not in text  # another episode's check
    assert "22:10 UTC to &lt;!subteam^S1ONCALL&gt;" in text  # named, never a second page
    [record] = await harness.store.events_since(EventKind.RESOLVED, 0.0)
    found = EpisodeRecord.from_json(json.loads(record.detail))
    assert (found.acked_after, found.acked_by, found.escalated) == (180.0, "U0ALICE", True)


class FakePrometheus:
    """Answers the summary's three queries as Prometheus would; can fail."""

    def __init__(self, down: bool = False) -> None:
        self.down = down
        self.asked: list[tuple[str, float | None]] = []

    async def query(
        self, expr: str, *, at: float | None = None, timeout: float | None = None
    ) -> list[Sample]:
        self.asked.append((expr, at))
        if self.down:
            raise UpstreamError("Prometheus at http://prometheus: connection refused")
        if expr.startswith("sum by (code, reason) (increase("):
            return [Sample({"code": "503", "reason": "all_quarantined"}, 40.6, 0.0)]
        if 'state="quarantined"' in expr:
            return [Sample({}, 2.0, 0.0)]
        return []  # no unsynced cache in the window: no series

    async def query_range(self, *args: object, **kwargs: object) -> list[object]:
        raise AssertionError("not asked")

    async def aclose(self) -> None: ...


async def prometheus_summary(harness: Harness, prometheus: FakePrometheus) -> str:
    harness.live.snapshot = parse_syncer(page(40))
    await harness.run(webhook([alert("a1")]))
    prev = await harness.store.get_group(CHANNEL, str((await harness.items())[0].payload["group_key"]))
    assert prev is not None
    silence = Silence(
        "s1", "expired", (Matcher("target", "team-a/db"),), datetime.fromtimestamp(EPISODE + 60, UTC),
        datetime.fromtimestamp(EPISODE + 3600, UTC), "bob (U0BOB)", "db failover",
    )  # fmt: skip
    desk = ResolutionDesk(settings(), harness.store, harness.outbox, prometheus, Silences((silence,)))
    view = resolved_view(prev.group_key)
    resolution = await desk.resolve(prev, view, harness_tally(page(40), page(41)))
    assert resolution is not None
    await desk.post(resolution, datetime.fromtimestamp(harness.clock(), UTC))
    [summary] = summaries(await harness.items())
    return shown(summary)


class Silences:
    def __init__(self, silences: tuple[Silence, ...]) -> None:
        self.silences = silences


def resolved_view(group_key: str) -> AlertGroupView:
    start, end = datetime.fromtimestamp(EPISODE, UTC), datetime.fromtimestamp(EPISODE + 720, UTC)
    labels = {"alertname": "ResourceProxyNoHealthyPeers", "target": "team-a/db", "cluster": "alpha"}
    one = AlertView("ResourceProxyNoHealthyPeers", GroupStatus.RESOLVED, start, labels, ends_at=end)
    return AlertGroupView(
        group_key, GroupStatus.RESOLVED, (one,), start, LiveRead(), cluster="alpha", resolved_at=end
    )


def harness_tally(*pages: str) -> ImpactTally:
    tally = ImpactTally()
    for i, text in enumerate(pages):
        tally = tally.fold(sample("alpha", float(i), parse_syncer(text), ["team-a/db"]))
    return tally


async def test_prometheus_counts_the_window_when_it_is_configured(harness: Harness) -> None:
    prometheus = FakePrometheus()
    text = await prometheus_summary(harness, prometheus)
    assert "41 failed requests" in text  # increase() extrapolates: whole requests
    assert "`503` `all_quarantined`: 41" in text
    assert "Counted by Prometheus: `increase()` over the firing window" in text
    assert "Peak quarantined peers: 2; peak unsynced peer caches: 0." in text
    assert "by bob (U0BOB) from 22:01 UTC until 23:00 UTC: db failover" in text
    exprs = [e for e, _ in prometheus.asked]
    assert any("[720s]" in e and 'target="team-a/db"' in e and 'cluster="alpha"' in e for e in exprs)
    assert {at for _, at in prometheus.asked} == {EPISODE + 720}  # asked as of the resolve


async def test_a_failing_prometheus_falls_back_to_the_readings_and_says_why(harness: Harness) -> None:
    text = await prometheus_summary(harness, FakePrometheus(down=True))
    assert "1 failed requests" in text
    assert "proxybot's own readings" in text
    assert "Prometheus was not used: Prometheus at http://prometheus: connection refused" in text


def storm_page(no_peer: float) -> str:
    """Four targets, each with `no_peer` failed requests."""
    lines = ["# TYPE vcluster_proxy_request_total counter"]
    for i in range(4):
        where = f'target="team-{i}/db",group_version="example.com/v1"'
        lines.append(
            f'vcluster_proxy_request_total{{{where},verb="get",code="503",reason="no_peer"}} {no_peer}'
        )
    return "\n".join(lines) + "\n"


def storm_webhook(i: int, *, resolved: bool = False) -> bytes:
    one = alert(f"s{i}", target=f"team-{i}/db", resolved=resolved)
    return webhook([one], group=f'{{}}:{{target="team-{i}/db"}}')


async def test_a_storm_that_resolved_gets_one_summary_of_its_groups_readings(harness: Harness) -> None:
    harness.pipeline = harness.make_pipeline(settings(), StormPolicy(groups=2))
    harness.live.snapshot = parse_syncer(storm_page(10))
    for i in range(4):
        await harness.run(storm_webhook(i))
    await harness.settle(StormPolicy().first_within_seconds)
    harness.clock.now += 60
    harness.live.snapshot = parse_syncer(storm_page(15))
    for i in range(4):
        await harness.run(storm_webhook(i, resolved=True))
    await harness.settle()
    items = await harness.items()
    [summary] = summaries(items)
    assert summary.payload["group_key"].startswith(f"storm:{CHANNEL}:")
    text = shown(summary)
    assert "20 failed requests" in text  # 5 more on each of the four targets
    assert "never acknowledged" in text
    assert "proxybot's own readings" in text


async def test_a_group_firing_again_starts_a_new_episode_with_its_own_summary(harness: Harness) -> None:
    await fire_then_resolve(harness, page(40), page(50))
    harness.clock.now += 600
    again = {**alert("a1"), "startsAt": "2023-11-14T23:00:00Z"}
    harness.live.snapshot = parse_syncer(page(70))  # the new episode's baseline
    await harness.run(webhook([again]))
    harness.live.snapshot = parse_syncer(page(73))
    ended = {**again, "status": "resolved", "endsAt": "2023-11-14T23:05:00Z"}
    await harness.run(webhook([ended]))
    first, second = summaries(await harness.items())
    assert "10 failed requests" in shown(first)
    assert "3 failed requests" in shown(second)  # nothing of the first episode, nor of the gap
    assert "Fired 5 min" in shown(second)
    assert len(await harness.store.events_since(EventKind.RESOLVED, 0.0)) == 2
