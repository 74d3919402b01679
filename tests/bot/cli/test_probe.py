"""`proxybot probe` against the recording simulator: verdicts, JSON, exit codes, hostile arguments."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.bot.cli.conftest import Sim, run_cli, run_json, scenario

TARGET = "platform/crd-store"
PROBE = "/clusters/team-a/apis/example.com/v1/namespaces/default/widgets"
DISCOVERY = "/clusters/team-a/apis/example.com/v1"
METRICS = "/clusters/team-a/metrics/syncer"


def _new_requests(sim: Sim, before: int) -> list[tuple[str, str, str]]:
    return sim.server.requests[before:]


def test_healthy_probe_passes_with_latency(healthy: Sim) -> None:
    before = len(healthy.server.requests)
    code, report = run_json(healthy, "probe", TARGET, "--repeat", "3")
    assert code == 0
    assert report["passed"] is True
    assert report["verdict"] == "ok"
    assert report["request"] == "GET /apis/example.com/v1/namespaces/default/widgets?limit=1"
    assert [a["status"] for a in report["attempts"]] == [200, 200, 200]
    latency = report["latency_seconds"]
    assert latency["count"] == 3
    assert 0 < latency["min"] <= latency["p50"] <= latency["max"]
    # Exactly the probe, three times, and nothing else.
    assert _new_requests(healthy, before) == [("GET", PROBE, "limit=1")] * 3


def test_target_down_probe_fails_with_peer_state_and_retry_after(target_down: Sim) -> None:
    before = len(target_down.server.requests)
    code, report = run_json(target_down, "probe", TARGET)
    assert code == 1
    assert report["verdict"] == "unavailable"
    assert report["attempts"][0]["status"] == 503
    assert report["attempts"][0]["retry_after"] == "1"
    evidence = "\n".join(report["evidence"])
    assert "live example.com/v1: peers: healthy 0" in evidence
    assert "Retry-After: 1" in evidence
    assert 'answer: target tenant cluster "crd-store" for example.com/v1 is unavailable' in evidence
    assert report["summary"] == (
        "503 from the proxy: the target crd-store (example.com/v1) is unavailable to team-a"
    )
    # The evidence came from the proxy's metrics: the probe, then /metrics/syncer, nothing else.
    assert {path for _, path, _ in _new_requests(target_down, before)} == {PROBE, METRICS}


def test_ownership_masked_list_probe_still_passes(ownership_masked: Sim) -> None:
    code, report = run_json(ownership_masked, "probe", TARGET)
    # Lists get the owner selector injected: masking never makes a list 404.
    assert code == 0
    assert report["verdict"] == "ok"


def test_human_output_shows_the_verdict_and_request(target_down: Sim) -> None:
    code, out, _ = target_down.run(
        "probe", TARGET, "--gv", "data.example.com/v1alpha1", "--resource", "datasets"
    )
    assert code == 1
    assert "Probe platform/crd-store: failed (unavailable)" in out
    assert "GET /apis/data.example.com/v1alpha1/namespaces/default/datasets?limit=1" in out


HOSTILE = [
    ["probe", "../"],
    ["probe", "platform/crd-store/../../api/v1/secrets"],
    ["probe", "%2e%2e/crd-store"],
    ["probe", "/api/v1/secrets"],
    ["probe", "platform/unknown"],
    ["probe", TARGET, "--gv", "../v1"],
    ["probe", TARGET, "--gv", "example.com/v1/../../../api/v1/secrets"],
    ["probe", TARGET, "--gv", "example.com%2fv1"],
    ["probe", TARGET, "--gv", "example.com/v1?watch=1"],
    ["probe", TARGET, "--gv", "example.com/v1#x"],
    ["probe", TARGET, "--gv", "v1"],
    ["probe", TARGET, "--gv", "other.example.com/v1"],
    ["probe", TARGET, "--gv", "example.com/v2"],
    ["probe", TARGET, "--resource", "../secrets"],
    ["probe", TARGET, "--resource", "%2e%2e"],
    ["probe", TARGET, "--resource", "widgets?watch=true"],
    ["probe", TARGET, "--resource", "widgets#frag"],
    ["probe", TARGET, "--resource", "/api/v1/secrets"],
    ["probe", TARGET, "--resource", "Widgets"],
    ["probe", TARGET, "--namespace", ".."],
    ["probe", TARGET, "--namespace", "%2e"],
    ["probe", TARGET, "--namespace", "default/../../api/v1/secrets"],
    ["probe", TARGET, "--namespace", "default?x=1"],
    ["probe", TARGET, "--namespace", "default#x"],
    ["probe", TARGET, "--repeat", "0"],
    ["probe", TARGET, "--repeat", "11"],
    ["status", "../"],
    ["status", "/api/v1/secrets"],
    ["peers", "platform/crd-store?x"],
    ["reasons", "%2e%2e"],
    ["reasons", TARGET, "--window", "15m?x"],
    ["reasons", TARGET, "--window", "0s"],
]


@pytest.mark.parametrize("argv", HOSTILE, ids=" ".join)
def test_hostile_arguments_are_refused_before_any_request(healthy: Sim, argv: list[str]) -> None:
    before = len(healthy.server.requests)
    code, report = run_json(healthy, *argv)
    assert code == 2
    assert report["passed"] is False
    assert report["verdict"] == "refused"
    assert report["errors"]
    assert _new_requests(healthy, before) == []


def test_hostile_arguments_are_named_in_plain_text(healthy: Sim) -> None:
    code, out, err = healthy.run("probe", TARGET, "--gv", "example.com/v2")
    assert code == 2
    assert out == ""
    assert "error: --gv: 'example.com/v2' is not proxied to platform/crd-store" in err


def test_rejected_credentials_are_named_as_the_bots_own(healthy: Sim, tmp_path: Path) -> None:
    config = yaml.safe_load(healthy.config.read_text())
    kube_path = healthy.config.parent / config["clusters"][0]["kubeconfig"]
    kube = yaml.safe_load(kube_path.read_text())
    for user in kube["users"]:
        user["user"]["token"] = "not-a-valid-token"
    (tmp_path / "team-a.yaml").write_text(yaml.safe_dump(kube))
    config["clusters"][0]["kubeconfig"] = str(tmp_path / "team-a.yaml")
    (tmp_path / "proxybot.yaml").write_text(yaml.safe_dump(config))
    before = len(healthy.server.requests)
    code, out, _ = run_cli("probe", TARGET, "--json", "--config", str(tmp_path / "proxybot.yaml"))
    report = json.loads(out)
    assert code == 1
    assert report["verdict"] == "unauthorized"
    assert "rejects the bot's own credentials" in report["summary"]
    assert [path for _, path, _ in healthy.server.requests[before:]] == [PROBE, DISCOVERY]


# -- the target's refusals, classified ----------------------------------------------------------------


@pytest.fixture(scope="module")
def auth_failed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from scenario(tmp_path_factory, "auth-failed")


@pytest.fixture(scope="module")
def get_denied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from scenario(tmp_path_factory, "ownership-get-denied")


def test_probe_on_auth_failed_is_platform_trust_with_the_restart(auth_failed: Sim) -> None:
    code, report = run_json(auth_failed, "probe", TARGET)
    assert code == 1
    assert report["verdict"] == "unauthorized"
    assert report["summary"].startswith("401 auth failed: platform/crd-store rejected team-a's platform")
    assert "answer: auth failed" in report["evidence"]
    assert "kubectl -n vcluster-team-a rollout restart statefulset/team-a" in report["next_step"]


def test_probe_on_ownership_get_denied_names_the_identity_and_the_can_i(get_denied: Sim) -> None:
    code, report = run_json(get_denied, "probe", TARGET)
    assert code == 1
    assert report["verdict"] == "forbidden"
    identity = "loft:vcluster:p-platform:team-a"
    assert report["summary"] == f"403: the target's RBAC refuses {identity} to list widgets (example.com/v1)"
    assert f'kubectl auth can-i list widgets.example.com -n default --as="{identity}"' in report["next_step"]
    code, out, _ = get_denied.run("probe", TARGET)
    assert "keep get beside update/patch/delete" in " ".join(out.split())
