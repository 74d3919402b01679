"""KubeReader against the simulator over HTTPS with the kubeconfigs it writes."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.clients.kube import KubeReader
from bot.domain.parser import parse_syncer
from bot.domain.paths import probe_path
from bot.domain.snapshot import PEERS
from bot.errors import ClusterError
from sim.server import SimServer


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("sim")
    with SimServer(scenario="healthy", speed=10) as srv:
        srv.write_config(directory / "proxybot.yaml")
        yield directory / "proxybot.kubeconfigs" / "team-a.yaml"


async def reader(kubeconfig: Path, context: str = "team-a") -> KubeReader:
    return await KubeReader.connect("team-a", kubeconfig, context)


async def test_reads_and_parses_syncer_metrics(kubeconfig: Path) -> None:
    kube = await reader(kubeconfig)
    try:
        snapshot = parse_syncer(await kube.syncer_metrics(timeout=5))
    finally:
        await kube.close()
    assert "platform/crd-store" in snapshot.targets()
    assert snapshot.series(PEERS, target="platform/crd-store")


async def test_probe_path_answers_a_list(kubeconfig: Path) -> None:
    kube = await reader(kubeconfig)
    try:
        response = await kube.get(probe_path("example.com/v1", "default", "widgets"), timeout=15)
    finally:
        await kube.close()
    assert response.status == 200
    assert b'"items"' in response.body


async def test_replica_context_reads_that_pod(kubeconfig: Path) -> None:
    kube = await reader(kubeconfig, "team-a-0")
    try:
        assert "vcluster_proxy_peers" in await kube.syncer_metrics(timeout=5)
    finally:
        await kube.close()


async def test_identity_without_get_on_metrics_is_forbidden_with_the_fix(kubeconfig: Path) -> None:
    kube = await reader(kubeconfig, "team-a-no-metrics")
    try:
        with pytest.raises(ClusterError) as err:
            await kube.syncer_metrics(timeout=5)
    finally:
        await kube.close()
    assert err.value.kind == "forbidden"
    assert "/metrics/syncer" in str(err.value)


async def test_bad_kubeconfig_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ClusterError) as err:
        await KubeReader.connect("c", missing)
    assert err.value.kind == "bad_config"
    assert str(missing) in str(err.value)


async def test_the_kubeconfig_is_loaded_off_the_event_loop(kubeconfig: Path, tmp_path: Path) -> None:
    # A FIFO's open blocks until a writer comes: loaded on the loop, the loop would stop until then.
    fifo = tmp_path / "slow.yaml"
    os.mkfifo(fifo)
    text = kubeconfig.read_text()

    def slow_writer() -> None:
        time.sleep(0.3)
        fifo.write_text(text)

    threading.Thread(target=slow_writer, daemon=True).start()
    connecting = asyncio.create_task(KubeReader.connect("team-a", fifo, "team-a"))
    ticks = 0
    while not connecting.done():
        await asyncio.sleep(0.01)
        ticks += 1
    kube = await connecting
    try:
        assert "vcluster_proxy_peers" in await kube.syncer_metrics(timeout=5)
    finally:
        await kube.close()
    assert ticks >= 10, "the loop kept running while the kubeconfig was read"


async def test_unreachable_and_hung_servers(kubeconfig: Path, tmp_path: Path) -> None:
    text = kubeconfig.read_text()
    server = next(line.split()[-1] for line in text.splitlines() if "server:" in line)
    base = server.split("/clusters/")[0]
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(8)  # accepts TCP, never speaks TLS
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(hung.accept()[0]), daemon=True).start()
    try:
        for port, kind in ((closed_port, "unreachable"), (hung.getsockname()[1], "timeout")):
            path = tmp_path / f"{kind}.yaml"
            path.write_text(text.replace(base, f"https://127.0.0.1:{port}"))
            kube = await reader(path)
            try:
                with pytest.raises(ClusterError) as err:
                    await kube.syncer_metrics(timeout=0.5)
            finally:
                await kube.close()
            assert err.value.kind == kind
    finally:
        hung.close()
        for conn in accepted:
            conn.close()
