"""The digest's collection (bounded, per-cluster timeout) and content (health, changes, reasons moved),
and `proxybot digest` against the simulator."""

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
from bot.digest.fleet import Health, build_digest, read_fleet
from bot.domain.snapshot import PEER_CACHE_SYNCED, PEERS, REQUESTS, ProxySnapshot, make_labels
from bot.live import ClusterRead
from config.settings import Settings
from sim.server import SimServer

GV = "example.com/v1"


def snapshot(target: str, healthy: float, failures: float = 0.0) -> ProxySnapshot:
    peers = {
        make_labels([("target", target), ("group_version", GV), ("state", state)]): value
        for state, value in (("healthy", healthy), ("quarantined", 2.0 - healthy if healthy < 2 else 0.0))
    }
    peers[make_labels([("target", target), ("group_version", GV), ("state", "half_open")])] = 0.0
    synced = {make_labels([("target", target), ("group_version", GV)]): 1.0}
    labels = [("target", target), ("group_version", GV), ("verb", "get"), ("code", "503")]
    requests = {make_labels([*labels, ("reason", "all_quarantined")]): failures} if failures else {}
    return ProxySnapshot(samples={PEERS: peers, PEER_CACHE_SYNCED: synced, REQUESTS: requests})


def settings(*clusters: tuple[str, list[str]]) -> Settings:
    return Settings.model_validate(
        {
            "slack": {"default_channel": "#fleet"},
            "clusters": [
                {
                    "name": name,
                    "kubeconfig": "/nonexistent",
                    "match": {"cluster": name},
                    "targets": [
                        {
                            "name": t,
                            "group_versions": [GV],
                            "probe": {"group_version": GV, "resource": "things"},
                        }
                        for t in targets
                    ],
                }
                for name, targets in clusters
            ],
        }
    )


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
            await asyncio.sleep(0)
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


async def test_health_worst_first_with_findings_and_next_steps() -> None:
    fleet = settings(("a", ["p/ok"]), ("b", ["p/down"]), ("c", ["p/gone"]))
    reads = FakeReads({"a": snapshot("p/ok", 2), "b": snapshot("p/down", 0, failures=7), "c": None})
    d = build_digest(fleet, await read_fleet(["a", "b", "c"], reads.read), period="p", at=1000.0)
    assert [(t.target, t.health) for t in d.targets] == [
        ("p/gone", Health.UNREACHABLE),
        ("p/down", Health.DEGRADED),
        ("p/ok", Health.HEALTHY),
    ]
    down = d.targets[1]
    assert down.findings
    assert down.findings[0].next_step
    assert down.healthy_peers == 0.0
    assert not d.quiet
    assert d.changes == ()  # no previous digest: nothing to compare with


async def test_changes_and_reasons_moved_since_the_previous_digest() -> None:
    fleet = settings(("a", ["p/x"]))
    first = build_digest(
        fleet, await read_fleet(["a"], FakeReads({"a": snapshot("p/x", 2, 3)}).read), period="1", at=1.0
    )
    second = build_digest(
        fleet,
        await read_fleet(["a"], FakeReads({"a": snapshot("p/x", 0, 10)}).read),
        period="2",
        at=2.0,
        previous=first.summary(),
        previous_at=1.0,
    )
    assert [(c.before, c.after) for c in second.changes] == [(first.targets[0].health, Health.DEGRADED)]
    moved = [(m.reason, m.count, m.since_last_digest) for m in second.moved if m.family == "request"]
    assert moved == [("all_quarantined", 7.0, True)]


async def test_all_healthy_is_quiet() -> None:
    fleet = settings(("a", ["p/x", "p/y"]))
    reads = FakeReads({"a": ProxySnapshot(samples={**snapshot("p/x", 2).samples})})
    both = {**snapshot("p/x", 2).samples[PEERS], **snapshot("p/y", 2).samples[PEERS]}
    synced = {
        **snapshot("p/x", 2).samples[PEER_CACHE_SYNCED],
        **snapshot("p/y", 2).samples[PEER_CACHE_SYNCED],
    }
    reads.snapshots["a"] = ProxySnapshot(samples={PEERS: both, PEER_CACHE_SYNCED: synced})
    d = build_digest(fleet, await read_fleet(["a"], reads.read), period="p", at=1.0)
    assert d.count(Health.HEALTHY) == 2
    assert d.quiet


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
    args = build_parser(digest_command.SUBCOMMANDS).parse_args(["digest", *argv])
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
    assert report["charts"] == ["digest-healthy-peers.png", "digest-failing-reasons.png"]


def test_cli_refuses_a_missing_config(tmp_path: Path) -> None:
    code, _, err = run("--config", str(tmp_path / "nope.yaml"))
    assert code == 2
    assert err
