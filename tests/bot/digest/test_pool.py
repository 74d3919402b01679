"""The digest judged in worker processes: the same targets as judging LiveState reads, the same bounds."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from bot.digest.fleet import Health, build_digest, read_fleet
from bot.digest.pool import judge_fleet, judge_fleet_in_pool
from bot.live import LiveState
from config.settings import Settings

GV = "example.com/v1"


def page(target: str, healthy: int, failures: int = 0) -> str:
    at = f'target="{target}",group_version="{GV}"'
    lines = [
        "# TYPE vcluster_proxy_peers gauge",
        f'vcluster_proxy_peers{{{at},state="healthy"}} {healthy}',
        f'vcluster_proxy_peers{{{at},state="quarantined"}} {2 - healthy}',
        f'vcluster_proxy_peers{{{at},state="half_open"}} 0',
        "# TYPE vcluster_proxy_peer_cache_synced gauge",
        f"vcluster_proxy_peer_cache_synced{{{at}}} 1",
        "# TYPE vcluster_proxy_request_total counter",
        f'vcluster_proxy_request_total{{{at},verb="get",code="503",reason="all_quarantined"}} {failures}',
        "# TYPE workqueue_depth gauge",
        'workqueue_depth{name="syncer"} 0',
    ]
    return "\n".join(lines) + "\n"


class FakePages:
    """Clusters' `/metrics/syncer` pages; a hung cluster never answers."""

    def __init__(self, text: str | None) -> None:
        self.text = text

    async def syncer_metrics(self, *, timeout: float) -> str:
        if self.text is None:
            await asyncio.Event().wait()
        await asyncio.sleep(0.01)
        assert self.text is not None
        return self.text


def fleet(*clusters: tuple[str, str]) -> Settings:
    return Settings.model_validate(
        {
            "slack": {"default_channel": "#fleet"},
            "clusters": [
                {
                    "name": name,
                    "kubeconfig": "/nonexistent",
                    "match": {"cluster": name},
                    "targets": [
                        {"name": t, "group_versions": [GV], "probe": {"group_version": GV, "resource": "x"}}
                    ],
                }
                for name, t in clusters
            ],
        }
    )


SETTINGS = fleet(("a", "p/ta"), ("b", "p/tb"), ("c", "p/tc"), ("d", "p/td"), ("e", "p/te"))
SOURCES = {
    "a": FakePages(page("p/ta", 2)),
    "b": FakePages(page("p/tb", 0, failures=7)),
    "c": FakePages(None),
    "d": FakePages(page("p/td", 2) + 'vcluster_proxy_peers{target="p/td" 1\n'),
}


async def test_judged_in_workers_as_judged_from_live_reads() -> None:
    pooled = await judge_fleet_in_pool(SETTINGS.clusters, SOURCES, workers=2, timeout=0.5)
    reads = await read_fleet([c.name for c in SETTINGS.clusters], LiveState(SOURCES).read, timeout=0.5)
    expected = build_digest(SETTINGS, reads, period="p", at=0.0).targets
    judged = {t.target: t for j in pooled.values() for t in j.targets}
    assert len(judged) == len(expected) == 5
    for want in expected:
        got = judged[want.target]
        assert got.health is want.health
        assert (got.findings, got.healthy_peers, got.fault_totals) == (
            want.findings,
            want.healthy_peers,
            want.fault_totals,
        )
        assert got.unavailable == want.unavailable
    assert [judged[t].health for t in ("p/ta", "p/tb", "p/tc", "p/td", "p/te")] == [
        Health.HEALTHY,
        Health.DEGRADED,
        Health.UNREACHABLE,
        Health.UNREACHABLE,
        Health.UNREACHABLE,
    ]
    assert "line 11" in str(judged["p/td"].unavailable)


async def test_a_hung_cluster_costs_its_timeout_and_is_reported_timed_out() -> None:
    with ThreadPoolExecutor(2) as pool:
        judged = await judge_fleet(SETTINGS.clusters, SOURCES, pool, timeout=0.3)
    assert [name for name, j in judged.items() if j.timed_out] == ["c"]
    assert judged["c"].seconds >= 0.3
    assert judged["c"].targets[0].unavailable == "cluster c: no answer within 0.3 s (timed out)"
    assert judged["e"].targets[0].unavailable == "cluster e is not configured"


class CountingPages:
    """Pages that count how many are being fetched at once."""

    def __init__(self) -> None:
        self.active = self.peak = 0

    async def syncer_metrics(self, *, timeout: float) -> str:
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.01)
        self.active -= 1
        return page("p/t", 2)


async def test_fetches_are_bounded_by_concurrency() -> None:
    settings = fleet(*((f"c{i}", f"p/t{i}") for i in range(8)))
    counting = CountingPages()
    with ThreadPoolExecutor(2) as pool:
        judged = await judge_fleet(
            settings.clusters,
            dict.fromkeys((c.name for c in settings.clusters), counting),
            pool,
            concurrency=3,
        )
    assert counting.peak == 3
    assert len(judged) == 8
