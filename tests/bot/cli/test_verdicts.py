"""Every simulator scenario through `proxybot status --json`: the quick-triage verdict per target (and
replica), what it rests on, and the exit status. Each scenario is held at a moment of its timeline (speed 1,
so the world does not move while the check runs)."""

from __future__ import annotations

import pytest
import yaml

from sim.defaults import TARGET_LABEL
from sim.scenarios import SCENARIOS, STORM_HUNG, STORM_TARGETS, storm_target
from tests.bot.cli.conftest import Sim, run_json
from tests.fakes.sim_scenarios import started

# scenario -> (simulated second, verdict per reading: team-a-0 first, then team-a-1 where it runs)
VERDICTS: dict[str, tuple[float, tuple[str, ...]]] = {
    "healthy": (120.0, ("healthy",)),
    "relay-fallback": (90.0, ("healthy",)),  # slower, not broken: `path` gives the evidence
    "target-rolling-restart": (121.0, ("target_down",)),  # the pod is terminating
    "target-down": (240.0, ("target_down",)),
    "peer-watch-dropped": (240.0, ("no_peer_feed",)),
    "license-failure": (240.0, ("no_peer_feed",)),
    "flapping": (90.0, ("target_down",)),  # inside a hung phase
    "discovery-degraded": (120.0, ("check_reason",)),
    "ownership-masked": (120.0, ("healthy",)),  # 404s are isolation working
    "watches-silent": (120.0, ("healthy",)),
    "probe-failing": (120.0, ("healthy",)),  # the proxy is fine; the CronJob is not (verify says so)
    "ha-split": (240.0, ("healthy", "no_peer_feed")),  # one replica's feed dropped
    "slow-target": (300.0, ("slow_target",)),
    "apiservice-orphan": (120.0, ("healthy",)),  # the orphan is a finding, not a verdict
    "old-client": (120.0, ("unknown",)),  # no metrics before v0.37: too old, not down
    "dial-direct-off": (120.0, ("healthy",)),  # relayed by configuration: `path` says so
    "auth-failed": (120.0, ("healthy",)),  # 401s are not unavailability: `probe` classifies them
    "ownership-get-denied": (120.0, ("healthy",)),  # 403s and masked 404s: `probe` names the identity
    "name-collision": (120.0, ("healthy",)),
    "storm": (285.0, ("no_peer_feed",)),  # crd-store; its 30 shards: test_storm_shows_every_shards_verdict
    "fleet-grows": (120.0, ("healthy",)),  # crd-store; the late joiner is healthy too
    "config-change": (120.0, ("healthy",)),  # crd-store keeps example.com/v1; crd-store-next is down
    # crd-store's new ingress rule leaves team-a..c out (its pods are Ready, no dial gets through); team-d in.
    "shared-target-down": (240.0, ("proxy_path", "proxy_path", "proxy_path", "healthy")),
}
# The readings of crd-store where they are not team-a's replicas: one per client behind it.
READINGS = {"shared-target-down": ("team-a-0", "team-b-0", "team-c-0", "team-d-0")}


# The scenarios whose status passes: every other one has a broken verdict or a warning finding.
PASSING = {
    "healthy",
    "relay-fallback",
    "dial-direct-off",
    "auth-failed",
    "ownership-get-denied",
    "name-collision",
    "ownership-masked",
    "watches-silent",
    "probe-failing",
    "fleet-grows",
}


def test_the_table_covers_every_scenario() -> None:
    assert set(VERDICTS) == set(SCENARIOS)


@pytest.mark.parametrize("scenario", sorted(VERDICTS))
def test_status_gives_each_scenario_its_verdict(
    tmp_path_factory: pytest.TempPathFactory, scenario: str
) -> None:
    at, expected = VERDICTS[scenario]
    for server, config in started(tmp_path_factory, scenario, speed=1, at=at):
        code, report = run_json(Sim(server, config), "status")
        targets = [t for t in report["targets"] if t["target"] == TARGET_LABEL]
        assert [t["verdict"] for t in targets] == list(expected)
        replicas = READINGS.get(scenario, tuple(f"team-a-{i}" for i in range(len(expected))))
        assert [t["replica"] for t in targets] == list(replicas)
        for t in targets:
            assert t["why"]
            assert t["verdict_inputs"][0].startswith("target pods: ")
            assert t["verdict_inputs"][2] == "client logs: not read"
        assert code == (0 if report["passed"] else 1)
        # A verdict that finds something broken fails the check; healthy ones fail only by a finding.
        assert report["passed"] is (scenario in PASSING)


def test_storm_shows_every_shards_verdict(tmp_path_factory: pytest.TempPathFactory) -> None:
    for server, config in started(tmp_path_factory, "storm", speed=1, at=285.0):
        code, report = run_json(Sim(server, config), "status")
        verdicts = {t["target"]: t["verdict"] for t in report["targets"]}
        shards = [f"platform/{storm_target(i)}" for i in range(STORM_TARGETS)]
        assert sorted(verdicts) == sorted([TARGET_LABEL, *shards])
        assert [verdicts[s] for s in shards[:STORM_HUNG]] == ["target_down"] * STORM_HUNG
        assert {verdicts[s] for s in shards[STORM_HUNG:]} == {"no_peer_feed"}
        assert code == 1


def test_old_client_is_too_old_not_down(tmp_path_factory: pytest.TempPathFactory) -> None:
    for server, config in started(tmp_path_factory, "old-client", speed=1, at=120.0):
        code, report = run_json(Sim(server, config), "status")
        [target] = report["targets"]
        assert "too old, not down" in target["why"]
        assert (
            target["verdict_inputs"][1]
            == "proxy metrics: none, the client's vCluster is too old (before v0.37)"
        )
        kinds = {f["kind"] for f in report["triage_findings"]}
        assert {"client_too_old", "version_skew"} <= kinds
        versions = {v["name"]: v["version"] for v in report["clusters"][0]["versions"]}
        assert versions == {"team-a": "0.36.4", "platform/crd-store": "0.37.1"}
        assert code == 1


def test_orphan_apiservice_is_reported_with_its_removal(tmp_path_factory: pytest.TempPathFactory) -> None:
    for server, config in started(tmp_path_factory, "apiservice-orphan", speed=1, at=120.0):
        sim = Sim(server, config)
        code, report = run_json(sim, "status")
        assert code == 1
        [orphan] = report["clusters"][0]["apiservices"]["orphans"]
        assert orphan["name"] == "v1beta1.legacy.example.com"
        assert orphan["service"] == "kube-system/proxy-legacy-example-com-v1beta1"
        assert "kubectl delete apiservice v1beta1.legacy.example.com" in orphan["removal"]
        configured = report["clusters"][0]["apiservices"]["configured"]
        assert [(a["name"], a["available"], a["service_exists"]) for a in configured] == [
            ("v1.example.com", True, True),
            ("v1alpha1.data.example.com", True, True),
        ]
        code, out, _ = sim.run("status")
        lead = out.splitlines()[2]
        assert lead.startswith("✅ Verdict for platform/crd-store on replica team-a-0: healthy")
        assert "APIService v1beta1.legacy.example.com is left over" in out


def test_status_leads_with_the_verdict_and_its_inputs(tmp_path_factory: pytest.TempPathFactory) -> None:
    for server, config in started(tmp_path_factory, "target-down", speed=1, at=240.0):
        code, out, _ = Sim(server, config).run("status", "platform/crd-store")
        assert code == 1
        lines = out.splitlines()
        assert lines[2].startswith("🔴 Verdict for platform/crd-store on replica team-a-0: target_down: none")
        assert "rests on: target pods: 0 of 1 Ready; proxy metrics: gauges now" in out
        assert "vCluster versions: client team-a 0.37.1, target platform/crd-store 0.37.1" in out


def test_without_the_targets_control_plane_the_verdict_is_unknown_and_says_why(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    for server, config in started(tmp_path_factory, "target-down", speed=1, at=240.0):
        doc = yaml.safe_load(config.read_text())
        del doc["clusters"][0]["targets"][0]["control_plane"]
        config.write_text(yaml.safe_dump(doc))
        before = len(server.requests)
        code, report = run_json(Sim(server, config), "status")
        [target] = report["targets"]
        assert target["verdict"] == "unknown"
        assert target["why"] == (
            "the target's control-plane pods could not be read: no control_plane is configured for it; "
            "the client's side alone points to proxy_path if the target is up"
        )
        assert "control_plane" in target["verdict_next_step"]
        assert code == 1  # no healthy peer: the diagnosis fails it anyway
        read = {path for _, path, _ in server.requests[before:]}
        assert not [path for path in read if "vcluster-crd-store" in path]  # nothing guessed


def test_verify_fails_the_orphan_and_the_old_client(tmp_path_factory: pytest.TempPathFactory) -> None:
    outcomes = {}
    for scenario in ("healthy", "apiservice-orphan", "old-client"):
        for server, config in started(tmp_path_factory, scenario, speed=1, at=120.0):
            _, report = run_json(Sim(server, config), "verify")
            outcomes[scenario] = {line["key"]: line["outcome"] for line in report["lines"]}
    assert outcomes["healthy"]["apiservices"] == outcomes["healthy"]["versions"] == "pass"
    assert outcomes["apiservice-orphan"]["apiservices"] == "fail"
    assert outcomes["apiservice-orphan"]["versions"] == "pass"
    assert outcomes["old-client"]["versions"] == "fail"
    assert outcomes["old-client"]["syncer"] == "fail"


def test_the_digest_carries_each_targets_verdict_and_the_orphan(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    found = {}
    for scenario in ("target-down", "apiservice-orphan"):
        for server, config in started(tmp_path_factory, scenario, speed=1, at=240.0):
            _, found[scenario] = run_json(Sim(server, config), "digest")
    down, orphan = found["target-down"], found["apiservice-orphan"]
    assert [(t["target"], t["verdict"]) for t in down["targets"]] == [("platform/crd-store", "target_down")]
    assert down["targets"][0]["verdict_inputs"][0] == "target pods: 0 of 1 Ready"
    assert [t["verdict"] for t in orphan["targets"]] == ["healthy"]
    assert [f["kind"] for f in orphan["triage_findings"]] == ["apiservice_orphan"]
    assert orphan["passed"] is False
    assert {v["version"] for v in orphan["versions"]} == {"0.37.1"}


def test_license_failure_discovery_points_at_the_peer_feed_not_the_crd(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """manage/resource-proxy-operations.mdx, "Outcome reasons": a fallback begun by the peer check records
    its peer reason (ts_server_unavailable is a dial reason), so a licence failure is never read as the
    target answering discovery with 401, 404 or 5xx, nor sent to check the CRD."""
    for server, config in started(tmp_path_factory, "license-failure", speed=1, at=420.0):
        _, report = run_json(Sim(server, config), "status")
        found = [f for t in report["targets"] for f in t["findings"] if f["kind"] == "discovery_fallback"]
        assert found
        for f in found:
            assert f["cause"] == "The peer check failed, so the proxy path is down."
            assert "CRD" not in f["next_step"]


def test_a_shared_target_shows_every_client_behind_it_and_who_is_hit(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    for server, config in started(tmp_path_factory, "shared-target-down", speed=1, at=240.0):
        code, report = run_json(Sim(server, config), "status", TARGET_LABEL)
        assert [(t["cluster"], t["verdict"]) for t in report["targets"]] == [
            ("team-a", "proxy_path"),
            ("team-b", "proxy_path"),
            ("team-c", "proxy_path"),
            ("team-d", "healthy"),
        ]
        [blast] = report["blast"]
        assert blast["target"] == TARGET_LABEL
        assert [(c["client"], c["reach"]) for c in blast["clients"]] == [
            ("team-a", "lost"),
            ("team-b", "lost"),
            ("team-c", "lost"),
            ("team-d", "healthy"),
        ]
        assert code == 1
        _, shown, _ = Sim(server, config).run("status", TARGET_LABEL)
        assert "🎯 3 of 4 clients cannot reach platform/crd-store: team-a (" in shown
        assert "; team-d still healthy" in shown
        assert "platform/crd-store from team-b" in shown or "replica team-b-0" in shown
