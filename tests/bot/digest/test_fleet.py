"""The digest's reads (one bound, per-cluster timeout; the probe CronJobs) and `proxybot digest` against the
simulator."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli import digest as digest_command
from bot.cli.console import Console
from bot.cli.main import build_parser
from bot.digest.fleet import Bound, probe_runs, read_fleet
from bot.domain.digest import ProbeRun
from bot.domain.snapshot import ProxySnapshot
from bot.live import ClusterRead
from config.clusters import ClusterSettings, ControlPlaneSettings
from sim.server import SimServer
from tests.fakes.fleet import fleet, snapshot


class FakeReads:
    """`LiveState.read` for a fleet: a snapshot per cluster, or a cluster that never answers."""

    def __init__(
        self, snapshots: dict[str, ProxySnapshot | None], hung: frozenset[str] = frozenset()
    ) -> None:
        self.snapshots, self.hung = snapshots, hung
        self.active = self.peak = 0

    async def read(self, cluster: str) -> ClusterRead:
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            if cluster in self.hung:
                await asyncio.Event().wait()
            await asyncio.sleep(0)  # one deterministic turn: the other reads run meanwhile, as a real read
            snap = self.snapshots[cluster]
            why = None if snap is not None else f"cluster {cluster}: forbidden"
            return ClusterRead(cluster, 1000.0, snap, None, why)
        finally:
            self.active -= 1


async def test_a_hung_cluster_costs_its_timeout_and_is_unreachable() -> None:
    reads = FakeReads({"a": snapshot("p/a", 2), "b": snapshot("p/b", 2)}, hung=frozenset({"b"}))
    outcomes = await read_fleet(["a", "b"], reads.read, timeout=0.05)
    assert outcomes["a"].read.ok
    assert not outcomes["a"].timed_out
    assert outcomes["b"].timed_out
    assert outcomes["b"].read.snapshot is None
    assert "timed out" in (outcomes["b"].read.unavailable or "")


async def test_concurrency_is_bounded() -> None:
    names = [f"c{i}" for i in range(30)]
    reads = FakeReads({n: snapshot(f"p/{n}", 2) for n in names})
    outcomes = await read_fleet(names, reads.read, concurrency=4)
    assert len(outcomes) == 30
    assert reads.peak == 4


class Ticks:
    """A clock that moves only when told."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_a_bound_call_answers_with_when_its_slot_began_and_what_it_cost() -> None:
    wall, monotonic = Ticks(1000.0), Ticks(5.0)

    async def work() -> str:
        monotonic.now += 0.25
        return "page"

    turn = await Bound(2, 1.0, wall=wall, monotonic=monotonic).call(work)
    assert (turn.answer, turn.at, turn.started, turn.seconds) == ("page", 1000.0, 5.0, 0.25)


async def test_a_bound_call_past_its_timeout_answers_none() -> None:
    turn = await Bound(2, 0.05).call(asyncio.Event().wait)
    assert turn.answer is None
    assert turn.seconds >= 0.05


async def test_a_bound_never_runs_more_than_its_concurrency_at_once() -> None:
    reads = FakeReads({f"c{i}": None for i in range(9)})
    bound = Bound(concurrency=3)
    await asyncio.gather(*(bound.call(lambda name=name: reads.read(name)) for name in reads.snapshots))
    assert reads.peak == 3


class FakeCronJobs:
    """Probe CronJobs per client: a run, or one that never answers."""

    def __init__(self, hung: frozenset[str] = frozenset()) -> None:
        self.hung = hung
        self.asked: list[str] = []

    async def probe_run(self, cluster: ClusterSettings, now: float) -> ProbeRun:
        self.asked.append(cluster.name)
        if cluster.name in self.hung:
            await asyncio.Event().wait()
        return ProbeRun(cluster.name, True, 60.0, "succeeded a minute ago")


def with_control_planes(*names: str) -> list[ClusterSettings]:
    access = ControlPlaneSettings.model_validate({"kubeconfig": "/nonexistent"})
    clusters = fleet(("a", "p/a"), ("b", "p/b"), ("c", "p/c")).clusters
    return [c.model_copy(update={"control_plane": access}) if c.name in names else c for c in clusters]


async def test_probe_runs_ask_only_clients_with_a_control_plane_and_cut_a_hung_one_off() -> None:
    cronjobs = FakeCronJobs(hung=frozenset({"c"}))
    runs = await probe_runs(with_control_planes("a", "c"), cronjobs, 1000.0, timeout=0.05)
    assert sorted(cronjobs.asked) == ["a", "c"]
    assert runs == (
        ProbeRun("a", True, 60.0, "succeeded a minute ago"),
        ProbeRun("c", False, None, "no answer within 0.05 s"),
    )


async def test_no_cronjob_source_means_no_probe_runs() -> None:
    assert await probe_runs(with_control_planes("a"), None, 1000.0) == ()


# -- the CLI against the simulator ------------------------------------------------------------------


def _sim(tmp: Path, scenario: str, at: float) -> Iterator[Path]:
    srv = SimServer(scenario=scenario, speed=20)
    with srv:
        with srv.lock:
            srv.world.advance_to(at)
        yield srv.write_config(tmp / "proxybot.yaml")


@pytest.fixture(scope="module")
def healthy_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield from _sim(tmp_path_factory.mktemp("healthy"), "healthy", 120.0)


@pytest.fixture(scope="module")
def down_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield from _sim(tmp_path_factory.mktemp("down"), "target-down", 240.0)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    args = build_parser(digest_command.CONSOLE_COMMANDS).parse_args(["digest", *argv])
    code: int = args.run(args, Console({}, out, err))
    return code, out.getvalue(), err.getvalue()


def test_cli_prints_a_quiet_digest_for_a_healthy_fleet(healthy_config: Path) -> None:
    code, out, _ = run("--config", str(healthy_config))
    assert code == 0
    assert "Proxy fleet digest: all 1 target healthy" in out
    assert "Degraded" not in out


def test_cli_prints_the_degraded_target_with_its_next_step(down_config: Path) -> None:
    code, out, _ = run("--config", str(down_config))
    assert code == 1
    assert "1 degraded" in out
    assert "no healthy peers" in out
    assert "Next:" in out


def test_cli_json(down_config: Path) -> None:
    code, out, _ = run("--config", str(down_config), "--json")
    report = json.loads(out)
    assert code == 1
    assert report["check"] == "digest"
    assert report["posted"] is False
    assert report["headline"] == {"unreachable": 0, "degraded": 1, "healthy": 0}
    # A fresh store's first digest is one reading: no chart has a line to draw, none is posted.
    assert report["charts"] == []


def test_cli_refuses_a_missing_config(tmp_path: Path) -> None:
    code, _, err = run("--config", str(tmp_path / "nope.yaml"))
    assert code == 2
    assert err
