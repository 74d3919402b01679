"""KubeReader against the simulator over HTTPS with the kubeconfigs it writes, and against a local server
that records the token each request carries."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml

from bot.clients.kube import KubeReader
from bot.domain.parser import parse_syncer
from bot.domain.paths import probe_path, syncer_metrics_path
from bot.domain.snapshot import PEERS
from bot.errors import ClusterError
from sim.server import ApiFault, SimServer
from tests.fakes.http_server import LocalServer, Request


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
        time.sleep(0.3)  # the slow file: the loop must keep turning meanwhile
        fifo.write_text(text)

    threading.Thread(target=slow_writer, daemon=True).start()
    connecting = asyncio.create_task(KubeReader.connect("team-a", fifo, "team-a"))
    ticks = 0
    while not connecting.done():
        await asyncio.sleep(0.01)  # not a wait: the loop's other work, counted while the file is read
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


# -- a rotated tokenFile -----------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _token_kubeconfig(directory: Path, server: str, user: dict[str, str]) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "bot", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "bot"}}],
        "current-context": "c",
    }
    path = directory / "kubeconfig.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _ok(request: Request) -> tuple[int, Any]:
    return 200, {"kind": "Status"}


async def test_a_rotated_token_file_is_read_again_and_sent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    token = tmp_path / "token"
    token.write_text("first-token\n")
    clock = Clock()
    with LocalServer(_ok) as server:
        # Relative to the kubeconfig's directory, as the projected token's path is to the pod's.
        kubeconfig = _token_kubeconfig(tmp_path, server.url, {"tokenFile": "token"})
        before = kubeconfig.read_bytes()
        kube = await KubeReader.connect("c", kubeconfig, clock=clock)
        try:
            await kube.get(syncer_metrics_path(), timeout=5)
            token.write_text("second-token\n")  # kubelet rotates the projected token
            await kube.get(syncer_metrics_path(), timeout=5)  # read less than a minute ago: kept
            clock.now += 61
            await kube.get(syncer_metrics_path(), timeout=5)
            token.unlink()  # a read that fails keeps the last token, and says so without it
            clock.now += 61
            await kube.get(syncer_metrics_path(), timeout=5)
        finally:
            await kube.close()
    sent = [r.headers.get("authorization") for r in server.requests]
    assert sent == ["Bearer first-token", "Bearer first-token", "Bearer second-token", "Bearer second-token"]
    assert f"the tokenFile of {kubeconfig}: cannot read {token}" in caplog.text
    assert "second-token" not in caplog.text
    assert kubeconfig.read_bytes() == before  # nothing written back


async def test_an_inline_token_is_sent_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file")
    clock = Clock()
    with LocalServer(_ok) as server:
        # `token` wins over `tokenFile` in the client's loader; the file is never read again.
        kubeconfig = _token_kubeconfig(tmp_path, server.url, {"token": "inline", "tokenFile": "token"})
        kube = await KubeReader.connect("c", kubeconfig, clock=clock)
        try:
            await kube.get(syncer_metrics_path(), timeout=5)
            clock.now += 61
            await kube.get(syncer_metrics_path(), timeout=5)
        finally:
            await kube.close()
    assert [r.headers.get("authorization") for r in server.requests] == ["Bearer inline"] * 2


async def test_an_inline_token_with_its_newline_is_trimmed(tmp_path: Path) -> None:
    with LocalServer(_ok) as server:
        kubeconfig = _token_kubeconfig(tmp_path, server.url, {"token": "pasted-with-newline\n"})
        kube = await KubeReader.connect("c", kubeconfig)
        try:
            answer = await kube.get(syncer_metrics_path(), timeout=5)
        finally:
            await kube.close()
    assert answer.status == 200
    assert [r.headers.get("authorization") for r in server.requests] == ["Bearer pasted-with-newline"]


async def test_a_server_error_says_the_api_servers_words_and_a_wrong_certificate_says_so(
    tmp_path: Path,
) -> None:
    with SimServer(scenario="healthy", speed=10) as srv:
        srv.write_config(tmp_path / "proxybot.yaml")
        path = tmp_path / "proxybot.kubeconfigs" / "team-a.yaml"
        srv.set_fault("team-a", ApiFault("error"))
        kube = await reader(path)
        try:
            with pytest.raises(ClusterError) as failed:
                await kube.syncer_metrics(timeout=5)
        finally:
            await kube.close()
        doc = yaml.safe_load(path.read_text())
        other_ca = trustme.CA().cert_pem.bytes()
        for entry in doc["clusters"]:  # trust another CA: the server's certificate no longer verifies
            entry["cluster"]["certificate-authority-data"] = base64.b64encode(other_ca).decode()
        path.write_text(yaml.safe_dump(doc))
        kube = await reader(path)
        try:
            with pytest.raises(ClusterError) as untrusted:
                await kube.syncer_metrics(timeout=5)
        finally:
            await kube.close()
    assert failed.value.kind == "http"
    assert str(failed.value) == (
        "cluster team-a: GET /metrics/syncer answered 500 "
        "(Internal error occurred: etcdserver: request timed out)"
    )
    assert untrusted.value.kind == "unreachable"
    assert str(untrusted.value) == (
        f"cluster team-a: GET /metrics/syncer failed: the TLS certificate of 127.0.0.1:{srv.port} did not "
        "verify against the kubeconfig's certificate authority (unable to get local issuer certificate)"
    )
