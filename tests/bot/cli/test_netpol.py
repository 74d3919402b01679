"""`proxybot netpol`: pure, valid YAML on the terminal, JSON carrying both snippets, bad input refused."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.bot.cli.conftest import run_cli


def test_terminal_output_is_the_yaml_to_paste() -> None:
    code, out, err = run_cli(
        "netpol", "--client", "vcluster-team-a/team-a", "--target", "vcluster-crd-store/crd-store"
    )
    assert code == 0
    assert err == ""
    client_part = out.split("# --- client vcluster-team-a/team-a ---\n")[1].split("# --- target")[0]
    values = yaml.safe_load(client_part)
    rule = values["policies"]["networkPolicy"]["controlPlane"]["egress"][0]
    assert rule["to"][0]["podSelector"]["matchLabels"] == {"app": "vcluster", "release": "crd-store"}


def test_json_carries_both_snippets_and_the_mode() -> None:
    argv = ["netpol", "--client", "a/b", "--target", "c/d", "--cross-cluster", "10.1.0.0/16", "--json"]
    code, out, _ = run_cli(*argv)
    assert code == 0
    report = json.loads(out)
    assert report["passed"] is True
    assert report["verdict"] == "cross_cluster"
    target = yaml.safe_load(report["target_values"])["policies"]["networkPolicy"]["controlPlane"]
    assert target["ingress"][0]["from"] == [{"ipBlock": {"cidr": "10.1.0.0/16"}}]
    assert target["egress"][0]["ports"] == [{"protocol": "UDP", "port": 3478}]


@pytest.mark.parametrize(
    "argv",
    [
        ["--client", "../x", "--target", "c/d"],
        ["--client", "a/b/c", "--target", "c/d"],
        ["--client", "A/b", "--target", "c/d"],
        ["--client", "a", "--target", "c/d"],
        ["--client", "a/b", "--target", "c/%2e"],
        ["--client", "a/b", "--target", "c/d", "--cross-cluster", "10.0.0.1/8"],
        ["--client", "a/b", "--target", "c/d", "--cross-cluster", "not-a-cidr"],
        ["--client", "a/b", "--target", "c/d", "--cross-cluster", "10.0.0.0/8", "--stun-port", "70000"],
        ["--client", "a/b", "--target", "c/d", "--stun", "10.0.0.0/8"],
    ],
)
def test_bad_arguments_exit_2(argv: list[str]) -> None:
    code, out, _ = run_cli("netpol", *argv, "--json")
    assert code == 2
    assert json.loads(out)["verdict"] == "refused"
