"""Benchmark: the fleet digest over 200 client clusters x 5 targets, one cluster hung.

Run from the repository root: `.venv/bin/python bench/digest.py`. Each simulated cluster is a fake metrics
source that answers a realistic `/metrics/syncer` page (bench/syncer_page.py: 5 targets, 2 group/versions,
controller-runtime noise) after a realistic API round trip; one never answers. The real code runs, cold (no
page read before): with the digest's worker pool started beforehand, as `proxybot serve` starts it at
startup, `judge_fleet` reads every page (its bound on concurrency, its per-cluster timeout) and has each
parsed and its targets diagnosed in a worker as soon as it arrives, then `assemble_digest` orders the targets
and the message is rendered.

Baseline, measured in the same run: the same reads one cluster after another for 10 healthy clusters,
extrapolated to 199 (what a plain loop over the fleet would cost, before any hung cluster). The last line
is `digest_seconds: <n>` (target <= 5).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from pathlib import Path

# Run as a script, Python puts bench/ on the path, not the repository root that holds `bot`.
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.syncer_page import build_page
from bot.digest.fleet import DEFAULT_CLUSTER_TIMEOUT, DEFAULT_CONCURRENCY
from bot.digest.judge import Health, assemble_digest
from bot.digest.pool import digest_pool, judge_fleet, warm_up
from bot.live import LiveState
from bot.render.digest import digest_message
from config.settings import Settings

CLUSTERS = 200
TARGETS = 5
GROUP_VERSIONS = 2
PAGE_LINES = 4000
LATENCY = 0.15  # seconds: an API server round trip plus transfer of a ~300 KB page
HUNG = "cluster-137"
BASELINE_CLUSTERS = 10


class FakeCluster:
    """A client cluster's `/metrics/syncer`: the page after `latency` seconds, or never when hung."""

    def __init__(self, page: str, latency: float, hung: bool = False) -> None:
        self.page, self.latency, self.hung = page, latency, hung

    async def syncer_metrics(self, *, timeout: float) -> str:
        if self.hung:
            await asyncio.Event().wait()  # ignores its timeout, as a wedged connection can
        await asyncio.sleep(self.latency)
        return self.page


def own_page(page: str, targets: list[str], index: int) -> str:
    """The page with this cluster's own target names (a target is proxied by one client cluster only)."""
    for t in targets:
        page = page.replace(f'target="{t}"', f'target="{t}-c{index}"')
    return page


def fleet_settings(targets: list[str], gvs: list[str]) -> Settings:
    clusters = [
        {
            "name": f"cluster-{i}",
            "kubeconfig": "/nonexistent/kubeconfig",
            "match": {"cluster": f"cluster-{i}"},
            "targets": [
                {
                    "name": f"{t}-c{i}",
                    "group_versions": gvs,
                    "probe": {"group_version": gvs[0], "resource": "things"},
                }
                for t in targets
            ],
        }
        for i in range(CLUSTERS)
    ]
    return Settings.model_validate({"slack": {"default_channel": "#fleet"}, "clusters": clusters})


def page_shape(page: str) -> tuple[list[str], list[str]]:
    from bot.domain.parser import parse_syncer

    snapshot = parse_syncer(page)
    targets = snapshot.targets()
    return targets, snapshot.group_versions(targets[0])


async def baseline(sources: dict[str, FakeCluster]) -> float:
    """Sequential reads of BASELINE_CLUSTERS healthy clusters, seconds per cluster."""
    live = LiveState(sources)
    names = [n for n in sources if n != HUNG][:BASELINE_CLUSTERS]
    started = time.perf_counter()
    for name in names:
        await live.read(name)
    return (time.perf_counter() - started) / len(names)


async def main() -> int:
    page = build_page(targets=TARGETS, group_versions=GROUP_VERSIONS, total_lines=PAGE_LINES)
    targets, gvs = page_shape(page)
    settings = fleet_settings(targets, gvs)
    sources = {
        f"cluster-{i}": FakeCluster(own_page(page, targets, i), LATENCY, hung=f"cluster-{i}" == HUNG)
        for i in range(CLUSTERS)
    }
    # As `proxybot serve` does after startup: the long-lived heap is frozen, out of the collector's walks.
    gc.collect()
    gc.freeze()
    per_cluster = await baseline(sources)
    pool = digest_pool()
    warm_started = time.perf_counter()
    await warm_up(pool)  # what `serve` does once at startup
    warm_seconds = time.perf_counter() - warm_started

    started = time.perf_counter()
    try:
        outcomes = await judge_fleet(settings.clusters, sources, pool)
    finally:
        pool.shutdown()
    read_seconds = time.perf_counter() - started
    judged = [t for c in settings.clusters for t in outcomes[c.name].targets]
    seconds = {name: o.seconds for name, o in outcomes.items()}
    digest = assemble_digest(judged, seconds, period="bench", at=time.time())
    message = digest_message(digest)
    wall = time.perf_counter() - started

    hung = outcomes[HUNG]
    others = [o.seconds for name, o in outcomes.items() if name != HUNG]
    sequential = per_cluster * (CLUSTERS - 1)
    print(f"fleet: {CLUSTERS} clusters x {len(targets)} targets ({len(digest.targets)} targets), {HUNG} hung")
    print(f"page: {PAGE_LINES} lines, read latency {LATENCY:g} s; concurrency {DEFAULT_CONCURRENCY}")
    print(f"worker pool started at bot startup (not timed): {warm_seconds:.2f} s")
    print("headline: " + ", ".join(f"{h.value} {digest.count(h)}" for h in Health))
    print(f"message: {len(message.blocks)} blocks, {len(message.text)} chars of fallback")
    limit = f"timeout {DEFAULT_CLUSTER_TIMEOUT:g} s"
    print(f"hung cluster: cost {hung.seconds:.2f} s ({limit}), reported unreachable: {hung.timed_out}")
    print(f"other clusters: slowest read {max(others):.2f} s; every read done after {read_seconds:.2f} s")
    print(
        f"baseline: sequential reads {per_cluster:.3f} s per cluster -> {sequential:.1f} s for {CLUSTERS - 1}"
    )
    print(f"ratio: sequential / digest = {sequential / wall:.1f}x")
    print(f"digest_seconds: {wall:.2f}")
    return 0 if wall <= 5.0 and hung.timed_out else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
