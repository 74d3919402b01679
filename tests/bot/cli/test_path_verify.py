"""`proxybot path` and `proxybot verify` in-process against the recording simulator: JSON, text, exits."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from bot.cli import path, verify
from bot.cli.console import Console
from bot.cli.main import build_parser
from tests.bot.cli.conftest import Sim, scenario

TARGET = "platform/crd-store"
PARSER = build_parser((*path.CONSOLE_COMMANDS, *verify.CONSOLE_COMMANDS))
PROBE = "/clusters/team-a/apis/example.com/v1/namespaces/default/widgets"
DIRECT = "/clusters/crd-store/apis/example.com/v1/namespaces/default/widgets"
METRICS = "/clusters/team-a/metrics/syncer"
CLIENT_POLICIES = (
    "/clusters/control-plane/apis/networking.k8s.io/v1/namespaces/vcluster-team-a/networkpolicies"
)
CLIENT_STATEFULSET = "/clusters/control-plane/apis/apps/v1/namespaces/vcluster-team-a/statefulsets/team-a"
TARGET_POLICIES = (
    "/clusters/control-plane/apis/networking.k8s.io/v1/namespaces/vcluster-crd-store/networkpolicies"
)


def run(sim: Sim, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    args = PARSER.parse_args([*argv, "--config", str(sim.config)])
    code: int = args.run(args, Console({}, out, err))
    return code, out.getvalue(), err.getvalue()


def run_json(sim: Sim, *argv: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run(sim, *argv, "--json")
    (line,) = out.strip().splitlines()  # exactly one JSON object on stdout
    report: dict[str, Any] = json.loads(line)
    return code, report


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from scenario(tmp_path_factory, "healthy", speed=2)


@pytest.fixture(scope="module")
def relay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from scenario(tmp_path_factory, "relay-fallback")


def test_path_json_on_healthy_is_likely_direct_and_only_reads(healthy: Sim) -> None:
    before = len(healthy.server.requests)
    code, report = run_json(healthy, "path", TARGET, "--samples", "3")
    assert code == 0
    assert (report["check"], report["passed"], report["verdict"]) == ("path", True, "likely direct")
    assert report["request"] == "/apis/example.com/v1/namespaces/default/widgets?limit=1"
    assert report["client"]["answered"] == 3
    assert report["direct"]["answered"] == 3
    assert report["netpol"]["client_egress"]["state"] == "allowed"
    assert report["netpol"]["target_ingress"]["state"] == "allowed"
    assert report["dial"]["step"] is False
    seen = healthy.server.requests[before:]
    assert {method for method, _, _ in seen} == {"GET"}
    reads = {PROBE, DIRECT, METRICS, CLIENT_POLICIES, TARGET_POLICIES, CLIENT_STATEFULSET}
    assert {p for _, p, _ in seen} == reads
    assert sum(1 for _, p, _ in seen if p == PROBE) == 3


def test_a_healthy_direct_path_shows_no_negative_floor(healthy: Sim) -> None:
    # Direct requests to the simulated target used to wait out a delayed ACK (Nagle on the simulator's
    # sockets), about 40 ms each, so the proxied path looked faster than the target's own API.
    code, report = run_json(healthy, "path", TARGET, "--samples", "10")
    assert code == 0
    assert report["direct"]["answered"] == 10
    assert report["floor_seconds"] >= -0.005
    assert report["direct"]["min"] < 0.020
    code, out, _ = run(healthy, "path", TARGET, "--samples", "10")
    printed = re.search(r"latency floor (-?[0-9.]+) ms", out)
    assert code == 0
    assert printed is not None, out
    assert float(printed.group(1)) >= -5.0


@pytest.fixture(scope="module")
def dial_direct_off(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from scenario(tmp_path_factory, "dial-direct-off")


def test_path_names_ts_debug_dial_direct_false_in_the_client_statefulset(dial_direct_off: Sim) -> None:
    code, report = run_json(dial_direct_off, "path", TARGET, "--samples", "3")
    assert code == 1
    assert report["verdict"] == "likely relayed"
    assert report["netpol"]["permits"] is True  # the policies allow it: the variable alone relays
    assert report["dial_direct"] == {
        "off": True,
        "detail": "TS_DEBUG_DIAL_DIRECT=false in StatefulSet vcluster-team-a/team-a (container syncer)",
    }
    assert report["fix"][0].startswith("remove TS_DEBUG_DIAL_DIRECT from controlPlane.statefulSet.env")
    assert not any("NAT topology" in fix for fix in report["fix"])
    assert ("GET", CLIENT_STATEFULSET, "") in dial_direct_off.server.requests
    code, out, _ = run(dial_direct_off, "path", TARGET, "--samples", "2")
    assert "direct dialing is off, every byte goes through the relay" in " ".join(out.split())


def test_path_on_healthy_reads_direct_dialing_on_and_the_platform_egress_open(healthy: Sim) -> None:
    code, report = run_json(healthy, "path", TARGET, "--samples", "2")
    assert code == 0
    assert report["dial_direct"]["off"] is False
    assert report["netpol"]["same_control_plane_cluster"] is True
    assert report["netpol"]["platform_egress"] == []


def test_path_on_relay_fallback_is_likely_relayed_with_the_netpol_command(relay: Sim) -> None:
    code, report = run_json(relay, "path", TARGET, "--samples", "3")
    assert code == 1
    assert report["verdict"] == "likely relayed"
    assert report["netpol"]["target_ingress"]["state"] == "missing"
    assert report["netpol"]["target_ingress"]["permits"] is False
    assert any("proxybot netpol --client vcluster-team-a/team-a" in fix for fix in report["fix"])


def test_path_text_view(relay: Sim) -> None:
    code, out, _ = run(relay, "path", TARGET, "--samples", "2")
    assert code == 1
    assert "Path platform/crd-store: likely relayed" in out
    assert "ingress of vcluster-crd-store/crd-store: missing" in out
    assert "evidence, not certainty" in out


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (("path", "platform/nope"), "TARGET: 'platform/nope' is not a configured target"),
        (("path", TARGET, "--samples", "51"), "--samples: 51 is not between 1 and 50"),
        (("path", TARGET, "--samples", "0"), "--samples: 0 is not between 1 and 50"),
        (("verify", "--cluster", "team-z"), "--cluster: 'team-z' is not a configured cluster"),
    ],
)
def test_bad_usage_exits_2_before_any_request(healthy: Sim, argv: tuple[str, ...], problem: str) -> None:
    before = len(healthy.server.requests)
    code, report = run_json(healthy, *argv)
    assert code == 2
    assert report["verdict"] == "refused"
    assert problem in report["errors"][0]
    assert healthy.server.requests[before:] == []


def test_verify_json_without_prometheus_is_not_a_pass(healthy: Sim) -> None:
    code, report = run_json(healthy, "verify")
    assert code == 1
    assert (report["check"], report["passed"], report["verdict"]) == ("verify", False, "not checked")
    outcomes = {line["key"]: line["outcome"] for line in report["lines"]}
    assert outcomes == {
        "rules": "not checked",
        "scrape": "not checked",
        "probe-cronjob": "pass",
        "probe-series": "not checked",
        "syncer": "pass",
        "apiservices": "pass",
        "versions": "pass",
    }


def test_verify_text_view(healthy: Sim) -> None:
    code, out, _ = run(healthy, "verify", "--cluster", "team-a")
    assert code == 1
    assert "Verify: not fully verified" in out
    assert "skipped: no prometheus.url" in out
    assert "a skipped line is not a pass" in out
