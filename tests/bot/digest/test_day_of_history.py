"""A simulated past run fast fills the digest's charts: the outage's dip and recovery, its 503s by reason.

The mechanism a demo uses for issue 40's "day of history" (sim/history.py): the bot samples the simulated
fleet at simulated times, and its first digest then draws both charts from its own readings.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.digest.history import PEERS_CHART, REASONS_CHART
from bot.digest.runner import DigestRunner, DigestSources
from bot.domain.parser import parse_syncer
from bot.live import ClusterRead
from bot.store import Store, open_store
from config.settings import Settings
from sim.defaults import CLIENT, PRIMARY_GV, SECONDARY_GV, TARGET, TARGET_LABEL
from sim.history import outage, run_sampled
from sim.scenarios import build_world
from sim.world import World

HOUR = 3600.0
_TARGET = {
    "name": TARGET_LABEL,
    "group_versions": [PRIMARY_GV, SECONDARY_GV],
    "probe": {"group_version": PRIMARY_GV, "resource": "things"},
}
_CLUSTER = {"name": CLIENT, "kubeconfig": "/nonexistent", "match": {"cluster": CLIENT}, "targets": [_TARGET]}


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(f"sqlite:///{tmp_path / 'bot.db'}")
    yield opened
    await opened.close()


def runner_over(world: World, store: Store) -> DigestRunner:
    def now() -> float:
        return world.wall_time(world.now())

    async def read(cluster: str) -> ClusterRead:
        page = "\n".join(world.proxy(CLIENT).render()) + "\n"
        return ClusterRead(cluster, now(), parse_syncer(page), None, None)

    settings = Settings.model_validate({"slack": {"default_channel": "#fleet"}, "clusters": [_CLUSTER]})
    return DigestRunner(settings, store, DigestSources(read), None, clock=now)


async def test_hours_of_simulated_past_draw_the_outage_and_its_failing_requests(store: Store) -> None:
    world = build_world("healthy")
    outage(world, TARGET, 1 * HOUR, 2 * HOUR)
    runner = runner_over(world, store)
    assert await run_sampled(world, 4 * HOUR, runner.sample) == 8
    built = await runner.build("p", record_sample=False)
    assert [c.filename for c in built.charts] == [f"digest-{PEERS_CHART}.png", f"digest-{REASONS_CHART}.png"]
    assert "not charted" not in built.message.text
    samples = await store.fleet_samples(since=0.0)
    healthy = [s.sample["targets"][TARGET_LABEL]["s"] == "healthy" for s in samples]
    # Sampled every half hour: the dip while the control plane hangs (1 h to 2 h), then the recovery.
    assert healthy == [True, False, False, False, True, True, True, True]
    failed = {reason for s in samples for reason, count in s.sample["faults"].items() if count > 0}
    assert "all_quarantined" in failed  # the 503s of a target with no healthy peer
