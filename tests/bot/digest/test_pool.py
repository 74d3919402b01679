"""The digest judged in worker processes: the same targets as judging LiveState reads, the same bounds."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from bot.alerts.prom_enrich import chart_image
from bot.digest.fleet import read_fleet
from bot.digest.judge import assemble_digest, judge_reads
from bot.digest.pool import FORKSERVER_PRELOAD, WORKER_NICENESS, digest_pool, judge_fleet, judge_fleet_in_pool
from bot.domain.digest import Health
from bot.domain.enrichment import ChartKind, KeySeries, TimeSeries
from bot.live import LiveState
from tests.fakes.fleet import SETTINGS, SOURCES, fleet, page


async def test_judged_in_workers_as_judged_from_live_reads() -> None:
    pooled = await judge_fleet_in_pool(SETTINGS.clusters, SOURCES, workers=2, timeout=0.5)
    reads = await read_fleet([c.name for c in SETTINGS.clusters], LiveState(SOURCES).read, timeout=0.5)
    expected = assemble_digest(*judge_reads(SETTINGS.clusters, reads), period="p", at=0.0).targets
    judged = {t.target: t for j in pooled.values() for t in j.targets}
    assert len(judged) == len(expected) == 5
    for want in expected:
        got = judged[want.target]
        assert got.health is want.health
        assert (got.findings, got.healthy_peers, got.fault_totals) == (
            want.findings,
            want.healthy_peers,
            want.fault_totals,
        )
        assert got.unavailable == want.unavailable
    assert [judged[t].health for t in ("p/ta", "p/tb", "p/tc", "p/td", "p/te")] == [
        Health.HEALTHY,
        Health.DEGRADED,
        Health.UNREACHABLE,
        Health.UNREACHABLE,
        Health.UNREACHABLE,
    ]
    assert "line 11" in str(judged["p/td"].unavailable)


async def test_a_hung_cluster_costs_its_timeout_and_is_reported_timed_out() -> None:
    with ThreadPoolExecutor(2) as pool:
        judged = await judge_fleet(SETTINGS.clusters, SOURCES, pool, timeout=0.3)
    assert [name for name, j in judged.items() if j.timed_out] == ["c"]
    assert judged["c"].seconds >= 0.3
    assert judged["c"].targets[0].unavailable == "cluster c: no answer within 0.3 s (timed out)"
    assert judged["e"].targets[0].unavailable == "cluster e is not configured"


class CountingPages:
    """Pages that count how many are being fetched at once."""

    def __init__(self) -> None:
        self.active = self.peak = 0

    async def syncer_metrics(self, *, timeout: float) -> str:
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.01)  # the fake's fetch takes a while, so fetches overlap
        self.active -= 1
        return page("p/t", 2)


async def test_fetches_are_bounded_by_concurrency() -> None:
    settings = fleet(*((f"c{i}", f"p/t{i}") for i in range(8)))
    counting = CountingPages()
    with ThreadPoolExecutor(2) as pool:
        judged = await judge_fleet(
            settings.clusters,
            dict.fromkeys((c.name for c in settings.clusters), counting),
            pool,
            concurrency=3,
        )
    assert counting.peak == 3
    assert len(judged) == 8


def _niceness() -> int:
    return os.nice(0)


async def test_an_alert_chart_is_drawn_in_a_worker_that_yields_the_cpu_to_the_bot() -> None:
    series = KeySeries(
        ChartKind.HEALTHY_PEERS,
        "team-a/db: healthy peers",
        "peers",
        (TimeSeries("example.com/v1", tuple((3600.0 + 60 * i, 2.0) for i in range(60))),),
        7200.0,
    )
    pool = digest_pool(1)
    loop = asyncio.get_running_loop()
    try:
        image = await loop.run_in_executor(pool, chart_image, series)
        niceness = await loop.run_in_executor(pool, _niceness)
    finally:
        await asyncio.to_thread(pool.shutdown)
    assert image == chart_image(series)  # the same bytes as drawn here: only the process differs
    assert niceness == min(19, os.nice(0) + WORKER_NICENESS)


def test_the_bots_own_process_never_imports_matplotlib() -> None:
    """Its charts are drawn in the workers, whose forkserver imports matplotlib: in `serve`'s process the
    import was a third of its start."""
    probe = "import sys, bot.cli.serve, bot.compose; print('matplotlib' in sys.modules)"
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert found.stdout.strip() == "False"


def test_the_workers_preload_never_imports_the_cluster_client() -> None:
    """The forkserver imports what a worker runs (judging a page, drawing a chart) before every bot start,
    and on a busy CPU beside it: kubernetes' client and aiohttp were 0.5 s of its 1.75 s there."""
    preload = ", ".join(FORKSERVER_PRELOAD)
    roots = "{m.split('.')[0] for m in sys.modules}"
    probe = f"import sys, {preload}; print(sorted({roots} & {{'kubernetes', 'aiohttp'}}))"
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert found.stdout.strip() == "[]"


# Run in a fresh interpreter: the forkserver is one per process, and an earlier test's is already running.
WARM_UP_WHILE_TICKING = """
import asyncio, time
from bot.digest.pool import digest_pool, warm_up

async def main() -> None:
    pool = digest_pool(2)
    gaps = [0.0]
    ticked = asyncio.Event()

    async def ticking() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)  # not a wait: a tick, its gap measured
            now = time.monotonic()
            gaps.append(now - last)
            last = now
            ticked.set()

    ticker = asyncio.create_task(ticking())
    await ticked.wait()
    started = time.monotonic()
    await warm_up(pool)
    took = time.monotonic() - started
    ticker.cancel()
    pool.shutdown()
    print(max(gaps), took)

asyncio.run(main())
"""


def test_warming_up_the_workers_leaves_the_event_loop_free() -> None:
    """Starting the forkserver (it imports the chart code and matplotlib first) takes seconds; `serve`
    answers `/healthz` and `/readyz` meanwhile, so the loop keeps turning (it stood still 1.3 s of 1.6)."""
    found = subprocess.run(
        [sys.executable, "-c", WARM_UP_WHILE_TICKING], capture_output=True, text=True, timeout=120, check=True
    )
    gap, took = (float(word) for word in found.stdout.split())
    assert gap < took / 2, f"the event loop stood still {gap:.2f} s of the {took:.2f} s warm-up"
