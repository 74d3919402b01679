"""`path`'s dial latency signal: a step up is seen, no step without one, nothing without dials."""

from __future__ import annotations

import pytest

from bot.checks.netpol_read import judge_platform_egress
from bot.checks.path_signals import dial_direct_of, dial_reading
from bot.domain.path_result import ControlPlanePods
from bot.domain.snapshot import DIAL_DURATION, Bucket, Histogram, ProxySnapshot, make_labels

TARGET = "platform/crd-store"


def _snapshot(counts: tuple[float, ...]) -> ProxySnapshot:
    bounds = (0.01, 0.1, 0.25, float("inf"))
    histogram = Histogram(tuple(Bucket(le, c) for le, c in zip(bounds, counts, strict=True)), counts[-1], 0.0)
    return ProxySnapshot(histograms={DIAL_DURATION: {make_labels([("target", TARGET)]): histogram}})


def test_dial_step_is_seen_when_recent_dials_are_slower() -> None:
    before = _snapshot((100, 100, 100, 100))
    after = _snapshot((100, 100, 150, 150))  # 50 new dials, all between 100 and 250 ms
    reading = dial_reading(before, after, 3.0, TARGET)
    assert reading.step is True
    assert reading.recent_dials == 50
    assert reading.recent_p50 is not None
    assert reading.recent_p50 > 0.1


def test_no_step_when_recent_dials_look_like_before_and_none_without_dials() -> None:
    before = _snapshot((100, 100, 100, 100))
    assert dial_reading(before, _snapshot((150, 150, 150, 150)), 3.0, TARGET).step is False
    assert dial_reading(before, before, 3.0, TARGET).step is None
    assert (
        dial_reading("cluster team-a: forbidden", before, 3.0, TARGET).unavailable
        == "cluster team-a: forbidden"
    )


# -- TS_DEBUG_DIAL_DIRECT in the client's StatefulSet --------------------------------------------------


def _statefulset(*env: dict[str, object]) -> dict[str, object]:
    container = {"name": "syncer", "image": "ghcr.io/loft-sh/vcluster-pro:0.37.0", "env": list(env)}
    return {"spec": {"template": {"spec": {"containers": [container]}}}}


@pytest.mark.parametrize("value", ["false", "0", "f", "FALSE", "False"])
def test_dial_direct_false_in_any_spelling_turns_direct_dialing_off(value: str) -> None:
    doc = _statefulset({"name": "OTHER", "value": "x"}, {"name": "TS_DEBUG_DIAL_DIRECT", "value": value})
    reading = dial_direct_of(doc, "StatefulSet vcluster-team-a/team-a")
    assert reading.off is True
    assert reading.detail == (
        f"TS_DEBUG_DIAL_DIRECT={value} in StatefulSet vcluster-team-a/team-a (container syncer)"
    )


def test_dial_direct_unset_or_true_is_on_and_value_from_is_unknown() -> None:
    assert dial_direct_of(_statefulset(), "s").off is False
    assert dial_direct_of({}, "s").off is False
    assert dial_direct_of(_statefulset({"name": "TS_DEBUG_DIAL_DIRECT", "value": "true"}), "s").off is False
    from_secret = {"name": "TS_DEBUG_DIAL_DIRECT", "valueFrom": {"configMapKeyRef": {"name": "x"}}}
    reading = dial_direct_of(_statefulset(from_secret), "s")
    assert reading.off is None
    assert "valueFrom" in reading.detail


# -- egress to the platform pods on TCP 10443 ---------------------------------------------------------

CLIENT_PODS = ControlPlanePods("vcluster-team-a", "team-a")
PLATFORM = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "vcluster-platform"}}}


def _egress_policy(*rules: dict[str, object], pods: dict[str, str] | None = None) -> dict[str, object]:
    selector = {"matchLabels": pods if pods is not None else {"release": "team-a"}}
    spec = {"podSelector": selector, "policyTypes": ["Egress"], "egress": list(rules)}
    return {"metadata": {"name": "cp"}, "spec": spec}


@pytest.mark.parametrize(
    "rule",
    [
        {"to": [PLATFORM]},  # every port
        {"to": [PLATFORM], "ports": [{"protocol": "TCP", "port": 10443}]},
        {"to": [PLATFORM], "ports": [{"port": 10000, "endPort": 11000}]},  # TCP by default
        {"ports": [{"protocol": "TCP", "port": 10443}]},  # any address
        {"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"protocol": "TCP"}]},
    ],
)
def test_a_rule_admitting_tcp_10443_out_of_the_namespace_reaches_the_platform(
    rule: dict[str, object],
) -> None:
    assert judge_platform_egress([_egress_policy(rule)], CLIENT_PODS) is None


@pytest.mark.parametrize(
    "rule",
    [
        {"ports": [{"protocol": "TCP", "port": p} for p in (443, 8443, 6443)]},
        {"to": [PLATFORM], "ports": [{"protocol": "UDP"}]},
        {"to": [{"podSelector": {}}]},  # a bare podSelector stays in the tenant's own namespace
        {"to": [PLATFORM], "ports": [{"protocol": "TCP", "port": "platform"}]},  # named: unresolvable
    ],
)
def test_no_rule_admitting_tcp_10443_to_the_platform_is_named(rule: dict[str, object]) -> None:
    problem = judge_platform_egress([_egress_policy(rule)], CLIENT_PODS)
    assert problem == (
        "cp select the control plane pods of vcluster-team-a/team-a; no egress rule allows TCP 10443 "
        "to the platform pods"
    )


def test_no_policy_isolating_egress_of_the_pods_blocks_nothing() -> None:
    elsewhere = _egress_policy({"ports": [{"port": 443}]}, pods={"release": "team-b"})
    ingress_only = {"metadata": {"name": "in"}, "spec": {"podSelector": {}, "ingress": []}}
    assert judge_platform_egress([elsewhere, ingress_only], CLIENT_PODS) is None
