"""A simulated past, run fast: the world advanced through scripted trouble, a reading taken as it goes.

The digest's charts draw the bot's own fleet samples (without Prometheus). A demo that wants a day of them
runs its world here before the bot's digest: `outage` schedules a target's control plane hanging and coming
back, `run_sampled` advances the world in steps of `every` simulated seconds and awaits `sample` at each
(the bot's `DigestRunner.sample`, its clock the world's). The world is ticked second by second as ever,
so the readings are the simulator's own: a day of the default fleet takes seconds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sim.world import World

SAMPLE_EVERY = 1800.0  # the bot's own sampling interval (handlers/digest.py's SAMPLE_INTERVAL)


def outage(world: World, target: str, start: float, end: float) -> None:
    """`target`'s control plane stops answering at `start` and answers again at `end` (simulated seconds)."""

    def answering(now: bool) -> Callable[[World], None]:
        def act(w: World) -> None:
            for pod in w.platform.targets[target].pods:
                pod.answering = now

        return act

    world.at(start, f"{target}'s control plane stops answering", answering(False))
    world.at(end, f"{target}'s control plane answers again", answering(True))


async def run_sampled(
    world: World,
    until: float,
    sample: Callable[[], Awaitable[object]],
    *,
    every: float = SAMPLE_EVERY,
    advance: Callable[[float], Awaitable[object]] | None = None,
) -> int:
    """Advance the world to `until`, awaiting `sample` after each `every` seconds; how many were taken.
    `advance` moves the world to a simulated second (default `World.advance_to`; a served world's is
    taken under its lock, and its alerts posted on the way)."""

    async def move(when: float) -> None:
        if advance is None:
            world.advance_to(when)
        else:
            await advance(when)

    taken = 0
    while world.now() + every <= until:
        await move(world.now() + every)
        await sample()
        taken += 1
    await move(until)
    return taken
