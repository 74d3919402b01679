"""The resolution summary's Prometheus side against a real Prometheus (Debian's 2.42) scraping the simulator:
the failed requests its queries count over a window equal the simulator's own count (±1 scrape at each edge:
`increase()` extrapolates to the window's edges), and the peaks are the simulator's."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.alerts.resolution import prometheus_impact
from bot.clients.prometheus import PrometheusClient
from bot.domain.impact import ImpactSource, failed
from sim.defaults import CLIENT, TARGET_LABEL
from sim.server import SimServer
from tests.fakes.sim_scrape import syncer_jobs
from tests.harness.prometheus import Prometheus

pytestmark = pytest.mark.slow

SCRAPE = 1.0  # seconds between scrapes


def sim_failed(sim: SimServer) -> float:
    """The simulator's own count of the target's failed requests, every replica."""
    with sim.lock:
        return sum(
            n
            for (c, _), proxy in sim.world.proxies.items()
            if c == CLIENT
            for (target, _, _, code, _), n in proxy.metrics.requests.values.items()
            if target == TARGET_LABEL and failed(code)
        )


def scraped(prom: Prometheus) -> float:
    """The newest failed-request total Prometheus holds for the target."""
    found = prom.query(f'sum(vcluster_proxy_request_total{{target="{TARGET_LABEL}",code=~"[4-9].."}})')
    return float(found[0]["value"][1]) if found else -1.0


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[SimServer, Prometheus]]:
    with (
        SimServer(scenario="target-down", speed=20) as sim,
        Prometheus(tmp_path, syncer_jobs(sim), interval=f"{SCRAPE:g}s") as prom,
    ):
        prom.wait_for_scrapes()
        yield sim, prom


def held(sim: SimServer, prom: Prometheus) -> float:
    """Hold the simulator's traffic still until Prometheus has scraped the same total; that total."""
    with sim.lock:
        flow, sim.world.traffic = sim.world.traffic, None
    total = sim_failed(sim)
    prom.wait_until(lambda p: True if scraped(p) == total else None, 30, "the held total scraped")
    with sim.lock:
        sim.world.traffic = flow
    return total


async def test_prometheus_counts_the_windows_failed_requests_as_the_simulator_does(
    stack: tuple[SimServer, Prometheus],
) -> None:
    sim, prom = stack
    start = time.time()
    before = held(sim, prom)  # and flowing again
    prom.wait_until(lambda p: True if scraped(p) >= before + 800 else None, 60, "failures in the window")
    with sim.lock:
        sim.world.traffic = None  # held to the end of the window
    after = sim_failed(sim)
    prom.wait_until(lambda p: True if scraped(p) == after else None, 30, "the last total scraped")
    end = time.time()
    async with PrometheusClient(prom.url) as client:
        impact = await prometheus_impact(
            client, {"cluster": CLIENT}, [TARGET_LABEL], end, end - start, timeout=5.0
        )
    assert impact.source is ImpactSource.PROMETHEUS
    # A scrape's worth of the window's average at each edge: increase() scales the delta to the window.
    per_scrape = (after - before) * SCRAPE / (end - start)
    assert abs(impact.total_failed - (after - before)) <= 2 * per_scrape + 1, (impact.failed, after - before)
    assert all(code.isdigit() and int(code) >= 400 for code, _ in impact.failed)
    # The target is down: its peers were quarantined in the window (each replica's, each group/version's).
    assert impact.peak_quarantined is not None
    assert impact.peak_quarantined >= 1
