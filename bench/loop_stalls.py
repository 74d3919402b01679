"""The event loop's stalls in a bot process, and what held the loop during them (a benchmark's probe).

`watch_loop(path)` (from a coroutine on the loop to watch) starts a heartbeat task that wakes every
`BEAT` s and a watchdog thread. Whenever the heartbeat is late by more than `STALL`, the watchdog samples
the loop thread's stack every `SAMPLE` s until the loop is free again: a profile of the loop's lag, not of
its CPU time. Each stall ends as a line `<monotonic start> <seconds>` in `path` (the machine's monotonic
clock, the same in every process, so another process can tell which stalls fell in its window) with
how long the loop's thread ran and waited for a CPU meanwhile (Linux's schedstat: a stall the thread
spent waiting for a CPU is the machine's load, not the bot's code). `path` + `.stacks` holds each stall's
sampled stacks (the loop's thread, and any other thread not waiting), `.callbacks` every loop callback
longer than `STALL` named by its task, `.gc` every garbage collection longer than half of it.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TextIO

BEAT = 0.002
STALL = 0.010  # a heartbeat this late is a stall
SAMPLE = 0.002
FRAMES = 30  # outermost frames kept per sample, from the callback down


@dataclass(frozen=True)
class Stall:
    """The loop held from `at` (the monotonic clock) for `seconds`; meanwhile its thread ran on a CPU for
    `ran` s and waited for one for `waited` s (the rest it waited for the GIL, or slept in a call)."""

    at: float
    seconds: float
    ran: float
    waited: float

    def __str__(self) -> str:
        ms = 1000
        return (
            f"{self.seconds * ms:.1f} ms (the loop's thread ran {self.ran * ms:.1f} ms of it, "
            f"waited for a CPU {self.waited * ms:.1f} ms)"
        )


@dataclass
class Stalls:
    """Stalls read back from a watched process's file: (monotonic start, seconds)."""

    spans: list[Stall] = field(default_factory=list)

    @classmethod
    def read(cls, path: Path) -> Stalls:
        spans = []
        if path.exists():
            for line in path.read_text().splitlines():
                spans.append(Stall(*(float(word) for word in line.split())))
        return cls(spans)

    def longest(self, start: float, end: float) -> Stall:
        """The longest stall that began within [start, end] (a stall of 0 s when none)."""
        within = [s for s in self.spans if start <= s.at <= end]
        return max(within, key=lambda s: s.seconds, default=Stall(start, 0.0, 0.0, 0.0))


class WatchedLoops(asyncio.DefaultEventLoopPolicy):
    """An event loop policy whose loops are watched from their start (`asyncio.set_event_loop_policy`
    before the code under test calls `asyncio.run`)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._path: Path | None = path

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        loop = super().new_event_loop()
        path, self._path = self._path, None
        if path is not None:  # the first loop only: `asyncio.run`'s, not those of helper threads
            loop.call_soon(lambda: loop.create_task(watch_loop(path)))
        return loop


async def watch_loop(path: Path) -> None:
    """Watch the running loop until the process ends (the task and thread are never stopped)."""
    last = [time.monotonic()]

    async def beat() -> None:
        while True:
            last[0] = time.monotonic()
            await asyncio.sleep(BEAT)

    loop_thread = threading.get_ident()
    schedstat = Path(f"/proc/self/task/{threading.get_native_id()}/schedstat")
    _time_callbacks(path.with_name(path.name + ".callbacks"))
    _time_collections(path.with_name(path.name + ".gc"))
    asyncio.get_running_loop().create_task(beat())
    sys.setswitchinterval(0.0005)  # the watchdog gets the GIL soon after it asks: samples land in place
    watcher = threading.Thread(target=_watch, args=(path, last, loop_thread, schedstat), daemon=True)
    watcher.start()


def _watch(path: Path, last: list[float], loop_thread: int, schedstat: Path) -> None:
    with path.open("a") as log, path.with_name(path.name + ".stacks").open("a") as profile:
        while True:
            time.sleep(SAMPLE)
            beat = last[0]
            if time.monotonic() - beat - BEAT < STALL:
                continue
            stacks: Counter[str] = Counter()
            ran, waited = _scheduled(schedstat)
            while last[0] == beat:  # the loop is held: sample what holds it
                for thread, frame in sys._current_frames().items():
                    if thread == loop_thread:
                        stacks[_below_handle(frame)] += 1
                    elif thread != threading.get_ident() and not _idle(frame):
                        stacks[f"(another thread {thread})\n" + _below_handle(frame)] += 1
                time.sleep(SAMPLE)
            start, seconds = beat + BEAT, last[0] - beat - BEAT
            ran_after, waited_after = _scheduled(schedstat)
            log.write(f"{start:.6f} {seconds:.6f} {ran_after - ran:.6f} {waited_after - waited:.6f}\n")
            log.flush()
            _profile(profile, start, seconds, stacks)


def _scheduled(schedstat: Path) -> tuple[float, float]:
    """Seconds the loop's thread has run on a CPU, and waited for one (Linux's schedstat; 0 elsewhere)."""
    try:
        ran, waited = schedstat.read_text().split()[:2]
    except OSError:
        return 0.0, 0.0
    return int(ran) / 1e9, int(waited) / 1e9


def _idle(frame: FrameType) -> bool:
    """A thread waiting (a pool's worker for work, a lock, a selector): not what holds the loop."""
    return frame.f_code.co_name in ("wait", "_worker", "get", "select", "poll", "accept", "sleep", "_watch")


def _profile(out: TextIO, start: float, seconds: float, stacks: Counter[str]) -> None:
    """One stall's samples, the most seen first."""
    total = sum(stacks.values())
    out.write(f"##### stall at {start:.3f}: {seconds * 1000:.1f} ms, {total} samples\n")
    for stack, n in stacks.most_common(5):
        out.write(f"=== {n} samples\n{stack}\n")
    out.flush()


def _time_callbacks(path: Path) -> None:
    """Time every callback the loop runs; those longer than STALL are written to `path`, named by their
    task's coroutine (a task's step) or their function."""
    run = asyncio.events.Handle._run
    watched = os.getpid()  # a forked child (the digest's pool) inherits the hook: it writes nothing
    log = path.open("a")

    def timed(handle: asyncio.events.Handle) -> None:
        start = time.perf_counter()
        run(handle)
        took = time.perf_counter() - start
        if took > STALL and os.getpid() == watched:
            log.write(f"{took * 1000:.1f} ms {_callback_name(handle)}\n")
            log.flush()

    asyncio.events.Handle._run = timed  # type: ignore[method-assign, assignment]


def _time_collections(path: Path) -> None:
    """Time every garbage collection; those longer than STALL / 2 are written to `path`."""
    log = path.open("a")
    started = [0.0]
    watched = os.getpid()

    def timed(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
            return
        took = time.perf_counter() - started[0]
        if took > STALL / 2 and os.getpid() == watched:
            log.write(f"{time.monotonic():.3f} gen {info['generation']} {took * 1000:.1f} ms\n")
            log.flush()

    gc.callbacks.append(timed)


def _callback_name(handle: asyncio.events.Handle) -> str:
    callback = handle._callback  # type: ignore[attr-defined]
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        coro = owner.get_coro()
        return f"task {getattr(coro, '__qualname__', coro)!s}"
    return f"callback {getattr(callback, '__qualname__', callback)!s}"


def _below_handle(frame: FrameType) -> str:
    """The stack under the loop's callback (`Handle._run`): what the held callback is doing."""
    summary = traceback.extract_stack(frame)
    runs = [i for i, f in enumerate(summary) if f.name == "_run" and f.filename.endswith("events.py")]
    start = runs[-1] + 1 if runs else 0
    return "".join(traceback.format_list(summary[start:][:FRAMES]))
