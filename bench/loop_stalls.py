"""The event loop's stalls in a bot process, and what held the loop during them (a benchmark's probe).

`LoopWatch(path)` (made on the loop to watch; `WatchedLoops(path)`, an event loop policy, makes one on
the first loop `asyncio.run` creates) starts a heartbeat task that wakes every `BEAT` s and a watchdog
thread, until `stop()`. Whenever the heartbeat is late by more than `STALL`, the watchdog samples
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
STACKS = 5  # a stall's stacks written, of the loop's thread and of the others each
OTHER_THREAD = "(another thread"


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
    """An event loop policy whose first loop is watched from its start (`asyncio.set_event_loop_policy`
    before the code under test calls `asyncio.run`); `watch` is that loop's, once it runs."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._path: Path | None = path
        self.watch: LoopWatch | None = None

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        loop = super().new_event_loop()
        path, self._path = self._path, None
        if path is not None:  # the first loop only: `asyncio.run`'s, not those of helper threads
            loop.call_soon(self._start, path)
        return loop

    def _start(self, path: Path) -> None:
        self.watch = LoopWatch(path)


class LoopWatch:
    """The running loop watched (made on it) until `stop()`: a heartbeat task, a watchdog thread, every
    callback and garbage collection timed."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._last = time.monotonic()
        self._stopped = threading.Event()
        self._loop_thread = threading.get_ident()
        self._schedstat = Path(f"/proc/self/task/{threading.get_native_id()}/schedstat")
        self._pid = os.getpid()  # a forked child (the digest's pool) inherits the hooks: it writes nothing
        self._callbacks = path.with_name(path.name + ".callbacks").open("a")
        self._collections = path.with_name(path.name + ".gc").open("a")
        self._collecting = 0.0
        self.loop_samples = 0  # the loop thread's stacks sampled while it was held, so far
        self.beats = 0  # heartbeats so far
        self._run = run = asyncio.events.Handle._run

        def timed(handle: asyncio.events.Handle) -> None:  # a function: the class makes it the handle's
            start = time.perf_counter()
            run(handle)
            self._slow(handle, time.perf_counter() - start)

        asyncio.events.Handle._run = timed  # type: ignore[method-assign, assignment]
        gc.callbacks.append(self._collected)
        self._beat = asyncio.get_running_loop().create_task(self._beating())
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    def stalls(self) -> Stalls:
        """The stalls written so far."""
        return Stalls.read(self._path)

    def stop(self) -> None:
        """Undo every hook (on the loop's thread); the watchdog ends after its current sample."""
        self._stopped.set()
        self._beat.cancel()
        asyncio.events.Handle._run = self._run  # type: ignore[method-assign]
        gc.callbacks.remove(self._collected)
        self._watcher.join()
        self._callbacks.close()
        self._collections.close()

    async def _beating(self) -> None:
        while True:
            self._last = time.monotonic()
            self.beats += 1
            await asyncio.sleep(BEAT)

    def _watch(self) -> None:
        path = self._path
        with path.open("a") as log, path.with_name(path.name + ".stacks").open("a") as profile:
            while not self._stopped.is_set():
                time.sleep(SAMPLE)
                beat = self._last
                if time.monotonic() - beat - BEAT < STALL:
                    continue
                stacks: Counter[str] = Counter()
                ran, waited = _scheduled(self._schedstat)
                while self._last == beat and not self._stopped.is_set():  # held: sample what holds it
                    self._sample(stacks)
                    time.sleep(SAMPLE)
                start, seconds = beat + BEAT, self._last - beat - BEAT
                ran_after, waited_after = _scheduled(self._schedstat)
                log.write(f"{start:.6f} {seconds:.6f} {ran_after - ran:.6f} {waited_after - waited:.6f}\n")
                log.flush()
                _profile(profile, start, seconds, stacks)

    def _sample(self, stacks: Counter[str]) -> None:
        for thread, frame in sys._current_frames().items():
            if thread == self._loop_thread:
                stacks[_below_handle(frame)] += 1
                self.loop_samples += 1
            elif thread != threading.get_ident() and not _idle(frame):
                stacks[f"{OTHER_THREAD} {thread})\n" + _below_handle(frame)] += 1

    def _slow(self, handle: asyncio.events.Handle, took: float) -> None:
        # The callback that called `stop()` ends after the file is closed: it is not written.
        if took > STALL and os.getpid() == self._pid and not self._callbacks.closed:
            self._callbacks.write(f"{took * 1000:.1f} ms {_callback_name(handle)}\n")
            self._callbacks.flush()

    def _collected(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._collecting = time.perf_counter()
            return
        took = time.perf_counter() - self._collecting
        if took > STALL / 2 and os.getpid() == self._pid:
            self._collections.write(f"{time.monotonic():.3f} gen {info['generation']} {took * 1000:.1f} ms\n")
            self._collections.flush()


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
    """One stall's samples: the loop thread's stacks, the most seen first, then the other threads' busy
    meanwhile (each thread's a stack of its own: however many there are, the loop's come first)."""
    total = sum(stacks.values())
    out.write(f"##### stall at {start:.3f}: {seconds * 1000:.1f} ms, {total} samples\n")
    ranked = stacks.most_common()
    loop = [(stack, n) for stack, n in ranked if not stack.startswith(OTHER_THREAD)]
    others = [(stack, n) for stack, n in ranked if stack.startswith(OTHER_THREAD)]
    for stack, n in loop[:STACKS] + others[:STACKS]:
        out.write(f"=== {n} samples\n{stack}\n")
    out.flush()


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
