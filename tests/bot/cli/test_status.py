"""`proxybot status`, `peers` and `reasons` against the simulator: verdicts, JSON and exit codes."""

from __future__ import annotations

from urllib.parse import unquote

from tests.bot.cli.conftest import Sim, run_json

TARGET = "platform/crd-store"
# The simulator's config lists team-a's replica: status reads it by name.
REPLICA_METRICS = "/clusters/team-a/pods/team-a-0/metrics/syncer"
# Beside the metrics, status reads only what the triage needs: the control-plane pods of the target and
# both StatefulSets (control plane cluster), the APIServices and their Services (client cluster).
APISERVICES = "/clusters/team-a/apis/apiregistration.k8s.io/v1/apiservices"
TRIAGE_READS = {
    "/clusters/control-plane/api/v1/namespaces/vcluster-crd-store/pods",
    "/clusters/control-plane/apis/apps/v1/namespaces/vcluster-crd-store/statefulsets/crd-store",
    "/clusters/control-plane/apis/apps/v1/namespaces/vcluster-team-a/statefulsets/team-a",
    APISERVICES,
    f"{APISERVICES}/v1.example.com",
    f"{APISERVICES}/v1alpha1.data.example.com",
    "/clusters/team-a/api/v1/namespaces/kube-system/services/proxy-example-com-v1",
    "/clusters/team-a/api/v1/namespaces/kube-system/services/proxy-data-example-com-v1alpha1",
}


def test_status_healthy_passes(healthy: Sim) -> None:
    before = len(healthy.server.requests)
    code, report = run_json(healthy, "status")
    assert code == 0
    assert report["check"] == "status"
    assert report["verdict"] == "ok"
    [target] = report["targets"]
    assert [g["group_version"] for g in target["group_versions"]] == [
        "example.com/v1",
        "data.example.com/v1alpha1",
    ]
    assert all(g["peers"]["healthy"] >= 1 for g in target["group_versions"])
    # Peers are counted: whole numbers in the JSON (`1`, not `1.0`).
    assert all(type(n) is int for g in target["group_versions"] for n in g["peers"].values())
    assert report["reads"][0]["replica"] == "team-a-0"
    assert target["replica"] == "team-a-0"
    read = healthy.server.requests[before:]
    assert {path for _, path, _ in read} == {REPLICA_METRICS, *TRIAGE_READS}
    assert {method for method, _, _ in read} == {"GET"}
    lists = {unquote(query) for _, path, query in read if path.endswith(("/pods", "/apiservices"))}
    assert lists == {"labelSelector=app=vcluster", "labelSelector=vcluster.loft.sh/protected=resource-proxy"}


def test_status_target_down_fails_with_no_healthy_peers(target_down: Sim) -> None:
    code, report = run_json(target_down, "status", TARGET)
    assert code == 1
    assert report["verdict"] == "critical"
    kinds = {f["kind"] for f in report["targets"][0]["findings"]}
    assert "no_healthy_peers" in kinds


def test_peers_ownership_masked_passes(ownership_masked: Sim) -> None:
    code, report = run_json(ownership_masked, "peers", TARGET)
    assert code == 0
    assert report["check"] == "peers"
    assert report["passed"] is True


def test_status_human_view(target_down: Sim) -> None:
    code, out, _ = target_down.run("peers", TARGET)
    assert code == 1
    assert "Peers of platform/crd-store" in out
    shown = " ".join(out.split())  # the terminal wraps long lines
    assert "v1alpha1 on replica team-a-0: healthy 0, quarantined 1, half_open 0 · cache synced" in shown
    assert "Verdict for platform/crd-store" in out  # the one judgement, then the peers: no findings
    assert "Likely cause" not in out
    assert "vCluster" not in out


def test_reasons_target_down_names_the_faults_since_start(target_down: Sim) -> None:
    code, report = run_json(target_down, "reasons", TARGET)
    assert code == 1
    assert report["verdict"] == "proxy_faults"
    assert report["scope"] == "since the proxy started"
    assert report["window_seconds"] is None
    faults = {(r["family"], r["reason"]) for r in report["reasons"] if r["fault"]}
    assert ("request", "all_quarantined") in faults
    assert ("dial failure", "all_quarantined") in faults
    assert any("prometheus.url is not configured" in n for n in report["notes"])


def test_reasons_healthy_passes(healthy: Sim) -> None:
    code, report = run_json(healthy, "reasons", TARGET, "--window", "30m")
    assert code == 0
    assert report["verdict"] == "no_proxy_faults"
    assert [r["reason"] for r in report["reasons"]] == ["upstream"]


def test_reasons_ownership_masked_is_isolation_not_a_fault(ownership_masked: Sim) -> None:
    code, report = run_json(ownership_masked, "reasons", TARGET)
    assert code == 0
    masked = [r for r in report["reasons"] if r["reason"] == "ownership_masked"]
    assert masked
    assert masked[0]["kind"] == "isolation"
    assert masked[0]["fault"] is False


def test_reasons_human_view_labels_the_scope(ownership_masked: Sim) -> None:
    code, out, _ = ownership_masked.run("reasons", TARGET)
    assert code == 0
    assert "Outcome reasons of platform/crd-store since the proxy started: no proxy faults" in out
    assert "isolation working as intended" in out
