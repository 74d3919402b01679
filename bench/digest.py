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
from dataclasses import dataclass
from pathlib import Path

# Run as a script, Python puts bench/ on the path, not the repository root that holds `bot`.
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.syncer_page import build_page
from bot.digest.fleet import DEFAULT_CLUSTER_TIMEOUT, DEFAULT_CONCURRENCY
from bot.digest.judge import assemble_digest
from bot.digest.pool import DigestPool, digest_pool, judge_fleet, warm_up
from bot.domain.digest import Digest, Health
from bot.live import LiveState
from bot.render.blocks import Message
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


def fleet_settings(targets: list[str], gvs: list[str], count: int = CLUSTERS) -> Settings:
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
        for i in range(count)
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


@dataclass(frozen=True)
class Fleet:
    """A fleet of fake clusters (one hung, unless `hung` is None) and the settings that name them."""

    settings: Settings
    sources: dict[str, FakeCluster]
    targets: int  # per cluster


def build_fleet(clusters: int = CLUSTERS, hung: str | None = HUNG) -> Fleet:
    page = build_page(targets=TARGETS, group_versions=GROUP_VERSIONS, total_lines=PAGE_LINES)
    targets, gvs = page_shape(page)
    sources = {
        f"cluster-{i}": FakeCluster(own_page(page, targets, i), LATENCY, hung=f"cluster-{i}" == hung)
        for i in range(clusters)
    }
    return Fleet(fleet_settings(targets, gvs, clusters), sources, len(targets))


@dataclass(frozen=True)
class DigestRun:
    """What one digest of a fleet cost and made."""

    wall: float  # from the first read to the rendered message
    read_seconds: float  # until every cluster was read and judged
    seconds: dict[str, float]  # each cluster's cost
    timed_out: frozenset[str]  # the clusters cut off at their timeout
    digest: Digest
    message: Message


async def run_digest(fleet: Fleet, pool: DigestPool) -> DigestRun:
    """The digest as `serve` makes it, on a pool already warm: read and judge, assemble, render."""
    started = time.perf_counter()
    outcomes = await judge_fleet(fleet.settings.clusters, fleet.sources, pool)
    read_seconds = time.perf_counter() - started
    judged = [t for c in fleet.settings.clusters for t in outcomes[c.name].targets]
    seconds = {name: o.seconds for name, o in outcomes.items()}
    digest = assemble_digest(judged, seconds, period="bench", at=time.time())
    message = digest_message(digest)
    timed_out = frozenset(name for name, o in outcomes.items() if o.timed_out)
    return DigestRun(time.perf_counter() - started, read_seconds, seconds, timed_out, digest, message)


async def main() -> int:
    fleet = build_fleet()
    # As `proxybot serve` does after startup: the long-lived heap is frozen, out of the collector's walks.
    gc.collect()
    gc.freeze()
    per_cluster = await baseline(fleet.sources)
    pool = digest_pool()
    warm_started = time.perf_counter()
    await warm_up(pool)  # what `serve` does once at startup
    warm_seconds = time.perf_counter() - warm_started
    try:
        run = await run_digest(fleet, pool)
    finally:
        pool.shutdown()
    digest, message, wall = run.digest, run.message, run.wall
    others = [s for name, s in run.seconds.items() if name != HUNG]
    sequential = per_cluster * (CLUSTERS - 1)
    print(
        f"fleet: {CLUSTERS} clusters x {fleet.targets} targets ({len(digest.targets)} targets), {HUNG} hung"
    )
    print(f"page: {PAGE_LINES} lines, read latency {LATENCY:g} s; concurrency {DEFAULT_CONCURRENCY}")
    print(f"worker pool started at bot startup (not timed): {warm_seconds:.2f} s")
    print("headline: " + ", ".join(f"{h.value} {digest.count(h)}" for h in Health))
    print(f"message: {len(message.blocks)} blocks, {len(message.text)} chars of fallback")
    limit = f"timeout {DEFAULT_CLUSTER_TIMEOUT:g} s"
    hung_timed_out = HUNG in run.timed_out
    print(f"hung cluster: cost {run.seconds[HUNG]:.2f} s ({limit}), reported unreachable: {hung_timed_out}")
    print(f"other clusters: slowest read {max(others):.2f} s; every read done after {run.read_seconds:.2f} s")
    print(
        f"baseline: sequential reads {per_cluster:.3f} s per cluster -> {sequential:.1f} s for {CLUSTERS - 1}"
    )
    print(f"ratio: sequential / digest = {sequential / wall:.1f}x")
    print(f"digest_seconds: {wall:.2f}")
    return 0 if wall <= 5.0 and hung_timed_out else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
