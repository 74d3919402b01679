"""What the quick triage reads from the simulator, through real kubectl: control-plane pods with Ready
conditions, StatefulSet images carrying the vCluster version, the proxy's protected APIServices and Services
(an orphan among them), and a client too old to serve /metrics/syncer."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sim.kube.resources import proxy_service_name
from sim.server import SimServer

KUBECTL = "/usr/bin/kubectl"
PROTECTED = "vcluster.loft.sh/protected=resource-proxy"


class Running:
    """One scenario's simulator held at an instant, and kubectl against its clusters."""

    def __init__(self, server: SimServer, config: Path) -> None:
        self.server, self.config = server, config

    def at(self, when: float) -> Running:
        with self.server.lock:
            self.server.world.advance_to(when)
        return self

    def kubectl(self, cluster: str, *args: str) -> subprocess.CompletedProcess[str]:
        kubeconfig = self.config.parent / "proxybot.kubeconfigs" / f"{cluster}.yaml"
        cmd = [KUBECTL, "--kubeconfig", str(kubeconfig), *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)

    def json(self, cluster: str, *args: str) -> dict[str, Any]:
        out = self.kubectl(cluster, *args, "-o", "json")
        assert out.returncode == 0, out.stderr
        loaded: dict[str, Any] = json.loads(out.stdout)
        return loaded


def running(tmp: pytest.TempPathFactory, scenario: str) -> Iterator[Running]:
    # Speed 1 and a clock far ahead of the wall: the world stays where a test puts it.
    with SimServer(scenario=scenario, speed=1) as server:
        yield Running(server, server.write_config(tmp.mktemp(scenario) / "proxybot.yaml"))


@pytest.fixture(scope="module")
def restart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    yield from running(tmp_path_factory, "target-rolling-restart")


@pytest.fixture(scope="module")
def down(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    yield from running(tmp_path_factory, "target-down")


@pytest.fixture(scope="module")
def orphan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    yield from running(tmp_path_factory, "apiservice-orphan")


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    yield from running(tmp_path_factory, "old-client")


def ready(pod: dict[str, Any]) -> str:
    [condition] = [c for c in pod["status"]["conditions"] if c["type"] == "Ready"]
    return str(condition["status"])


def target_pods(sim: Running) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = sim.json(
        "control-plane", "get", "pods", "-n", "vcluster-crd-store", "-l", "app=vcluster"
    )["items"]
    return items


def test_pods_are_ready_until_a_restart_terminates_and_removes_them(restart: Running) -> None:
    [pod] = target_pods(restart.at(100))
    assert pod["metadata"]["name"] == "crd-store-0"
    assert pod["metadata"]["labels"]["release"] == "crd-store"
    assert ready(pod) == "True"
    [leaving] = target_pods(restart.at(121))
    assert ready(leaving) == "False"
    assert "deletionTimestamp" in leaving["metadata"]
    table = restart.kubectl("control-plane", "get", "pods", "-n", "vcluster-crd-store")
    assert "Terminating" in table.stdout
    assert target_pods(restart.at(125)) == []  # gone until its replacement starts
    [back] = target_pods(restart.at(130))
    assert ready(back) == "True"
    assert back["metadata"]["creationTimestamp"] != pod["metadata"]["creationTimestamp"]


def test_a_hung_target_is_running_but_not_ready(down: Running) -> None:
    [before] = target_pods(down.at(30))
    assert ready(before) == "True"
    [hung] = target_pods(down.at(90))
    assert hung["status"]["phase"] == "Running"
    assert ready(hung) == "False"
    assert hung["status"]["containerStatuses"][0]["ready"] is False
    # The client's own control plane stays Ready: only the target is down.
    client = down.json("control-plane", "get", "pods", "-n", "vcluster-team-a", "-l", "app=vcluster")
    assert [ready(p) for p in client["items"]] == ["True"]


def test_statefulset_images_carry_the_vcluster_version(old: Running) -> None:
    def image(namespace: str, name: str) -> str:
        sts = old.json("control-plane", "get", "statefulset", name, "-n", namespace)
        return str(sts["spec"]["template"]["spec"]["containers"][0]["image"])

    assert image("vcluster-team-a", "team-a") == "ghcr.io/loft-sh/vcluster-pro:0.36.4"
    assert image("vcluster-crd-store", "crd-store") == "ghcr.io/loft-sh/vcluster-pro:0.37.1"


def test_a_client_before_037_answers_404_on_metrics_syncer(old: Running) -> None:
    out = old.kubectl("team-a", "get", "--raw", "/metrics/syncer")
    assert out.returncode != 0
    assert "NotFound" in out.stderr
    assert (
        old.kubectl("team-a", "get", "--raw", "/apis/example.com/v1/namespaces/default/widgets").returncode
        == 0
    )


def test_apiservices_are_protected_and_name_their_service(orphan: Running) -> None:
    found = orphan.json("team-a", "get", "apiservices", "-l", PROTECTED)["items"]
    by_name = {a["metadata"]["name"]: a for a in found}
    assert set(by_name) == {"v1.example.com", "v1alpha1.data.example.com", "v1beta1.legacy.example.com"}
    services = orphan.json("team-a", "get", "services", "-n", "kube-system", "-l", PROTECTED)["items"]
    names = {s["metadata"]["name"] for s in services}
    for apiservice in found:
        ref = apiservice["spec"]["service"]
        assert ref["namespace"] == "kube-system"
        assert ref["name"] in names
    [condition] = by_name["v1beta1.legacy.example.com"]["status"]["conditions"]
    assert condition["status"] == "False"  # the orphan keeps its group/version unavailable
    assert by_name["v1.example.com"]["status"]["conditions"][0]["status"] == "True"


def test_long_service_names_get_a_hash_suffix() -> None:
    long_gv = "a-very-long-group-name.with-several-parts.example.com/v1alpha1"
    name = proxy_service_name(long_gv)
    assert len(name) <= 63
    assert name != f"proxy-{long_gv.split('/')[0].replace('.', '-')}-v1alpha1"
    assert name[-1].isalnum()
    assert proxy_service_name("example.com/v1") == "proxy-example-com-v1"
