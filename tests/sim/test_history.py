"""sim/history.py: a scripted outage, and the world run fast with a reading every interval."""

from __future__ import annotations

from sim.defaults import TARGET
from sim.history import outage, run_sampled
from sim.scenarios import build_world


async def test_the_world_runs_to_the_end_sampled_every_interval() -> None:
    world = build_world("healthy")
    outage(world, TARGET, 100.0, 250.0)
    seen: list[tuple[float, bool]] = []

    async def sample() -> None:
        seen.append((world.now(), all(p.answering for p in world.platform.targets[TARGET].pods)))

    assert await run_sampled(world, 400.0, sample, every=60.0) == 6
    assert world.now() == 400.0
    assert seen == [
        (60.0, True),
        (120.0, False),
        (180.0, False),
        (240.0, False),
        (300.0, True),
        (360.0, True),
    ]
