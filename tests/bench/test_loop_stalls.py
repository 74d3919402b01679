"""bench/loop_stalls.py finds what holds an event loop: a callback that blocks it is logged as a stall, with
the blocking call in its sampled stacks and its task among the slow callbacks."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from bench.loop_stalls import LoopWatch, Stall, Stalls, WatchedLoops
from tests.waiting import eventually

HELD = 0.08  # seconds the test blocks its loop: several times the watch's threshold and sampling period
OTHERS = 8  # busy threads beside the loop: more than the stacks a stall's profile lists
SAMPLES = 5  # the loop thread's stacks the watchdog must have taken while it was held


def hold_the_loop_in_a_recognisable_place(watch: LoopWatch) -> None:
    """Block the loop on purpose (the stall under test) for HELD, and on until the watchdog has sampled it
    a few times: on a loaded machine its thread may get a CPU only late in the stall."""
    given_up = time.monotonic() + 10.0
    time.sleep(HELD)  # measuring the loop: this is the stall the watchdog must see
    while watch.loop_samples < SAMPLES and time.monotonic() < given_up:
        time.sleep(0.005)  # still the stall: the loop must stay blocked until the watchdog sampled it


async def held_once(watched: WatchedLoops) -> None:
    watch = watched.watch
    assert watch is not None, "the loop was not watched"
    # The heartbeat has beaten since the watch began: the stall is late against it.
    await eventually(lambda: watch.beats > 1, "the watch's heartbeat", timeout=5.0)
    hold_the_loop_in_a_recognisable_place(watch)
    assert watch.loop_samples >= SAMPLES, "the watchdog never sampled the held loop's thread"
    try:
        await eventually(lambda: watch.stalls().spans, "the stall written down", timeout=5.0)
    finally:
        watch.stop()


def test_a_blocked_loop_is_a_stall_with_its_blocking_call_sampled(tmp_path: Path) -> None:
    path = tmp_path / "stalls.txt"
    policy, watched = asyncio.get_event_loop_policy(), WatchedLoops(path)
    asyncio.set_event_loop_policy(watched)
    try:
        started = time.monotonic()
        asyncio.run(held_once(watched))
    finally:
        asyncio.set_event_loop_policy(policy)

    longest = Stalls.read(path).longest(started, time.monotonic())
    assert longest.seconds >= HELD * 0.75, longest
    stacks = path.with_name(path.name + ".stacks").read_text()
    assert "hold_the_loop_in_a_recognisable_place" in stacks
    callbacks = path.with_name(path.name + ".callbacks").read_text()
    assert "task held_once" in callbacks


def test_the_loops_stack_is_written_however_many_other_threads_are_busy(tmp_path: Path) -> None:
    """Threads a test left behind, busy beside the held loop (a relay's copying threads, seen in a full
    run), each get a stack of their own in the profile: the loop's must not be crowded out of it."""
    path = tmp_path / "stalls.txt"
    done = threading.Event()

    def busy_elsewhere() -> None:
        while not done.is_set():
            sum(range(100))

    others = [threading.Thread(target=busy_elsewhere, daemon=True) for _ in range(OTHERS)]
    for thread in others:
        thread.start()
    policy, watched = asyncio.get_event_loop_policy(), WatchedLoops(path)
    asyncio.set_event_loop_policy(watched)
    try:
        asyncio.run(held_once(watched))
    finally:
        asyncio.set_event_loop_policy(policy)
        done.set()
        for thread in others:
            thread.join()

    stacks = path.with_name(path.name + ".stacks").read_text()
    assert "busy_elsewhere" in stacks  # they are sampled too: what else ran in the stall
    assert "hold_the_loop_in_a_recognisable_place" in stacks


def test_the_longest_stall_is_the_longest_that_began_in_the_window(tmp_path: Path) -> None:
    path = tmp_path / "stalls.txt"
    path.write_text("10.0 0.050 0.040 0.001\n12.0 0.200 0.010 0.150\n20.0 0.900 0.0 0.0\n")
    stalls = Stalls.read(path)
    assert stalls.longest(9.0, 15.0) == Stall(12.0, 0.2, 0.01, 0.15)
    assert stalls.longest(13.0, 19.0).seconds == 0.0
    assert "waited for a CPU 150.0 ms" in str(stalls.longest(9.0, 15.0))
