"""`proxybot logs TARGET [--since D] [--json]` against the simulator: the reference's lines of each scenario,
per pod, with meaning and action; exit codes; only the control plane's pod list and pod logs are read;
planted credentials never reach the terminal or the JSON."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.bot.cli.conftest import Sim, run_json, scenario

TARGET = "platform/crd-store"
CONTROL_PLANE = "/clusters/control-plane/api/v1/namespaces/vcluster-team-a/pods"


@pytest.fixture(scope="module")
def watch_dropped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from scenario(tmp_path_factory, "peer-watch-dropped")


@pytest.fixture(scope="module")
def license_failure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from scenario(tmp_path_factory, "license-failure")


@pytest.fixture(scope="module")
def ha_split(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from scenario(tmp_path_factory, "ha-split")


def keys(report: dict[str, object]) -> list[tuple[str, str]]:
    matches = report["matches"]
    assert isinstance(matches, list)
    return [(m["pod"], m["key"]) for m in matches]


def test_target_down_shows_the_quarantine_lines_and_fails(target_down: Sim) -> None:
    before = len(target_down.server.requests)
    code, report = run_json(target_down, "logs", TARGET)
    assert code == 1
    assert (report["check"], report["verdict"], report["passed"]) == ("logs", "critical", False)
    assert (report["namespace"], report["scope"]) == ("vcluster-team-a", "last 100 lines")
    assert keys(report)[:2] == [("team-a-0", "all_quarantined"), ("team-a-0", "quarantining_peer")]
    quarantine = report["matches"][1]
    assert quarantine["count"] >= 2
    assert quarantine["details"][0].startswith("host=crd-store-")
    assert "consecutiveFailures=" in quarantine["details"][1]
    assert "20 s" in quarantine["meaning"]
    # Least privilege: the pod list and each pod's log in the client's namespace, GET only.
    seen = target_down.server.requests[before:]
    assert {(method, path) for method, path, _ in seen} == {
        ("GET", CONTROL_PLANE),
        ("GET", f"{CONTROL_PLANE}/team-a-0/log"),
    }


def test_target_down_human_view_says_meaning_action_and_the_placeholder(target_down: Sim) -> None:
    code, out, _ = target_down.run("logs", TARGET)
    assert code == 1
    assert "Logs of platform/crd-store: 2 messages of the log reference call for action" in out
    assert "all peer hosts for the proxy target are quarantined" in out
    assert "Action: Incident-grade: triage with the quick-triage verdict table" in out
    assert "Read: team-a-0" in out
    assert "placeholder" in out


def test_healthy_passes_with_only_the_startup_pair(healthy: Sim) -> None:
    code, report = run_json(healthy, "logs", TARGET)
    assert code == 0
    assert report["verdict"] == "ok"
    assert keys(report) == [("team-a-0", "proxy_started")]
    assert report["matches"][0]["count"] == 4  # a pair per group/version
    _, out, _ = healthy.run("logs", TARGET)
    assert "nothing the log reference calls for action" in out


def test_peer_watch_dropped_shows_watch_down_with_the_netmap_age(watch_dropped: Sim) -> None:
    code, report = run_json(watch_dropped, "logs", TARGET)
    assert code == 1
    [down] = [m for m in report["matches"] if m["key"] == "peer_watch_down"]
    assert down["count"] == 2  # one per group/version
    assert down["details"] == ["lastNetmapAge=2m1s"]
    assert "client-to-platform" in down["action"]


def test_license_failure_shows_the_startup_sync_timeout_and_the_failed_probe(license_failure: Sim) -> None:
    code, report = run_json(license_failure, "logs", TARGET)
    assert code == 1
    found = {key for _, key in keys(report)}
    assert {"startup_sync_timeout", "initial_probe_failed", "proxy_started"} <= found
    [probe] = [m for m in report["matches"] if m["key"] == "initial_probe_failed"]
    assert probe["placeholder_host"] is True
    assert "license" in report["matches"][0]["action"]


def test_ha_reads_every_replica_and_names_the_one_that_logged(ha_split: Sim) -> None:
    code, report = run_json(ha_split, "logs", TARGET)
    assert code == 1
    assert [p["pod"] for p in report["pods"]] == ["team-a-0", "team-a-1"]
    assert [pod for pod, key in keys(report) if key == "peer_watch_down"] == ["team-a-1"]


def test_since_reads_a_window(target_down: Sim) -> None:
    code, report = run_json(target_down, "logs", TARGET, "--since", "10m")
    assert code == 1
    assert report["scope"] == "last 10m"
    assert any(key == "all_quarantined" for _, key in keys(report))


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("logs", TARGET, "--since", "1y"), "--since: '1y' is not a duration"),
        (("logs", TARGET, "--since", "1s"), "--since: '1s' is outside 10s..7d"),
        (("logs", "platform/nope"), "TARGET: 'platform/nope' is not a configured target"),
        (("logs", "../../api/v1/secrets"), "is not a configured target"),
    ],
)
def test_bad_usage_exits_2_before_any_request(healthy: Sim, argv: tuple[str, ...], said: str) -> None:
    before = len(healthy.server.requests)
    code, out, err = healthy.run(*argv)
    assert code == 2
    assert said in err
    assert out == ""
    code, report = run_json(healthy, *argv)
    assert (code, report["verdict"]) == (2, "refused")
    assert healthy.server.requests[before:] == []


def test_without_a_control_plane_the_check_says_so(healthy: Sim, tmp_path: Path) -> None:
    doc = yaml.safe_load(healthy.config.read_text())
    del doc["clusters"][0]["control_plane"]
    config = tmp_path / "proxybot.yaml"
    config.write_text(yaml.safe_dump(doc))
    kubeconfigs = healthy.config.parent / "proxybot.kubeconfigs"
    (tmp_path / "proxybot.kubeconfigs").symlink_to(kubeconfigs)
    code, out, _ = Sim(healthy.server, config).run("logs", TARGET)
    assert code == 1
    assert "Logs of platform/crd-store: not read" in out
    assert "clusters[team-a].control_plane is not configured" in out


SECRETS = ("tok3n-abcdefghijkl-0123", "s3cr3t-pw", "eyJzdWIiOiJzeXN0ZW06c2EifQ")


def test_planted_credentials_are_redacted_in_the_terminal_and_the_json(ha_split: Sim) -> None:
    with ha_split.server.lock:
        log = ha_split.server.world.proxies[("team-a", "team-a-0")].journal.log
        log.error(
            "proxy/proxy.go",
            "initial probe of proxy target failed, requests will keep retrying",
            {
                "target": "platform/crd-store",
                "error": f"401 from https://ops:{SECRETS[1]}@platform.example.com with Authorization: "
                f"Bearer {SECRETS[0]}",
                "token": f"eyJhbGciOiJSUzI1NiJ9.{SECRETS[2]}.c2lnbmF0dXJl",
            },
        )
    code, out, err = ha_split.run("logs", TARGET)
    _, report = run_json(ha_split, "logs", TARGET)
    assert code == 1
    [probe] = [m for m in report["matches"] if m["key"] == "initial_probe_failed"]
    shown = out + err + str(report)
    assert "[REDACTED]" in probe["last_line"]
    assert "initial probe of proxy target failed" in out
    for secret in SECRETS:
        assert secret not in shown
