"""Per-cluster API faults and extra client/target pairs in the simulator (what tests/faults/ builds on)."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from sim.server import ApiFault, SimServer


@pytest.fixture(scope="module")
def srv() -> Iterator[SimServer]:
    with SimServer(scenario="target-down", speed=20, clients=2) as server:
        yield server


@pytest.fixture(autouse=True)
def healed(srv: SimServer) -> Iterator[None]:
    yield
    srv.set_fault("team-b", None)


def get(srv: SimServer, cluster: str, timeout: float = 10.0, pod: str | None = None) -> httpx.Response:
    trust = ssl.create_default_context(cafile=str(srv.ca_path))
    headers = {"Authorization": f"Bearer {srv.token_for(cluster, pod)}"}
    url = srv.cluster_url(cluster, pod) + "/metrics/syncer"
    return httpx.get(url, headers=headers, verify=trust, timeout=timeout)


def test_a_second_pair_proxies_its_own_target_and_is_configured(srv: SimServer, tmp_path: Path) -> None:
    page = get(srv, "team-b").text
    assert 'target="platform/crd-store-b"' in page
    assert 'target="platform/crd-store"' not in page
    doc = yaml.safe_load(srv.write_config(tmp_path / "proxybot.yaml").read_text())
    names = {c["name"]: [t["name"] for t in c["targets"]] for c in doc["clusters"]}
    assert names == {"team-a": ["platform/crd-store"], "team-b": ["platform/crd-store-b"]}


def test_the_scenario_fault_stays_on_the_first_pair(srv: SimServer) -> None:
    with srv.lock:
        srv.world.advance_to(120.0)  # target-down: crd-store stops answering at t=60
    assert not srv.world.platform.targets["crd-store"].answering()
    assert srv.world.platform.targets["crd-store-b"].answering()


def test_error_and_unauthorized_answer_as_an_api_server_does(srv: SimServer) -> None:
    srv.set_fault("team-b", ApiFault("error"))
    failed = get(srv, "team-b")
    assert (failed.status_code, failed.json()["reason"]) == (500, "InternalError")
    srv.set_fault("team-b", ApiFault("unauthorized"))
    refused = get(srv, "team-b", pod="team-b-0")  # its replicas too
    assert (refused.status_code, refused.json()["reason"]) == (401, "Unauthorized")
    assert get(srv, "team-a").status_code == 200  # the other cluster is unaffected
    srv.set_fault("team-b", None)
    assert get(srv, "team-b").status_code == 200


def test_slow_answers_after_its_seconds(srv: SimServer) -> None:
    srv.set_fault("team-b", ApiFault("slow", seconds=1.0))
    started = time.monotonic()
    assert get(srv, "team-b").status_code == 200
    assert time.monotonic() - started >= 1.0


def test_hang_never_answers_until_the_simulator_stops() -> None:
    outcome: list[object] = []
    with SimServer(scenario="healthy", speed=20) as server:
        server.set_fault("team-a", ApiFault("hang"))
        with pytest.raises(httpx.ReadTimeout):
            get(server, "team-a", timeout=1.0)

        def waiting() -> None:
            try:
                outcome.append(get(server, "team-a", timeout=30.0).status_code)
            except httpx.HTTPError as error:
                outcome.append(error)

        caller = threading.Thread(target=waiting)
        caller.start()
        time.sleep(0.5)  # a wait for nothing: the hung request is not answered while the simulator runs
        assert not outcome
        started = time.monotonic()
    caller.join(timeout=10)
    assert outcome == [503]
    assert time.monotonic() - started < 5  # hung requests do not hold the stop


def test_an_unknown_cluster_is_refused(srv: SimServer) -> None:
    with pytest.raises(KeyError, match="team-z"):
        srv.set_fault("team-z", ApiFault("error"))
