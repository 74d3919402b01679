"""A small client fleet for digest tests: its settings, its proxies' `/metrics/syncer` pages and snapshots.

fleet(("a", "p/ta"), ("b", ["p/x", "p/y"]))   settings: each client cluster with its targets
page(target, healthy, failures)               a syncer page of one target (of 2 peers)
snapshot(target, healthy, failures)           the same, parsed
FakePages(text)                               a cluster's page source; None: it never answers
SETTINGS, SOURCES                             five clusters: healthy, degraded, hung, unparsable, absent
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from bot.domain.snapshot import PEER_CACHE_SYNCED, PEERS, REQUESTS, ProxySnapshot, make_labels
from config.settings import Settings

GV = "example.com/v1"


def fleet(*clusters: tuple[str, str | Sequence[str]]) -> Settings:
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
                        for t in ([targets] if isinstance(targets, str) else targets)
                    ],
                }
                for name, targets in clusters
            ],
        }
    )


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


def snapshot(target: str, healthy: float, failures: float = 0.0) -> ProxySnapshot:
    peers = {
        make_labels([("target", target), ("group_version", GV), ("state", state)]): value
        for state, value in (("healthy", healthy), ("quarantined", 2.0 - healthy if healthy < 2 else 0.0))
    }
    peers[make_labels([("target", target), ("group_version", GV), ("state", "half_open")])] = 0.0
    synced = {make_labels([("target", target), ("group_version", GV)]): 1.0}
    labels = [("target", target), ("group_version", GV), ("verb", "get"), ("code", "503")]
    requests = {make_labels([*labels, ("reason", "all_quarantined")]): failures} if failures else {}
    return ProxySnapshot(samples={PEERS: peers, PEER_CACHE_SYNCED: synced, REQUESTS: requests})


class FakePages:
    """Clusters' `/metrics/syncer` pages; a hung cluster never answers."""

    def __init__(self, text: str | None) -> None:
        self.text = text

    async def syncer_metrics(self, *, timeout: float) -> str:
        if self.text is None:
            await asyncio.Event().wait()
        await asyncio.sleep(0.01)  # the fake's page takes a while to come
        assert self.text is not None
        return self.text


SETTINGS = fleet(("a", "p/ta"), ("b", "p/tb"), ("c", "p/tc"), ("d", "p/td"), ("e", "p/te"))
SOURCES = {
    "a": FakePages(page("p/ta", 2)),
    "b": FakePages(page("p/tb", 0, failures=7)),
    "c": FakePages(None),
    "d": FakePages(page("p/td", 2) + 'vcluster_proxy_peers{target="p/td" 1\n'),
}
