"""Single-flight + TTL reads: one read per key serves concurrent and later callers, failures are not kept."""

from __future__ import annotations

import asyncio

import pytest

from bot.shared_reads import SharedReads
from tests.waiting import eventually


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Source:
    """Counts reads; each read waits at the gate, then answers its number or raises `error`."""

    def __init__(self) -> None:
        self.reads = 0
        self.gate = asyncio.Event()
        self.gate.set()
        self.error: Exception | None = None

    async def read(self) -> int:
        self.reads += 1
        await self.gate.wait()
        if self.error is not None:
            raise self.error
        return self.reads


async def test_concurrent_callers_share_one_read_and_later_ones_get_it_within_ttl() -> None:
    clock, source = Clock(), Source()
    reads: SharedReads[str, int] = SharedReads(5.0, clock)
    source.gate.clear()
    waiting = [asyncio.create_task(reads.get("a", source.read, name="read-a")) for _ in range(5)]
    await eventually(lambda: source.reads == 1, "the shared read to start, every caller waiting on it")
    source.gate.set()
    assert await asyncio.gather(*waiting) == [1] * 5
    clock.now = 4.9
    assert await reads.get("a", source.read, name="read-a") == 1
    clock.now = 5.0
    assert await reads.get("a", source.read, name="read-a") == 2
    assert await reads.get("b", source.read, name="read-b") == 3  # another key, another read


async def test_peek_is_the_value_get_would_return_at_once_and_none_otherwise() -> None:
    clock, source = Clock(), Source()
    reads: SharedReads[str, int] = SharedReads(5.0, clock)
    assert reads.peek("a") is None  # never read
    source.gate.clear()
    waiting = asyncio.create_task(reads.get("a", source.read, name="read-a"))
    await eventually(lambda: source.reads == 1, "the read to start")
    assert reads.peek("a") is None  # in flight: a caller would wait
    source.gate.set()
    assert await waiting == 1
    assert reads.peek("a") == 1
    clock.now = 5.0
    assert reads.peek("a") is None  # expired
    source.error = RuntimeError("refused")
    with pytest.raises(RuntimeError):
        await reads.get("a", source.read, name="read-a")
    assert reads.peek("a") is None  # a failed read is not kept
    assert source.reads == 2


async def test_a_caller_that_stops_waiting_leaves_the_read_to_fill_the_cache() -> None:
    source = Source()
    reads: SharedReads[str, int] = SharedReads(5.0, Clock())
    source.gate.clear()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await reads.get("a", source.read, name="read-a")
    source.gate.set()
    await eventually(lambda: reads.peek("a") is not None, "the abandoned read to fill the cache")
    assert await reads.get("a", source.read, name="read-a") == 1
    assert source.reads == 1


async def test_a_failed_read_is_raised_to_every_caller_and_not_kept() -> None:
    source = Source()
    reads: SharedReads[str, int] = SharedReads(5.0, Clock())
    source.error = OSError("down")
    with pytest.raises(OSError, match="down"):
        await reads.get("a", source.read, name="read-a")
    source.error = None
    assert await reads.get("a", source.read, name="read-a") == 2


async def test_cancel_pending_stops_reads_nobody_waits_for() -> None:
    source = Source()
    reads: SharedReads[str, int] = SharedReads(5.0, Clock())
    source.gate.clear()
    caller = asyncio.create_task(reads.get("a", source.read, name="read-a"))
    await eventually(lambda: source.reads == 1, "the read to start")
    assert source.reads == 1  # started, waiting at the gate
    await reads.cancel_pending()
    with pytest.raises(asyncio.CancelledError):
        await caller
    source.gate.set()
    assert await reads.get("a", source.read, name="read-a") == 2  # nothing of the cancelled read was kept
