"""Prometheus enrichment: the PromQL it sends, its windows and evidence, caching, and a real Prometheus."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from bot.alerts.prom_enrich import ChartImage, PromEnricher, ask_for, chart_image
from bot.clients.prometheus import PrometheusClient, Sample, Series
from bot.domain.enrichment import ChartKind, WindowAsk
from bot.domain.snapshot import DIAL_FAILURES, PEERS, REQUESTS
from bot.errors import UpstreamError
from bot.prom_queries import chart_query, counters_query
from config.clusters import ClusterSettings
from sim.defaults import CLIENT, PRIMARY_GV, TARGET_LABEL
from sim.server import SimServer
from tests.fakes.prom_windows import ASK, a_window
from tests.fakes.sim_scrape import syncer_jobs
from tests.harness.prometheus import Prometheus
from tests.waiting import eventually

CLUSTER = ClusterSettings.model_validate(
    {
        "name": "alpha",
        "kubeconfig": "/etc/proxybot/kubeconfig",
        "match": {"cluster": "alpha"},
        "targets": [
            {
                "name": "team-a/db",
                "group_versions": ["example.com/v1"],
                "probe": {"group_version": "example.com/v1", "resource": "widgets"},
            }
        ],
    }
)


def test_an_alert_asks_for_its_target_replica_and_rule_window() -> None:
    labels = {"target": "team-a/db", "pod": "alpha-0", "cluster": "alpha"}
    assert ask_for("ResourceProxyNoHealthyPeers", labels, CLUSTER) == ASK
    churn = ask_for("ResourceProxyPeerChurn", {"target": "team-a/db"}, CLUSTER)
    assert churn is not None
    assert (churn.seconds, churn.pod) == (1800, None)
    assert ask_for("ResourceProxyProbeFailing", {"namespace": "x"}, CLUSTER) is None
    assert ask_for("ResourceProxyNoHealthyPeers", labels, None) is None


def test_hostile_label_values_stay_inside_string_literals() -> None:
    hostile = WindowAsk("X", "alpha", (("cluster", "alpha"),), 'a"} or vector(1) #\n', None, 300)
    expr = counters_query(hostile)
    assert 'target="a\\"} or vector(1) #\\n"' in expr
    assert '"} or vector(1)' not in expr.replace('\\"', "")


def test_the_chart_of_a_peer_alert_takes_the_worst_replica_per_group_version() -> None:
    assert chart_query(ASK, ChartKind.HEALTHY_PEERS) == (
        'min by (group_version) (vcluster_proxy_peers{cluster="alpha",pod="alpha-0",'
        'target="team-a/db",state="healthy"})'
    )
    assert 'reason!="upstream"' in chart_query(ASK, ChartKind.FAILING_REASONS)


def test_a_window_reads_as_breakdowns_and_a_delta_for_the_diagnosis() -> None:
    window = a_window().window
    assert window is not None
    assert window.reasons() == {"upstream": 900.0, "no_peer": 40.0, "timeout": 2.4}
    assert window.reasons(group_version="example.com/v1") == {"upstream": 900.0, "no_peer": 40.0}
    assert window.reasons(DIAL_FAILURES) == {"timeout": 12.0}
    assert (window.request_p99, window.dial_p99) == (0.91, None)
    assert window.observations("vcluster_proxy_request_duration_seconds") == 942.4
    assert window.delta.seconds == 900.0
    assert window.delta.increase.value(REQUESTS, target="team-a/db", reason="no_peer") == 40.0


class CountingPrometheus:
    """Counts queries; answers nothing; can be held at a gate or fail."""

    def __init__(self) -> None:
        self.calls = 0
        self.gate: asyncio.Event | None = None
        self.fail = False

    async def query(
        self, expr: str, *, at: float | None = None, timeout: float | None = None
    ) -> list[Sample]:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise UpstreamError("Prometheus down")
        return []

    async def query_range(
        self, expr: str, *, start: float, end: float, step: float, timeout: float | None = None
    ) -> list[Series]:
        return []

    async def aclose(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def window_reads_running() -> bool:
    """Whether a shared window read (a task of its own, named after its target) is still running."""
    return any(task.get_name().startswith("prometheus-window-") for task in asyncio.all_tasks())


async def test_concurrent_asks_share_one_read_and_it_is_cached_for_ttl() -> None:
    fake, clock = CountingPrometheus(), Clock()
    fake.gate = asyncio.Event()
    enricher = PromEnricher(fake, ttl=5, monotonic=clock)
    waiting = [asyncio.create_task(enricher.window(ASK)) for _ in range(50)]
    await eventually(lambda: fake.calls == 3, "the shared read's three queries, every caller waiting on it")
    fake.gate.set()
    await asyncio.gather(*waiting)
    assert fake.calls == 3  # counters, buckets, p99s: once for fifty callers
    await enricher.window(ASK)
    assert fake.calls == 3
    clock.now += 5
    await enricher.window(ASK)
    assert fake.calls == 6


async def test_a_caller_that_stops_waiting_leaves_the_read_to_fill_the_cache() -> None:
    fake = CountingPrometheus()
    fake.gate = asyncio.Event()
    enricher = PromEnricher(fake)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await enricher.window(ASK)
    fake.gate.set()
    await eventually(lambda: not window_reads_running(), "the abandoned read to fill the cache")
    await enricher.window(ASK)
    assert fake.calls == 3


async def test_failures_are_raised_and_not_cached() -> None:
    fake = CountingPrometheus()
    fake.fail = True
    enricher = PromEnricher(fake)
    with pytest.raises(UpstreamError):
        await enricher.window(ASK)
    fake.fail = False
    await enricher.window(ASK)
    assert fake.calls == 6


async def test_while_prometheus_fails_a_caller_waits_only_briefly_then_hears_the_last_failure() -> None:
    fake, clock = CountingPrometheus(), Clock()
    enricher = PromEnricher(fake, clock=clock, retry_wait=0.05)
    fake.fail = True
    with pytest.raises(UpstreamError, match=r"^Prometheus down$"):
        await enricher.window(ASK)
    fake.gate = asyncio.Event()  # now it hangs
    clock.now += 7
    started = asyncio.get_running_loop().time()
    with pytest.raises(UpstreamError) as told:
        await enricher.window(ASK)
    assert asyncio.get_running_loop().time() - started < 1.0
    assert str(told.value) == "Prometheus down (the last query, 7s ago; asking again)"
    fake.fail = False
    fake.gate.set()  # the read went on; answering, it ends the failing state
    await eventually(lambda: not window_reads_running(), "the read that went on to answer")
    assert (await enricher.window(ASK)).ask == ASK
    fake.gate = asyncio.Event()
    other = dataclasses.replace(ASK, target="team-a/other")
    with pytest.raises(TimeoutError):  # answering again: a new read is waited for as long as the caller likes
        async with asyncio.timeout(0.2):
            await enricher.window(other)
    fake.gate.set()


async def test_a_chart_that_fails_is_none_not_an_error() -> None:
    class Broken(CountingPrometheus):
        async def query_range(
            self, expr: str, *, start: float, end: float, step: float, timeout: float | None = None
        ) -> list[Series]:
            raise UpstreamError("refused")

    assert await PromEnricher(Broken()).try_chart(ASK, budget=1) is None


class OneSeries(CountingPrometheus):
    """Answers every range query with one healthy-peers line."""

    async def query_range(
        self, expr: str, *, start: float, end: float, step: float, timeout: float | None = None
    ) -> list[Series]:
        points = tuple((start + i * step, 2.0) for i in range(int((end - start) // step)))
        return [Series({"group_version": "example.com/v1"}, points)]


class Recording(ThreadPoolExecutor):
    """An executor that says what it was given and which thread ran it."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="recording")
        self.ran: list[tuple[object, str]] = []

    def submit(self, fn: Callable[..., object], /, *args: object, **kwargs: object) -> Future[object]:
        def run() -> object:
            self.ran.append((fn, threading.current_thread().name))
            return fn(*args, **kwargs)

        return super().submit(run)


async def test_a_chart_is_drawn_in_the_executor_given_not_in_a_thread_of_the_bot() -> None:
    workers = Recording()
    try:
        image = await PromEnricher(OneSeries(), executor=workers).chart(ASK)
    finally:
        workers.shutdown()
    assert [(fn, name.startswith("recording")) for fn, name in workers.ran] == [(chart_image, True)]
    assert image.png.startswith(b"\x89PNG")
    assert image.filename.endswith("-healthy-peers.png")


async def test_a_chart_still_comes_when_the_worker_processes_are_broken() -> None:
    class Broken(ThreadPoolExecutor):
        def submit(self, fn: Callable[..., object], /, *args: object, **kwargs: object) -> Future[object]:
            raise BrokenProcessPool("a worker died")

    image = await PromEnricher(OneSeries(), executor=Broken()).try_chart(ASK, budget=5)
    assert isinstance(image, ChartImage)
    assert image.png.startswith(b"\x89PNG")


# -- against a real Prometheus scraping the simulator ---------------------------------------------------


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    workdir: Path = tmp_path_factory.mktemp("prometheus")
    with (
        SimServer(scenario="healthy", speed=1) as sim,
        Prometheus(workdir, syncer_jobs(sim), interval="1s") as prom,
    ):
        prom.wait_for_scrapes()
        prom.wait_until(lambda p: p.query("count_over_time(up[1m]) >= 4") or None, 30, "four scrapes")
        yield prom


@pytest.mark.slow
async def test_a_real_window_and_chart_from_prometheus(prometheus: Prometheus) -> None:
    ask = WindowAsk(
        "ResourceProxyNoHealthyPeers", CLIENT, (("cluster", CLIENT),), TARGET_LABEL, f"{CLIENT}-0", 60
    )
    async with PrometheusClient(prometheus.url) as client:
        enricher = PromEnricher(client)
        window = await enricher.window(ask)
        series = await enricher.key_series(ask)
        image = await enricher.chart(ask)
    # A healthy proxy served traffic in the last minute; Prometheus saw it, under the target's name.
    assert sum(window.reasons().values()) > 0
    assert window.delta.increase.targets() == [TARGET_LABEL]
    expected = prometheus.query(f'min by (group_version) ({PEERS}{{pod="{CLIENT}-0",state="healthy"}})')
    assert {line.name for line in series.lines} == {r["metric"]["group_version"] for r in expected}
    assert PRIMARY_GV in {line.name for line in series.lines}
    last = {line.name: line.points[-1][1] for line in series.lines}
    assert last == {r["metric"]["group_version"]: float(r["value"][1]) for r in expected}
    assert image.png.startswith(b"\x89PNG")
    assert time.time() - series.end < 60
