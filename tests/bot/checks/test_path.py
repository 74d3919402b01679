"""The path check: NetworkPolicy semantics on crafted policies, the simulator's verdicts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.checks.netpol_read import judge_end, network_policies_path, selector_matches
from bot.checks.path import MAX_SAMPLES, check_path, check_samples
from bot.domain.path_result import ControlPlanePods, Direction, PathResult, PathVerdict, RuleState
from bot.errors import InputError
from bot.reads.context import CheckContext, resolve_target
from config.loader import load_config
from sim.server import SimServer

TARGET = "platform/crd-store"
CLIENT = ControlPlanePods("vcluster-team-a", "team-a")
TARGET_PODS = ControlPlanePods("vcluster-crd-store", "crd-store")


def _peer(pods: ControlPlanePods) -> dict[str, Any]:
    return {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": pods.namespace}},
        "podSelector": {"matchLabels": {"app": "vcluster", "release": pods.release}},
    }


def _policy(
    name: str, pods: ControlPlanePods, egress: list[Any] | None = None, ingress: list[Any] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"podSelector": {"matchLabels": {"app": "vcluster", "release": pods.release}}}
    types: list[str] = []
    if ingress is not None:
        spec["ingress"], types = ingress, [*types, "Ingress"]
    if egress is not None:
        spec["egress"], types = egress, [*types, "Egress"]
    spec["policyTypes"] = types
    return {"metadata": {"name": name}, "spec": spec}


GENERATED_EGRESS = [{"ports": [{"protocol": "TCP", "port": p} for p in (443, 8443, 6443)]}]
UDP_TO_TARGET = {"to": [_peer(TARGET_PODS)], "ports": [{"protocol": "UDP"}]}


def _egress(policies: list[dict[str, Any]], same_cluster: bool = True) -> RuleState:
    return judge_end(policies, Direction.EGRESS, CLIENT, TARGET_PODS, same_cluster=same_cluster).state


def test_generated_policy_alone_blocks_the_udp_egress() -> None:
    assert _egress([_policy("generated", CLIENT, egress=GENERATED_EGRESS)]) is RuleState.MISSING


def test_policies_are_additive_a_second_policy_allows_it() -> None:
    policies = [
        _policy("generated", CLIENT, egress=GENERATED_EGRESS),
        _policy("udp", CLIENT, egress=[UDP_TO_TARGET]),
    ]
    verdict = judge_end(policies, Direction.EGRESS, CLIENT, TARGET_PODS, same_cluster=True)
    assert verdict.state is RuleState.ALLOWED
    assert verdict.allowing is not None
    assert verdict.allowing.startswith("udp: egress rule 1")


def test_no_policy_selecting_the_pods_allows_everything() -> None:
    other = _policy("someone-else", ControlPlanePods("vcluster-team-a", "other"), egress=GENERATED_EGRESS)
    verdict = judge_end([other], Direction.EGRESS, CLIENT, TARGET_PODS, same_cluster=True)
    assert verdict.state is RuleState.UNRESTRICTED
    assert verdict.permits is True


def test_an_ingress_only_policy_does_not_isolate_egress() -> None:
    assert _egress([_policy("in", CLIENT, ingress=[])]) is RuleState.UNRESTRICTED


def test_a_pinned_udp_port_does_not_count_and_says_why() -> None:
    pinned = {"to": [_peer(TARGET_PODS)], "ports": [{"protocol": "UDP", "port": 41641}]}
    verdict = judge_end(
        [_policy("p", CLIENT, egress=[pinned])], Direction.EGRESS, CLIENT, TARGET_PODS, same_cluster=True
    )
    assert verdict.state is RuleState.MISSING
    assert "pinned to port 41641" in verdict.detail


def test_a_rule_for_another_release_does_not_count() -> None:
    wrong = {"to": [_peer(ControlPlanePods("vcluster-crd-store", "other"))], "ports": [{"protocol": "UDP"}]}
    assert _egress([_policy("p", CLIENT, egress=[wrong])]) is RuleState.MISSING


def test_ip_block_counts_and_selectors_do_not_cross_clusters() -> None:
    ip_block = {"to": [{"ipBlock": {"cidr": "10.8.0.0/16"}}], "ports": [{"protocol": "UDP"}]}
    assert _egress([_policy("p", CLIENT, egress=[ip_block])], same_cluster=False) is RuleState.ALLOWED
    assert _egress([_policy("p", CLIENT, egress=[UDP_TO_TARGET])], same_cluster=False) is RuleState.MISSING


def test_target_ingress_from_the_client() -> None:
    rule = {"from": [_peer(CLIENT)], "ports": [{"protocol": "UDP"}]}
    allowed = judge_end(
        [_policy("t", TARGET_PODS, ingress=[rule])], Direction.INGRESS, TARGET_PODS, CLIENT, same_cluster=True
    )
    blocked = judge_end(
        [_policy("t", TARGET_PODS, ingress=[])], Direction.INGRESS, TARGET_PODS, CLIENT, same_cluster=True
    )
    assert (allowed.state, blocked.state) == (RuleState.ALLOWED, RuleState.MISSING)


def test_match_expressions() -> None:
    selector = {
        "matchExpressions": [
            {"key": "app", "operator": "In", "values": ["vcluster"]},
            {"key": "x", "operator": "DoesNotExist"},
        ]
    }
    assert selector_matches(selector, {"app": "vcluster"})
    assert not selector_matches(selector, {"app": "vcluster", "x": "1"})
    assert not selector_matches(
        {"matchExpressions": [{"key": "app", "operator": "Bogus"}]}, {"app": "vcluster"}
    )


@pytest.mark.parametrize("namespace", ["../secrets", "a/b", "x?y", "%2e%2e", ""])
def test_network_policies_path_refuses_non_names(namespace: str) -> None:
    with pytest.raises(InputError):
        network_policies_path(namespace)


def test_samples_are_bounded_for_the_cli_and_slack_alike() -> None:
    assert check_samples(1) == 1
    assert check_samples(MAX_SAMPLES) == MAX_SAMPLES
    for bad in (0, MAX_SAMPLES + 1):
        with pytest.raises(InputError, match=f"^--samples: {bad} is not between 1 and {MAX_SAMPLES}$"):
            check_samples(bad)


# -- against the simulator ---------------------------------------------------------------------------------


def _run(scenario: str, at: float, tmp: Path) -> Iterator[PathResult]:
    # Slow enough that the relay's floor is tens of wall milliseconds; the world jumps straight to `at`.
    with SimServer(scenario=scenario, speed=2) as srv:
        with srv.lock:
            srv.world.advance_to(at)
        settings = load_config(srv.write_config(tmp / "proxybot.yaml"), env={}, purpose="demo").settings

        async def main() -> PathResult:
            ctx = CheckContext(settings)
            try:
                return await check_path(ctx, resolve_target(settings, TARGET), samples=5, dial_window=0.5)
            finally:
                await ctx.aclose()

        yield asyncio.run(main())


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PathResult]:
    yield from _run("healthy", 120.0, tmp_path_factory.mktemp("healthy"))


@pytest.fixture(scope="module")
def relayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PathResult]:
    # relay-fallback redeploys the target without its UDP ingress rule at t=60.
    yield from _run("relay-fallback", 90.0, tmp_path_factory.mktemp("relay"))


def test_healthy_is_likely_direct(healthy: PathResult) -> None:
    assert healthy.verdict is PathVerdict.LIKELY_DIRECT
    assert healthy.passed
    assert healthy.netpol.egress.state is RuleState.ALLOWED
    assert healthy.netpol.ingress.state is RuleState.ALLOWED
    assert healthy.netpol.same_cluster
    assert len(healthy.client.seconds) == 5
    assert healthy.direct is not None
    assert len(healthy.direct.seconds) == 5
    assert healthy.dial.step is False
    assert healthy.fix == ()


def test_relay_fallback_is_likely_relayed_with_the_fix(relayed: PathResult) -> None:
    assert relayed.verdict is PathVerdict.LIKELY_RELAYED
    assert not relayed.passed
    assert relayed.netpol.egress.state is RuleState.ALLOWED
    assert relayed.netpol.ingress.state is RuleState.MISSING
    assert "vc-crd-store-control-plane" in relayed.netpol.ingress.selecting
    # The dials made during the check went over the relay; most dials before it were direct.
    assert relayed.dial.step is True
    assert any(
        "proxybot netpol --client vcluster-team-a/team-a --target vcluster-crd-store/crd-store" in f
        for f in relayed.fix
    )


def test_nothing_answering_through_the_client_is_unknown_whatever_the_policies(healthy: PathResult) -> None:
    from bot.checks.path import weigh
    from bot.domain.path_result import DialReading, LatencySeries
    from bot.reads.context import TargetRef

    ref = TargetRef(*_target_settings())
    silent = LatencySeries("client", (), ("503 all_quarantined",) * 5)
    result = weigh(ref, healthy.request, silent, healthy.direct, DialReading(), healthy.netpol)
    assert healthy.netpol.permits is True
    assert result.verdict is PathVerdict.UNKNOWN
    assert not result.passed


def _target_settings() -> tuple[Any, Any]:
    from config.settings import Settings

    settings = Settings.model_validate(
        {
            "slack": {"default_channel": "#alerts"},
            "clusters": [
                {
                    "name": "team-a",
                    "kubeconfig": "/k.yaml",
                    "match": {"cluster": "team-a"},
                    "targets": [
                        {
                            "name": TARGET,
                            "group_versions": ["example.com/v1"],
                            "probe": {"group_version": "example.com/v1", "resource": "widgets"},
                        }
                    ],
                }
            ],
        }
    )
    return settings.clusters[0], settings.clusters[0].targets[0]


def test_neither_path_answering_cannot_judge_the_path_and_points_at_the_target(healthy: PathResult) -> None:
    # The tour's target-down: 0 answered through the proxy, 0 directly (503), a dial step (the dials to a
    # dead target time out): the relay is not the story, the target is. Nothing blames NAT or the relay.
    from bot.checks.path import weigh
    from bot.domain.path_result import DialReading, LatencySeries
    from bot.reads.context import TargetRef

    ref = TargetRef(*_target_settings())
    silent = LatencySeries("client", (), ("HTTP 503",) * 5)
    dead = LatencySeries("direct", (), ("HTTP 503",) * 5)
    stepped = DialReading(recent_p99=4.9, earlier_p99=0.01, recent_dials=3, window_seconds=3, step=True)
    result = weigh(ref, healthy.request, silent, dead, stepped, healthy.netpol)
    assert result.verdict is PathVerdict.CANNOT_JUDGE
    assert not result.passed
    said = " ".join((*result.evidence, *result.fix))
    assert "NAT" not in said
    assert "fallback to the relay" not in said
    assert any("the target is down" in line for line in result.fix)
    assert any(f"/proxy status {TARGET}" in line for line in result.fix)


def test_a_dial_step_up_to_the_timeout_is_dials_failing_not_the_relay(healthy: PathResult) -> None:
    """loft-sh/vcluster-docs troubleshoot/resource-proxy.mdx, "Requests time out after about 60 seconds":
    failures near 5 s are dial failures; the operations page, "Confirm which path you are on": the relay
    adds a hop, a step in dial latency, and keeps traffic flowing."""
    from bot.checks.path import weigh
    from bot.domain.path_result import DialReading
    from bot.reads.context import TargetRef

    ref = TargetRef(*_target_settings())
    stepped = DialReading(recent_p99=4.9, earlier_p99=0.01, recent_dials=3, window_seconds=3, step=True)
    result = weigh(ref, healthy.request, healthy.client, healthy.direct, stepped, healthy.netpol)
    said = " ".join(result.evidence)
    assert "fallback to the relay" not in said
    assert "near the 5 s dial timeout: dials failing" in said


def test_the_advice_to_remove_dial_direct_false_names_the_tsnet_page_that_sets_it(
    healthy: PathResult,
) -> None:
    """loft-sh/vcluster-docs platform/troubleshoot/tsnet-connectivity.mdx, "Solution": the platform sets
    TS_DEBUG_DIAL_DIRECT=false where restricted egress breaks TSNet; the operations guide, "Prefer direct
    connections over the DERP relay", wants the direct path. The fix says both, in one clause."""
    from bot.checks.path import weigh
    from bot.domain.path_result import DialDirectReading, DialReading
    from bot.reads.context import TargetRef

    ref = TargetRef(*_target_settings())
    off = DialDirectReading(True, "TS_DEBUG_DIAL_DIRECT=false in StatefulSet vcluster-team-a/team-a")
    result = weigh(
        ref, healthy.request, healthy.client, healthy.direct, DialReading(), healthy.netpol, dial_direct=off
    )
    [fix] = [line for line in result.fix if "TS_DEBUG_DIAL_DIRECT" in line]
    assert fix.startswith("remove TS_DEBUG_DIAL_DIRECT")
    assert "TSNet troubleshooting page sets it to false where restricted egress" in fix


def test_no_new_dials_beside_a_lifetime_p99_near_the_timeout_is_read_not_just_shown(
    healthy: PathResult,
) -> None:
    """The tour's target-down path check showed "no dials to compare (p99 lifetime 4683.0 ms)" and left it
    to the reader: a dial p99 near the 5 s timeout since the proxy started is dials failing on the peer
    path (loft-sh/vcluster-docs troubleshoot/resource-proxy.mdx)."""
    from bot.checks.path import weigh
    from bot.domain.path_result import DialReading
    from bot.reads.context import TargetRef

    ref = TargetRef(*_target_settings())
    quiet = DialReading(lifetime_p99=4.683)
    result = weigh(ref, healthy.request, healthy.client, healthy.direct, quiet, healthy.netpol)
    [line] = [e for e in result.evidence if e.startswith("dial latency")]
    assert "no dials during the check; since the proxy started, p99 4.68 s" in line
    assert "near the 5 s dial timeout: dials have been failing" in line
    # A relay's step (well under the timeout) is not dials failing.
    low = weigh(
        ref, healthy.request, healthy.client, healthy.direct, DialReading(lifetime_p99=3.5), healthy.netpol
    )
    [line] = [e for e in low.evidence if e.startswith("dial latency")]
    assert "dials have been failing" not in line
