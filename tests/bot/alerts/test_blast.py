"""Who else is hit: an alert about a target several clients use reads each of them in its own round."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.domain.parser import parse_syncer
from bot.live import ClusterRead
from bot.store import OutboxItem, OutboxKind, open_store
from config.settings import Settings
from tests.fakes.alert_pipeline import Clock, FakeLive, Harness, alert, cluster_config, webhook

SHARED = "platform/db"


def text_of(item: OutboxItem) -> str:
    return json.dumps(item.payload, ensure_ascii=False)


def page(healthy: int) -> str:
    labels = f'target="{SHARED}",group_version="example.com/v1"'
    return (
        "# TYPE vcluster_proxy_peers gauge\n"
        f'vcluster_proxy_peers{{{labels},state="healthy"}} {healthy}\n'
        f'vcluster_proxy_peers{{{labels},state="quarantined"}} {0 if healthy else 2}\n'
        f'vcluster_proxy_peers{{{labels},state="half_open"}} 0\n'
        f"vcluster_proxy_peer_cache_synced{{{labels}}} 1\n"
    )


class PerClusterLive(FakeLive):
    """Each client's own page; a client named in `failing` cannot be read."""

    def __init__(self, healthy: dict[str, int], failing: str | None = None) -> None:
        super().__init__()
        self.pages = {name: parse_syncer(page(n)) for name, n in healthy.items()}
        self.failing = failing

    async def read(self, cluster: str) -> ClusterRead:
        self.reads.append(cluster)
        if cluster == self.failing:
            return ClusterRead(cluster, 1_700_000_000.0, None, None, "connection refused")
        return ClusterRead(cluster, 1_700_000_000.0, self.pages[cluster], None, None)


def shared_settings(*names: str) -> Settings:
    clusters: list[dict[str, Any]] = []
    for name in names:
        entry = cluster_config(name, "#proxy")
        entry["targets"][0]["name"] = SHARED
        clusters.append(entry)
    return Settings.model_validate({"slack": {"default_channel": "#proxy"}, "clusters": clusters})


@pytest.fixture
async def store_path(tmp_path: Path) -> Path:
    return tmp_path / "proxybot.db"


async def harness_of(path: Path, live: FakeLive, config: Settings) -> Harness:
    clock = Clock()
    store = await open_store(f"sqlite:///{path}", clock=clock)
    return Harness(store, clock, live, config)


@pytest.fixture
async def three(store_path: Path) -> AsyncIterator[Harness]:
    live = PerClusterLive({"alpha": 0, "beta": 0, "gamma": 2}, failing=None)
    h = await harness_of(store_path, live, shared_settings("alpha", "beta", "gamma"))
    yield h
    await h.pipeline.aclose()
    await h.store.close()


async def test_an_alert_on_a_shared_target_names_every_client_hit_and_the_one_not(three: Harness) -> None:
    await three.run(webhook([alert("a1", cluster="alpha", target=SHARED)]))
    post, details = await three.items()
    assert post.kind is OutboxKind.POST
    assert (
        "🎯 2 of 3 clients cannot reach platform/db (example.com/v1: no healthy peers): alpha, beta; "
        "gamma still healthy"
    ) in text_of(post)
    assert sorted(three.live.reads) == ["alpha", "beta", "gamma"]  # each client read, once
    shown = text_of(details)
    assert "Clients of `platform/db`, 2 of 3 cut off" in shown
    assert "• `beta`: example.com/v1: no healthy peers" in shown
    assert "• `gamma`: still healthy" in shown


async def test_a_client_that_cannot_be_read_is_said_not_read(store_path: Path) -> None:
    live = PerClusterLive({"alpha": 0, "beta": 0, "gamma": 2}, failing="gamma")
    h = await harness_of(store_path, live, shared_settings("alpha", "beta", "gamma"))
    try:
        await h.run(webhook([alert("a1", cluster="alpha", target=SHARED)]))
        post, details = await h.items()
        assert "🎯 all 2 clients" not in text_of(post)
        assert "2 of 3 clients cannot reach platform/db" in text_of(post)
        assert "; gamma not read" in text_of(post)
        assert "• `gamma`: not read: connection refused" in text_of(details)
    finally:
        await h.pipeline.aclose()
        await h.store.close()


async def test_a_target_of_one_client_has_no_blast_line_and_reads_nothing_more(store_path: Path) -> None:
    live = PerClusterLive({"alpha": 0, "beta": 2})
    config = Settings.model_validate(
        {
            "slack": {"default_channel": "#proxy"},
            "clusters": [cluster_config("alpha", None), cluster_config("beta", None)],
        }
    )
    h = await harness_of(store_path, live, config)
    try:
        await h.run(webhook([alert("a1", cluster="alpha", target="alpha/db")]))
        post, _ = await h.items()
        assert "🎯" not in text_of(post)
        assert live.reads == ["alpha"]
    finally:
        await h.pipeline.aclose()
        await h.store.close()


def beta_group(fingerprint: str = "b1") -> bytes:
    return webhook(
        [alert(fingerprint, cluster="beta", target=SHARED)],
        group='{}:{alertname="ResourceProxyNoHealthyPeers", cluster="beta"}',
    )


async def test_a_second_client_losing_the_same_target_joins_the_first_ones_message(three: Harness) -> None:
    await three.run(webhook([alert("a1", cluster="alpha", target=SHARED)]))
    before = len(await three.items())
    await three.run(beta_group())
    added = (await three.items())[before:]
    assert OutboxKind.POST not in [i.kind for i in added]  # one message for the target
    [update] = [i for i in added if i.kind is OutboxKind.UPDATE]
    shown = text_of(update)
    assert "on `alpha`, `beta`" in shown
    assert "*1 alert rule, one cause:* the target's endpoints (no healthy peer)" in shown
    assert "🎯 2 of 3 clients cannot reach platform/db" in shown
    replies = [i for i in added if i.kind is OutboxKind.REPLY]
    assert any("Joined this incident" in text_of(r) for r in replies)
    # Its details reply says whose it is: another client than the message's.
    assert any("on `platform/db` (`example.com/v1`) from `beta`, since" in text_of(r) for r in replies)


async def test_a_client_with_a_target_of_its_own_does_not_join_another_clients_incident(
    store_path: Path,
) -> None:
    live = PerClusterLive({"alpha": 0, "beta": 0})
    config = Settings.model_validate(
        {
            "slack": {"default_channel": "#proxy"},
            "clusters": [cluster_config("alpha", "#proxy"), cluster_config("beta", "#proxy")],
        }
    )
    live.pages = {
        "alpha": parse_syncer(page(0).replace(SHARED, "alpha/db")),
        "beta": parse_syncer(page(0).replace(SHARED, "beta/db")),
    }
    h = await harness_of(store_path, live, config)
    try:
        await h.run(webhook([alert("a1", cluster="alpha", target="alpha/db")]))
        await h.run(
            webhook(
                [alert("b1", cluster="beta", target="beta/db")],
                group='{}:{alertname="ResourceProxyNoHealthyPeers", cluster="beta"}',
            )
        )
        assert [i.kind for i in await h.items()].count(OutboxKind.POST) == 2
    finally:
        await h.pipeline.aclose()
        await h.store.close()
