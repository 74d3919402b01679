"""netpol: both ends' values parse as YAML in the guide's shape, with the reasons as comments."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from bot.checks.netpol import netpol, parse_cidr, parse_endpoint, parse_port
from bot.domain.netpol_result import CrossCluster, Endpoint
from bot.errors import InputError
from bot.render.checks_netpol import netpol_message

CLIENT = Endpoint("vcluster-team-a", "team-a")
TARGET = Endpoint("vcluster-crd-store", "crd-store")


def _control_plane(text: str) -> dict[str, Any]:
    values = yaml.safe_load(text)
    assert values["policies"]["networkPolicy"]["enabled"] is True
    control_plane: dict[str, Any] = values["policies"]["networkPolicy"]["controlPlane"]
    return control_plane


def _selectors(namespace: str, release: str) -> list[dict[str, Any]]:
    return [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "podSelector": {"matchLabels": {"app": "vcluster", "release": release}},
        }
    ]


def test_same_cluster_egress_on_the_client_ingress_on_the_target() -> None:
    result = netpol(CLIENT, TARGET)
    client = _control_plane(result.client_values)
    target = _control_plane(result.target_values)
    assert client == {
        "egress": [{"to": _selectors("vcluster-crd-store", "crd-store"), "ports": [{"protocol": "UDP"}]}]
    }
    assert target == {
        "ingress": [{"from": _selectors("vcluster-team-a", "team-a"), "ports": [{"protocol": "UDP"}]}]
    }
    assert result.passed
    assert result.mode == "same_cluster"


def test_every_part_says_why_in_a_comment() -> None:
    result = netpol(CLIENT, TARGET)
    for text in (result.client_values, result.target_values):
        comments = [line.strip() for line in text.splitlines() if line.strip().startswith("#")]
        assert any("DERP relay" in c or "directly" in c for c in comments)
        assert any("app: vcluster" in c for c in comments)
        assert any("OS-assigned port" in c for c in comments)


def test_names_that_yaml_would_misread_stay_strings() -> None:
    result = netpol(Endpoint("yes", "123"), Endpoint("null", "on"))
    client = _control_plane(result.client_values)
    assert client["egress"][0]["to"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "null"
    }
    assert client["egress"][0]["to"][0]["podSelector"]["matchLabels"]["release"] == "on"
    target = _control_plane(result.target_values)
    assert target["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["release"] == "123"


def test_cross_cluster_uses_ip_blocks_and_a_separate_stun_rule() -> None:
    cross = CrossCluster(("10.0.0.0/16", "2001:db8::/32"), ("192.0.2.10/32",), (3478, 3479), stun_given=True)
    result = netpol(CLIENT, TARGET, cross)
    client = _control_plane(result.client_values)
    peers, stun = client["egress"]
    assert peers == {
        "to": [{"ipBlock": {"cidr": "10.0.0.0/16"}}, {"ipBlock": {"cidr": "2001:db8::/32"}}],
        "ports": [{"protocol": "UDP"}],
    }
    assert stun == {
        "to": [{"ipBlock": {"cidr": "192.0.2.10/32"}}],
        "ports": [{"protocol": "UDP", "port": 3478}, {"protocol": "UDP", "port": 3479}],
    }
    target = _control_plane(result.target_values)
    assert target["ingress"][0]["from"] == peers["to"]
    assert target["ingress"][0]["ports"] == [{"protocol": "UDP"}]
    assert target["egress"] == [stun]
    assert not any("narrow it to your STUN" in n for n in result.notes)


def test_default_stun_rule_says_to_narrow_it() -> None:
    result = netpol(CLIENT, TARGET, CrossCluster(("10.0.0.0/16",)))
    assert any("narrow it to your STUN endpoints" in n for n in result.notes)


def test_parsing_refuses_bad_names_and_cidrs() -> None:
    assert parse_endpoint("--client", "vcluster-a/a") == Endpoint("vcluster-a", "a")
    assert parse_cidr("--cross-cluster", "10.1.0.0/16") == "10.1.0.0/16"
    assert parse_port("3478") == 3478
    for text in ("a", "a/b/c", "../b", "A/b", "a/%2e", "a/-b", "a/" + "b" * 64, "a/b?c"):
        with pytest.raises(InputError, match=r"^--client: "):
            parse_endpoint("--client", text)
    for text in ("10.0.0.1/8", "10.0.0.0/33", "x", "", "10.0.0.0/8\n- to: []"):
        with pytest.raises(InputError, match=r"^--cross-cluster: "):
            parse_cidr("--cross-cluster", text)
    for text in ("0", "65536", "-1", "x"):
        with pytest.raises(InputError, match=r"^--stun-port: "):
            parse_port(text)


def test_slack_message_carries_both_snippets() -> None:
    message = netpol_message(netpol(CLIENT, TARGET))
    texts = [b["text"]["text"] for b in message.blocks if b.get("type") == "section" and "text" in b]
    client = next(t for t in texts if t.startswith("*Client vcluster-team-a/team-a"))
    target = next(t for t in texts if t.startswith("*Target vcluster-crd-store/crd-store"))
    assert 'release: "crd-store"' in client
    assert "```" in client
    assert 'kubernetes.io/metadata.name: "vcluster-team-a"' in target
