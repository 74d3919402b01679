"""The simulator's HTTPS API against real clients: /usr/bin/kubectl and the official kubernetes package."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from prometheus_client.parser import text_string_to_metric_families

from config.loader import load_config
from sim.server import HOLD_SNAP, SimServer
from tests.waiting import wait_until

KUBECTL = "/usr/bin/kubectl"
PROBE_PATH = "/apis/example.com/v1/namespaces/default/widgets?limit=1"


@pytest.fixture(scope="module")
def srv() -> Iterator[SimServer]:
    with SimServer(scenario="healthy", speed=20) as server:
        yield server


@pytest.fixture(scope="module")
def written(srv: SimServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return srv.write_config(tmp_path_factory.mktemp("cfg") / "proxybot.yaml")


def kubeconfig(config: Path, cluster: str) -> str:
    return str(config.parent / "proxybot.kubeconfigs" / f"{cluster}.yaml")


def kubectl(config: Path, cluster: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [KUBECTL, "--kubeconfig", kubeconfig(config, cluster), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


def http(srv: SimServer) -> httpx.Client:
    return httpx.Client(verify=ssl.create_default_context(cafile=str(srv.ca_path)), timeout=30)


def test_kubectl_reads_metrics_syncer(written: Path) -> None:
    out = kubectl(written, "team-a", "get", "--raw", "/metrics/syncer")
    assert out.returncode == 0, out.stderr
    families = {f.name: f for f in text_string_to_metric_families(out.stdout)}
    states = {s.labels["state"] for s in families["vcluster_proxy_peers"].samples}
    assert states == {"healthy", "quarantined", "half_open"}
    assert families["vcluster_proxy_request_duration_seconds"].type == "histogram"
    assert "go_goroutines" in families


def test_kubectl_runs_the_guides_probe(written: Path) -> None:
    out = kubectl(written, "team-a", "get", "--raw", PROBE_PATH, "--request-timeout=15s")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["kind"] == "WidgetList"
    assert len(doc["items"]) == 1
    assert doc["metadata"]["continue"]


def test_kubectl_api_resources_lists_core_aggregated_and_proxied(written: Path) -> None:
    out = kubectl(written, "team-a", "api-resources")
    assert out.returncode == 0, out.stderr
    for name in ("namespaces", "apiservices", "widgets", "datasets"):
        assert name in out.stdout


def test_kubectl_gets_apiservices_available(written: Path) -> None:
    out = kubectl(written, "team-a", "get", "apiservices")
    assert out.returncode == 0, out.stderr
    assert "v1.example.com" in out.stdout
    assert "True" in out.stdout


def test_kubectl_gets_the_probe_cronjob_in_the_control_plane(written: Path) -> None:
    out = kubectl(written, "control-plane", "get", "cronjob", "-n", "vcluster-team-a", "-o", "json")
    assert out.returncode == 0, out.stderr
    (job,) = json.loads(out.stdout)["items"]
    assert job["metadata"]["name"] == "proxy-probe"
    assert job["status"]["lastSuccessfulTime"]
    assert job["status"]["lastScheduleTime"]
    table = kubectl(written, "control-plane", "get", "cronjob", "-n", "vcluster-team-a")
    assert "proxy-probe" in table.stdout


def test_kubectl_without_metrics_permission_is_forbidden(written: Path) -> None:
    out = kubectl(written, "team-a", "--context", "team-a-no-metrics", "get", "--raw", "/metrics/syncer")
    assert out.returncode != 0
    assert "Forbidden" in out.stderr or "forbidden" in out.stderr


def test_no_token_is_401_status(srv: SimServer) -> None:
    with http(srv) as h:
        resp = h.get(srv.cluster_url("team-a") + "/metrics/syncer")
    assert resp.status_code == 401
    assert resp.json()["kind"] == "Status"


def test_label_selector_and_continue(srv: SimServer) -> None:
    url = srv.cluster_url("crd-store") + "/apis/example.com/v1/namespaces/default/widgets"
    auth = {"Authorization": f"Bearer {srv.token}"}
    with http(srv) as h:
        first = h.get(url, params={"limit": 3}, headers=auth).json()
        rest = h.get(url, params={"limit": 3, "continue": first["metadata"]["continue"]}, headers=auth).json()
        gold = h.get(url, params={"labelSelector": "tier=gold"}, headers=auth).json()
    items = first["items"] + rest["items"]
    names = [i["metadata"]["name"] for i in items]
    assert names == ["widget-0", "widget-1", "widget-2", "widget-3"]
    assert "continue" not in rest["metadata"]
    wanted = [i["metadata"]["name"] for i in items if i["metadata"]["labels"]["tier"] == "gold"]
    assert 0 < len(wanted) < len(items)  # the selector has something to choose and something to leave out
    assert [i["metadata"]["name"] for i in gold["items"]] == wanted


def test_upgrade_is_501(srv: SimServer) -> None:
    url = srv.cluster_url("team-a") + "/apis/example.com/v1/namespaces/default/widgets/widget-0/exec"
    with http(srv) as h:
        resp = h.post(url, headers={"Authorization": f"Bearer {srv.token}"})
    assert resp.status_code == 501
    assert resp.json()["code"] == 501


def test_network_policies_lack_udp_rules_only_where_values_lack_them(srv: SimServer) -> None:
    url = srv.cluster_url("control-plane") + "/apis/networking.k8s.io/v1/networkpolicies"
    with http(srv) as h:
        items = h.get(url, headers={"Authorization": f"Bearer {srv.token}"}).json()["items"]
    by_ns = {i["metadata"]["namespace"]: i["spec"] for i in items}
    client_udp = [r for r in by_ns["vcluster-team-a"]["egress"] if r.get("ports") == [{"protocol": "UDP"}]]
    target_udp = [
        r for r in by_ns["vcluster-crd-store"]["ingress"] if r.get("ports") == [{"protocol": "UDP"}]
    ]
    assert len(client_udp) == 1
    assert len(target_udp) == 1


def test_kube_state_metrics_exposes_the_probe_cronjob(srv: SimServer) -> None:
    with http(srv) as h:
        text = h.get(srv.ksm_url, headers={"Authorization": f"Bearer {srv.token}"}).text
    samples = {s.name: s for f in text_string_to_metric_families(text) for s in f.samples}
    assert samples["kube_cronjob_created"].labels == {
        "namespace": "vcluster-team-a",
        "cronjob": "proxy-probe",
    }
    assert abs(samples["kube_cronjob_status_last_successful_time"].value - time.time()) < 3600


def test_python_client_does_the_same(written: Path) -> None:
    api = k8s_config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=kubeconfig(written, "team-a"), context="team-a"
    )
    widgets: Any = k8s.CustomObjectsApi(api).list_namespaced_custom_object(
        "example.com", "v1", "default", "widgets", limit=1
    )
    assert len(widgets["items"]) == 1
    services: Any = k8s.ApiregistrationV1Api(api).list_api_service()
    assert {s.metadata.name for s in services.items} == {"v1.example.com", "v1alpha1.data.example.com"}
    method, url, headers, body, post = api.param_serialize(
        "GET", "/metrics/syncer", auth_settings=["BearerToken"]
    )
    resp = api.call_api(method, url, headers, body, post, _request_timeout=30)
    resp.read()
    assert b"vcluster_proxy_peer_cache_synced" in resp.data
    groups = k8s.ApisApi(api).get_api_versions()
    assert "example.com" in {g.name for g in groups.groups}
    cp = k8s_config.new_client_from_config(config_file=kubeconfig(written, "control-plane"))  # type: ignore[no-untyped-call]
    jobs: Any = k8s.BatchV1Api(cp).list_namespaced_cron_job("vcluster-team-a")
    assert jobs.items[0].status.last_successful_time is not None


def test_written_config_validates(written: Path) -> None:
    settings = load_config(written, env={}, purpose="demo").settings
    (cluster,) = settings.clusters
    assert cluster.targets[0].name == "platform/crd-store"


def _answer(check_url: str, srv: SimServer, code: int) -> httpx.Response:
    """The first answer of `check_url` with status `code`, waiting (bounded) for the scenario to get there."""
    with http(srv) as h:

        def answered() -> httpx.Response | None:
            resp = h.get(check_url, headers={"Authorization": f"Bearer {srv.token}"})
            return resp if resp.status_code == code else None

        return wait_until(answered, 10, f"{check_url} to answer {code}", interval=0.05)


def test_degraded_proxy_answers_503_status_with_retry_after() -> None:
    with SimServer(scenario="license-failure", speed=200) as srv:
        resp = _answer(srv.cluster_url("team-a") + PROBE_PATH, srv, 503)
        assert resp.headers["Retry-After"] == "1"
        assert resp.json()["reason"] == "ServiceUnavailable"
        discovery = _answer(srv.cluster_url("team-a") + "/apis/example.com/v1", srv, 200).json()
        assert {r["name"]: r["verbs"] for r in discovery["resources"]} == {
            "widgets": ["get"],
            "gadgets": ["get"],
        }


def test_ownership_masked_named_get_is_404() -> None:
    with SimServer(scenario="ownership-masked", speed=1) as srv, http(srv) as h:
        url = srv.cluster_url("team-a") + "/apis/example.com/v1/namespaces/default/widgets/widget-1"
        resp = h.get(url, headers={"Authorization": f"Bearer {srv.token}"})
    assert resp.status_code == 404
    assert resp.json()["kind"] == "Status"


def test_a_held_simulation_stops_at_its_second_and_answers_from_it() -> None:
    # target-down at 100x: the target hangs at t=60 (0.6 s in); held at t=30, it never does.
    with SimServer(scenario="target-down", speed=100, hold_at=30.0) as held:
        wait_until(lambda: held.held, 10, "the simulated clock to reach its hold", interval=0.05)
        wall = time.monotonic()
        while time.monotonic() - wall < 1.0:  # more than 60 simulated seconds of wall time pass
            held.catch_up()
            assert held.world.now() == 30.0
            time.sleep(0.05)  # a sleep on purpose: wall time passes and the held clock must not move
        assert not any("stops answering" in what for _, what in held.world.log)


def test_a_hold_is_reached_in_one_step_and_its_shown_time_stops_there() -> None:
    # Whatever falls due in the last HOLD_SNAP seconds before a hold is seen only at the hold: the demo's
    # pictured stops get their last notifications once the world no longer moves.
    seen: list[float] = []
    srv = SimServer(scenario="healthy", speed=100, hold_at=5.0, epoch=1_000_000.0)
    srv.advance = lambda t: (seen.append(t), srv.world.advance_to(t))
    with srv:
        wait_until(lambda: srv.held, 10, "the simulated clock to reach its hold", interval=0.01)
        ran = srv.running_time()
        wait_until(lambda: srv.running_time() > ran, 10, "the clock work is paced by to go on", interval=0.01)
        assert srv.running_time() > ran, "the clock work is paced by goes on"
        assert srv.shown_time() == 1_000_000.0 + 5.0 / 100, "shown as the epoch plus the held second"
    assert seen[0] == 0.0, "the world starts at its first second, through `advance`"
    assert not [t for t in seen if 5.0 - HOLD_SNAP <= t < 5.0]
    assert seen[-1] == 5.0
