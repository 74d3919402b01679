"""The shipped Alertmanager receiver and route: merged into a minimal full config, the real `amtool`
accepts it and routes the proxy's alerts to proxybot (and on to the other routes); the webhook reaches the
shipped Service with a bearer token file; the grouping is the one the simulator models."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from sim.alerting import GROUP_BY

ROOT = Path(__file__).resolve().parents[2]
RECEIVER = ROOT / "config" / "alertmanager" / "receiver.yaml"
SERVICE = ROOT / "config" / "deploy" / "base" / "service.yaml"

Json = dict[str, Any]


def snippet() -> Json:
    loaded: Json = yaml.safe_load(RECEIVER.read_text())
    return loaded


def proxybot_route() -> Json:
    (route,) = snippet()["route"]["routes"]
    return dict(route)


def webhook() -> Json:
    (receiver,) = snippet()["receivers"]
    (config,) = receiver["webhook_configs"]
    return dict(config)


def full_config(part: Json) -> Json:
    """A minimal operator config with the snippet merged as its README says: its route first, then a pager
    route for critical alerts, a catch-all default receiver."""
    pager = {"receiver": "pager", "matchers": ['severity="critical"']}
    return {
        "route": {"receiver": "default", "routes": [*part["route"]["routes"], pager]},
        "receivers": [{"name": "default"}, {"name": "pager"}, *part["receivers"]],
    }


def amtool(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the real amtool; it ships with Debian's prometheus-alertmanager, so absence is a failure."""
    binary = shutil.which("amtool")
    if binary is None:
        pytest.fail("amtool is not on PATH: install Debian's `prometheus-alertmanager` package")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(full_config(snippet())))
    return path


def test_amtool_accepts_the_merged_config(config_file: Path) -> None:
    result = amtool("check-config", str(config_file))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_amtool_rejects_a_broken_receiver(tmp_path: Path) -> None:
    broken = snippet()
    broken["receivers"][0]["webhook_configs"][0]["http_config"]["authorization"]["credentials"] = "inline"
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(full_config(broken)))
    result = amtool("check-config", str(path))
    assert result.returncode != 0
    assert "credentials_file" in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("labels", "receivers"),
    [
        (["alertname=ResourceProxyNoHealthyPeers", "severity=critical"], "proxybot,pager"),
        (["alertname=ResourceProxyTargetUnavailable", "severity=warning"], "proxybot"),
        (["alertname=KubePodCrashLooping", "severity=critical"], "pager"),
        (["alertname=SomethingElse"], "default"),
    ],
)
def test_routes_send_the_proxy_alerts_to_proxybot(
    config_file: Path, labels: list[str], receivers: str
) -> None:
    result = amtool("config", "routes", "test", f"--config.file={config_file}", *labels)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == receivers


def test_grouping_and_timers_are_the_simulated_ones() -> None:
    route = proxybot_route()
    assert route["group_by"] == list(GROUP_BY)
    assert (route["group_wait"], route["group_interval"], route["repeat_interval"]) == ("30s", "5m", "4h")
    assert route["matchers"] == ['alertname=~"ResourceProxy.*"']


def test_webhook_reaches_the_service_with_a_bearer_token_file() -> None:
    hook = webhook()
    url = urlsplit(hook["url"])
    service = yaml.safe_load(SERVICE.read_text())
    (port,) = service["spec"]["ports"]
    assert url.scheme == "http"
    assert url.hostname == f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
    assert url.port == port["port"]
    assert url.path == "/alertmanager"
    authorization = hook["http_config"]["authorization"]
    assert authorization.get("type", "Bearer") == "Bearer"
    assert Path(authorization["credentials_file"]).is_absolute()
    assert "credentials" not in authorization  # the token never sits in the config itself


def test_resolved_notifications_are_sent_and_groups_bounded() -> None:
    hook = webhook()
    assert hook["send_resolved"] is True
    assert 1 <= hook["max_alerts"] <= 100
