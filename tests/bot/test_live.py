"""LiveState: single-flight, short cache, window deltas, failures returned as reasons."""

from __future__ import annotations

import asyncio

import pytest

from bot.domain.snapshot import REQUESTS
from bot.errors import ClusterError
from bot.live import LiveState
from tests.waiting import eventually

PAGE = """# TYPE vcluster_proxy_request_total counter
vcluster_proxy_request_total{{target="p/t",group_version="example.com/v1",verb="get",code="503",\
reason="no_peer"}} {n}
vcluster_proxy_peers{{target="p/t",group_version="example.com/v1",state="healthy"}} 0
"""


class FakeCluster:
    """Counts reads; each read sees the counter `step` higher; can be told to fail or hang."""

    def __init__(self, step: int = 10) -> None:
        self.reads = 0
        self.step = step
        self.fail: ClusterError | None = None
        self.gate: asyncio.Event | None = None

    async def syncer_metrics(self, *, timeout: float) -> str:
        self.reads += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        return PAGE.format(n=self.reads * self.step)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_concurrent_callers_share_one_read() -> None:
    cluster = FakeCluster()
    cluster.gate = asyncio.Event()
    live = LiveState({"c1": cluster}, monotonic=Clock())
    callers = [asyncio.create_task(live.read("c1")) for _ in range(500)]
    await eventually(lambda: cluster.reads == 1, "the shared read to start, every caller waiting on it")
    cluster.gate.set()
    reads = await asyncio.gather(*callers)
    assert cluster.reads == 1
    assert all(r.snapshot is reads[0].snapshot for r in reads)


async def test_cache_expires_after_ttl_and_window_delta_appears() -> None:
    cluster, clock = FakeCluster(), Clock()
    live = LiveState({"c1": cluster}, ttl=5, monotonic=clock)
    first = await live.read("c1")
    clock.now += 4
    assert await live.read("c1") is first
    clock.now += 2
    second = await live.read("c1")
    assert cluster.reads == 2
    assert first.window is None
    assert second.window is not None
    assert second.window.seconds == 6
    assert second.window.increase.breakdown(REQUESTS, "reason") == {"no_peer": 10.0}


async def test_ready_is_the_fresh_read_and_none_while_the_source_fails() -> None:
    cluster, clock = FakeCluster(), Clock()
    live = LiveState({"c1": cluster}, ttl=5, monotonic=clock)
    assert live.ready("c1") is None
    first = await live.read("c1")
    assert live.ready("c1") is first
    clock.now += 5
    assert live.ready("c1") is None
    cluster.fail = ClusterError("c1", "timeout", "GET /metrics/syncer timed out after 5s")
    assert not (await live.read("c1")).ok
    # A failing source's read is not in hand: `read` says how long ago it failed and reads again.
    assert live.ready("c1") is None
    assert cluster.reads == 2


async def test_window_forgets_reads_older_than_the_window() -> None:
    cluster, clock = FakeCluster(), Clock()
    live = LiveState({"c1": cluster}, ttl=1, window=60, monotonic=clock)
    for _ in range(3):
        await live.read("c1")
        clock.now += 50
    latest = await live.read("c1")
    assert latest.window is not None
    assert latest.window.seconds == 50


async def test_failures_are_reasons_not_exceptions() -> None:
    cluster = FakeCluster()
    cluster.fail = ClusterError("c1", "not_found", "GET /metrics/syncer answered 404: older than v0.37")
    live = LiveState({"c1": cluster}, monotonic=Clock())
    read = await live.read("c1")
    assert read.snapshot is None
    assert read.unavailable is not None
    assert "v0.37" in read.unavailable
    unknown = await live.read("nope")
    assert unknown.unavailable == "cluster nope is not configured"


async def test_malformed_page_is_a_reason() -> None:
    class Broken(FakeCluster):
        async def syncer_metrics(self, *, timeout: float) -> str:
            return 'vcluster_proxy_peers{target="p/t" 1\n'

    read = await LiveState({"c1": Broken()}, monotonic=Clock()).read("c1")
    assert read.unavailable is not None
    assert "line 1" in read.unavailable


async def test_keep_warm_reads_every_cluster_until_cancelled() -> None:
    clusters = {"c1": FakeCluster(), "c2": FakeCluster()}
    live = LiveState(clusters, ttl=0)
    task = asyncio.create_task(live.keep_warm(0.01))
    await eventually(lambda: clusters["c2"].reads >= 3, "three rounds of keeping c2 warm")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert clusters["c1"].reads >= 3
    read = await live.read("c1")
    assert read.window is not None


async def test_real_reads_are_timed_cache_hits_are_not() -> None:
    clock, seen = Clock(), []
    live = LiveState({"c1": FakeCluster()}, ttl=5, monotonic=clock, observe=seen.append)
    await live.read("c1")
    await live.read("c1")  # cached
    assert len(seen) == 1


async def test_a_caller_past_its_budget_leaves_the_read_to_fill_the_cache_until_shutdown() -> None:
    cluster = FakeCluster()
    cluster.gate = asyncio.Event()
    live = LiveState({"c1": cluster}, monotonic=Clock())
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await live.read("c1")
    cluster.gate.set()
    await eventually(lambda: live.ready("c1"), "the late read to fill the cache")
    assert (await live.read("c1")).ok
    assert cluster.reads == 1  # the late read answered the next caller
    cluster.gate.clear()  # the next read never answers
    stale = LiveState({"c1": cluster}, monotonic=Clock())
    waiting = asyncio.create_task(stale.read("c1"))
    await eventually(lambda: cluster.reads == 2, "the read that never answers to start")
    await stale.cancel_pending()
    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_a_source_whose_last_read_failed_holds_the_next_caller_only_briefly() -> None:
    cluster, clock, wall = FakeCluster(), Clock(), Clock()
    live = LiveState({"c1": cluster}, ttl=5, monotonic=clock, wall=wall, retry_wait=0.05)
    cluster.fail = ClusterError("c1", "timeout", "GET /metrics/syncer timed out after 5s")
    assert not (await live.read("c1")).ok
    cluster.gate = asyncio.Event()  # the next read hangs
    clock.now += 6
    wall.now += 12
    started = asyncio.get_running_loop().time()
    again = await live.read("c1")
    assert asyncio.get_running_loop().time() - started < 1.0
    assert again.unavailable == (
        "cluster c1: GET /metrics/syncer timed out after 5s (the last read, 12s ago; reading again)"
    )
    # The read went on: once it answers, the next caller gets what it brought.
    cluster.fail = None
    cluster.gate.set()
    await eventually(lambda: live.ready("c1"), "the read that went on to fill the cache")
    assert (await live.read("c1")).ok
    assert cluster.reads == 2


async def test_a_source_read_again_after_it_recovered_is_waited_for_in_full() -> None:
    cluster, clock = FakeCluster(), Clock()
    # The wait is long enough for the fake's read on a loaded machine, and the budget below longer still,
    # so a shortcut wrongly taken would answer within it instead of running out.
    live = LiveState({"c1": cluster}, ttl=5, monotonic=clock, retry_wait=1.0)
    cluster.fail = ClusterError("c1", "http", "GET /metrics/syncer answered 500")
    await live.read("c1")
    cluster.fail = None
    clock.now += 6
    assert (await live.read("c1")).ok  # a fresh read answering within the wait is taken
    cluster.gate = asyncio.Event()
    clock.now += 6
    with pytest.raises(TimeoutError):  # healthy last time: no shortcut, the caller's budget decides
        async with asyncio.timeout(2.5):
            await live.read("c1")
    cluster.gate.set()


async def test_reads_close_together_keep_one_snapshot_per_tenth_of_the_window() -> None:
    cluster, clock = FakeCluster(), Clock()
    live = LiveState({"c1": cluster}, ttl=1, window=300, monotonic=clock)
    for _ in range(150):  # a read every 2 s for five minutes
        latest = await live.read("c1")
        clock.now += 2
    assert len(live._history["c1"]) <= 11
    # The window still reaches back (nearly) the whole 300 s, over every request counted in it.
    assert latest.window is not None
    assert 270 <= latest.window.seconds <= 300
    first_kept = 300 - latest.window.seconds
    assert latest.window.increase.breakdown(REQUESTS, "reason") == {"no_peer": 10.0 * (300 - first_kept) / 2}
