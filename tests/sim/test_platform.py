"""The simulator's vCluster Platform stand-in, met by real /usr/bin/kubectl as the vendor's pages use it:
the management API with the access key, the project and cluster proxy paths, its refusals."""

from __future__ import annotations

import json
import ssl
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from bot.checks.vcluster_yaml import judge_document
from bot.domain.vcluster_yaml_result import ProxyState
from sim.defaults import CLIENT, CONTROL_PLANE, PROJECT, TARGET
from sim.fleet import TargetCluster
from sim.platform_instances import REFUSED_CLIENT
from sim.server import ApiFault, SimServer

KUBECTL = "/usr/bin/kubectl"
INSTANCES = "/apis/management.loft.sh/v1/virtualclusterinstances"
NAMESPACE = f"p-{PROJECT}"
IN_NAMESPACE = (
    f"/kubernetes/management/apis/management.loft.sh/v1/namespaces/{NAMESPACE}/virtualclusterinstances"
)


@pytest.fixture(scope="module")
def srv() -> Iterator[SimServer]:
    with SimServer(scenario="healthy", speed=20, platform=True) as server:
        yield server


@pytest.fixture(scope="module")
def written(srv: SimServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return srv.write_config(tmp_path_factory.mktemp("cfg") / "proxybot.yaml")


def kubectl(
    srv: SimServer, path: str, *args: str, token: str | None = None
) -> subprocess.CompletedProcess[str]:
    """kubectl at `<platform>/<path>` with the access key (or `token`)."""
    key = srv.platform.access_key if srv.platform and token is None else token or ""
    server = ["--server", srv.base_url + path, "--certificate-authority", str(srv.ca_path)]
    cmd = [KUBECTL, *server, "--token", key, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


def http(srv: SimServer) -> httpx.Client:
    return httpx.Client(verify=ssl.create_default_context(cafile=str(srv.ca_path)), timeout=30)


def get(srv: SimServer, path: str, token: str | None = None) -> httpx.Response:
    key = srv.platform.access_key if srv.platform and token is None else token
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with http(srv) as client:
        return client.get(srv.base_url + path, headers=headers)


def instances(srv: SimServer) -> dict[str, Any]:
    out = kubectl(srv, "/kubernetes/management", "get", "--raw", INSTANCES)
    assert out.returncode == 0, out.stderr
    listed: dict[str, Any] = json.loads(out.stdout)
    return listed


def test_kubectl_lists_every_tenant_as_an_instance_with_the_key(srv: SimServer) -> None:
    listed = instances(srv)
    assert (listed["kind"], listed["apiVersion"]) == ("VirtualClusterInstanceList", "management.loft.sh/v1")
    assert int(listed["metadata"]["resourceVersion"]) >= 1
    by_name = {i["metadata"]["name"]: i for i in listed["items"]}
    assert set(by_name) == {CLIENT, TARGET, REFUSED_CLIENT}
    assert {i["metadata"]["namespace"] for i in listed["items"]} == {NAMESPACE}
    client = by_name[CLIENT]
    assert client["spec"]["clusterRef"] == {
        "cluster": CONTROL_PLANE,
        "namespace": f"vcluster-{CLIENT}",
        "virtualCluster": CLIENT,
    }
    assert client["spec"]["template"]["helmRelease"]["chart"]["version"] == "0.37.1"


def test_a_clients_vcluster_yaml_names_its_target_and_passes_check_vcluster(srv: SimServer) -> None:
    client = {i["metadata"]["name"]: i for i in instances(srv)["items"]}[CLIENT]
    values = yaml.safe_load(client["spec"]["template"]["helmRelease"]["values"])
    entries = values["experimental"]["proxy"]["customResources"]
    assert "widgets.example.com/v1" in entries
    assert {e["targetVirtualCluster"]["name"] for e in entries.values()} == {TARGET}
    judged = judge_document(values)
    assert judged.proxy is ProxyState.STARTS, judged.problems
    assert not judged.problems
    assert (
        client["status"]["virtualCluster"]["helmRelease"]["values"]
        == client["spec"]["template"]["helmRelease"]["values"]
    )


def test_a_templated_instance_has_its_values_only_in_the_status(srv: SimServer) -> None:
    target = {i["metadata"]["name"]: i for i in instances(srv)["items"]}[TARGET]
    assert "template" not in target["spec"]
    assert target["spec"]["templateRef"]["name"]
    values = yaml.safe_load(target["status"]["virtualCluster"]["helmRelease"]["values"])
    assert values["policies"]["networkPolicy"]["controlPlane"]["ingress"][0]["ports"] == [{"protocol": "UDP"}]


def test_the_refused_client_is_listed_and_vcluster_would_refuse_it(srv: SimServer) -> None:
    refused = {i["metadata"]["name"]: i for i in instances(srv)["items"]}[REFUSED_CLIENT]
    assert refused["status"]["phase"] != "Ready"
    judged = judge_document(yaml.safe_load(refused["spec"]["template"]["helmRelease"]["values"]))
    assert judged.proxy is ProxyState.REFUSED
    assert any("targetVirtualCluster.name" in p.message for p in judged.problems)
    answer = get(srv, f"/kubernetes/project/{PROJECT}/virtualcluster/{REFUSED_CLIENT}/version")
    assert (answer.status_code, answer.json()["kind"]) == (503, "Status")


def test_kubectl_get_across_namespaces_and_by_name(srv: SimServer) -> None:
    table = kubectl(srv, "/kubernetes/management", "get", "virtualclusterinstances.management.loft.sh", "-A")
    assert table.returncode == 0, table.stderr
    assert table.stdout.split()[:2] == ["NAMESPACE", "NAME"]
    assert f"{NAMESPACE}   {CLIENT}" in table.stdout
    one = kubectl(
        srv, "/kubernetes/management", "get", "virtualclusterinstances", CLIENT, "-n", NAMESPACE, "-o", "json"
    )
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["kind"] == "VirtualClusterInstance"


def test_without_the_key_or_with_another_401_status(srv: SimServer) -> None:
    refused = kubectl(srv, "/kubernetes/management", "get", "--raw", INSTANCES, token="not-the-key")
    assert refused.returncode != 0
    assert "Unauthorized" in refused.stderr
    for token in ("", "not-the-key", srv.token):  # a simulated cluster's token is not the platform's key
        for path in (
            "/kubernetes/management" + INSTANCES,
            f"/kubernetes/project/{PROJECT}/virtualcluster/{CLIENT}/version",
        ):
            answer = get(srv, path, token=token)
            assert answer.status_code == 401, (token, path)
            assert answer.json() == {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "Unauthorized",
                "reason": "Unauthorized",
                "code": 401,
            }


@pytest.mark.parametrize(
    ("path", "code"),
    [
        (f"/kubernetes/project/{PROJECT}/virtualcluster/nope/version", 404),
        (f"/kubernetes/project/other/virtualcluster/{CLIENT}/version", 404),
        (f"/kubernetes/project/{PROJECT}/virtualcluster/Team_A/version", 400),
        ("/kubernetes/cluster/elsewhere/version", 404),
        ("/kubernetes/cluster/Bad..Name/version", 400),
        ("/kubernetes/space/x", 404),
        ("/kubernetes/management/api/v1/namespaces", 404),
        ("/kubernetes/management" + INSTANCES.replace("virtualclusterinstances", "clusters"), 404),
        (
            f"/kubernetes/management{INSTANCES.replace('/virtualcluster', '/namespaces/BAD/virtualcluster')}",
            400,
        ),
        (f"{IN_NAMESPACE}/nope", 404),
    ],
)
def test_unknown_paths_and_names_are_refused_in_status_shape(srv: SimServer, path: str, code: int) -> None:
    answer = get(srv, path)
    assert answer.status_code == code, answer.text
    assert (answer.json()["kind"], answer.json()["code"]) == ("Status", code)


def test_another_projects_namespace_lists_nothing(srv: SimServer) -> None:
    answer = get(srv, "/kubernetes/management" + INSTANCES.replace("/virtual", "/namespaces/p-other/virtual"))
    assert answer.status_code == 200
    assert answer.json()["items"] == []


def test_a_tenants_metrics_and_api_through_the_project_path(srv: SimServer) -> None:
    tenant = f"/kubernetes/project/{PROJECT}/virtualcluster/{CLIENT}"
    # `get --raw` drops the server URL's path, so the raw read names the whole platform path.
    raw = kubectl(srv, "", "get", "--raw", f"{tenant}/metrics/syncer")
    assert raw.returncode == 0, raw.stderr
    families = {f.name: f for f in text_string_to_metric_families(raw.stdout)}
    assert {s.labels["state"] for s in families["vcluster_proxy_peers"].samples} == {
        "healthy",
        "quarantined",
        "half_open",
    }
    widgets = kubectl(srv, tenant, "get", "widgets.example.com", "-n", "default", "-o", "name")
    assert widgets.returncode == 0, widgets.stderr
    assert "widget.example.com/widget-0" in widgets.stdout.split()


def test_the_control_plane_cluster_through_the_cluster_path(srv: SimServer) -> None:
    pods = kubectl(
        srv, f"/kubernetes/cluster/{CONTROL_PLANE}", "get", "pods", "-A", "-l", "app=vcluster", "-o", "name"
    )
    assert pods.returncode == 0, pods.stderr
    assert f"pod/{CLIENT}-0" in pods.stdout.split()


def test_a_faulty_tenant_is_faulty_through_the_platform_and_a_faulty_platform_everywhere(
    srv: SimServer,
) -> None:
    tenant = f"/kubernetes/project/{PROJECT}/virtualcluster/{CLIENT}/version"
    srv.set_fault(CLIENT, ApiFault("error"))
    try:
        assert get(srv, tenant).status_code == 500
        assert get(srv, "/kubernetes/management" + INSTANCES).status_code == 200
    finally:
        srv.set_fault(CLIENT, None)
    srv.set_platform_fault(ApiFault("error"))
    try:
        assert get(srv, "/kubernetes/management" + INSTANCES).status_code == 500
        assert get(srv, f"/clusters/{CLIENT}/version", token=srv.token).status_code == 200
    finally:
        srv.set_platform_fault(None)
    assert get(srv, tenant).status_code == 200


def test_a_watch_sees_an_instance_arrive(srv: SimServer) -> None:
    version = instances(srv)["metadata"]["resourceVersion"]
    path = f"/kubernetes/management{INSTANCES}?watch=1&timeoutSeconds=3&resourceVersion={version}"

    def grow() -> None:
        with srv.lock:
            srv.world.platform.targets["late-joiner"] = TargetCluster(name="late-joiner")

    timer = threading.Timer(0.5, grow)
    timer.start()
    try:
        answer = get(srv, path)
    finally:
        timer.join()
        with srv.lock:
            srv.world.platform.targets.pop("late-joiner", None)
    events = [json.loads(line) for line in answer.text.splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "late-joiner")]
    stale = get(srv, f"/kubernetes/management{INSTANCES}?watch=1&resourceVersion=1")
    assert json.loads(stale.text.splitlines()[0])["object"]["code"] == 410


def test_written_config_names_the_platform_and_no_clusters(srv: SimServer, written: Path) -> None:
    config = yaml.safe_load(written.read_text())
    assert "clusters" not in config
    platform = config["platform"]
    assert platform["url"] == srv.base_url
    key_file = written.parent / platform["access_key_file"]
    assert srv.platform is not None
    assert key_file.read_text().strip() == srv.platform.access_key
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert (written.parent / platform["ca_file"]).read_bytes() == srv.ca_pem
    kubeconfig = str(written.parent / "proxybot.kubeconfigs" / "platform.yaml")
    out = subprocess.run(
        [
            KUBECTL,
            "--kubeconfig",
            kubeconfig,
            "--context",
            f"{PROJECT}/{CLIENT}",
            "get",
            "apiservices",
            "-o",
            "name",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "apiservice.apiregistration.k8s.io/v1.example.com" in out.stdout.split()


def test_without_platform_the_simulator_serves_no_platform_paths() -> None:
    with SimServer(scenario="healthy", speed=20) as plain:
        assert plain.platform is None
        answer = get(plain, "/kubernetes/management" + INSTANCES, token=plain.token)
        assert answer.status_code == 404
        assert get(plain, f"/clusters/{CLIENT}/version", token=plain.token).status_code == 200


def test_proxybot_sim_platform_writes_a_platform_config(tmp_path: Path) -> None:
    config = tmp_path / "proxybot.yaml"
    cmd = [sys.executable, "-m", "bot", "sim", "--platform", "--speed", "20", "--write-config", str(config)]
    lines = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                lines.append(line)
                if line.startswith("Ctrl-C"):
                    break
        finally:
            proc.terminate()
    shown = "".join(lines)
    assert "/kubernetes/management" in shown, shown
    assert f"/kubernetes/project/{PROJECT}/virtualcluster/{CLIENT}" in shown
    assert "access key" not in shown  # the key is in the written file, not on the terminal
    written = yaml.safe_load(config.read_text())
    assert set(written) == {"slack", "platform"}


def test_a_rotated_key_is_refused_and_the_new_one_works() -> None:
    with SimServer(scenario="healthy", speed=20, platform=True) as rotating:
        assert rotating.platform is not None
        old = rotating.platform.access_key
        new = rotating.platform.rotate_key()
        assert get(rotating, "/kubernetes/management" + INSTANCES, token=old).status_code == 401
        assert get(rotating, "/kubernetes/management" + INSTANCES, token=new).status_code == 200


def test_a_project_scoped_key_reads_its_project_only(srv: SimServer) -> None:
    assert srv.platform is not None
    key = srv.platform.scoped_key(PROJECT)
    mine = kubectl(
        srv, "/kubernetes/management", "get", "virtualclusterinstances", "-n", NAMESPACE, token=key
    )
    assert mine.returncode == 0, mine.stderr
    assert CLIENT in mine.stdout
    everywhere = kubectl(srv, "/kubernetes/management", "get", "virtualclusterinstances", "-A", token=key)
    assert everywhere.returncode != 0
    assert 'cannot list resource "virtualclusterinstances"' in everywhere.stderr
    assert "at the cluster scope" in everywhere.stderr
    refusals = {
        "/kubernetes/management" + INSTANCES.replace("/virtual", "/namespaces/p-other/virtual"): "list",
        f"/kubernetes/project/other/virtualcluster/{CLIENT}/version": "use",
        f"/kubernetes/cluster/{CONTROL_PLANE}/version": "use",
    }
    for path, verb in refusals.items():
        answer = get(srv, path, token=key)
        assert answer.status_code == 403, path
        assert answer.json()["reason"] == "Forbidden"
        assert f"cannot {verb} resource" in answer.json()["message"]
    assert (
        get(srv, f"/kubernetes/project/{PROJECT}/virtualcluster/{CLIENT}/version", token=key).status_code
        == 200
    )


def test_kubectl_creates_a_self_naming_the_key_and_the_namespace_prefix(srv: SimServer) -> None:
    assert srv.platform is not None
    manifest = "apiVersion: management.loft.sh/v1\nkind: Self\nmetadata: {}\nspec: {}\n"
    for key, scope in ((srv.platform.access_key, None), (srv.platform.scoped_key(PROJECT), PROJECT)):
        cmd = [KUBECTL, "--server", srv.base_url + "/kubernetes/management", "--token", key]
        # The stand-in serves no OpenAPI document, so kubectl's client-side validation is off.
        cmd += [
            "--certificate-authority",
            str(srv.ca_path),
            "create",
            "--validate=false",
            "-f",
            "-",
            "-o",
            "json",
        ]
        out = subprocess.run(cmd, input=manifest, capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode == 0, out.stderr
        status = json.loads(out.stdout)["status"]
        assert status["projectNamespacePrefix"] == "p-"
        assert status.get("accessKeyScope") == (None if scope is None else {"projects": [{"project": scope}]})
