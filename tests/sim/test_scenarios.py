"""Scenarios are deterministic timelines whose metrics show what their docstrings predict."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sim.defaults import CLIENT, PRIMARY_GV, SECONDARY_GV, TARGET_LABEL
from sim.scenarios import SCENARIOS, build_world
from sim.world import World

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _page(world: World, pod: str = f"{CLIENT}-0", client: str = CLIENT) -> Series:
    text = "\n".join(world.proxy(client, pod).render()) + "\n"
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _get(series: Series, name: str, **labels: str) -> float:
    return series.get((name, frozenset({"target": TARGET_LABEL, **labels}.items())), 0.0)


def test_every_scenario_documents_its_alerts() -> None:
    assert len(SCENARIOS) == 23
    for scenario in SCENARIOS.values():
        assert "Alerts:" in scenario.description, scenario.name


def test_same_seed_same_page() -> None:
    pages = []
    for _ in range(2):
        world = build_world("flapping", seed=11)
        world.advance_to(400)
        pages.append(world.proxy(CLIENT, f"{CLIENT}-0").render())
    assert pages[0] == pages[1]


def test_unknown_scenario_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown scenario"):
        build_world("nope")


def test_histogram_buckets_stop_at_the_deadline_and_dial_timeout() -> None:
    world = build_world("healthy")
    world.advance_to(30)
    text = "\n".join(world.proxy(CLIENT, f"{CLIENT}-0").render())
    request = "vcluster_proxy_request_duration_seconds_bucket"
    dial = "vcluster_proxy_peer_dial_duration_seconds_bucket"
    assert f'{request}{{target="platform/crd-store",verb="LIST",le="60"}}' in text
    assert f'{dial}{{target="platform/crd-store",le="5"}}' in text
    dial_bounds = {line.split('le="')[1].split('"')[0] for line in text.splitlines() if line.startswith(dial)}
    assert dial_bounds == {"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "+Inf"}


def test_target_down_keeps_cache_synced_with_zero_healthy_and_cycles_quarantines() -> None:
    world = build_world("target-down")
    world.advance_to(200)
    page = _page(world)
    assert _get(page, "vcluster_proxy_peers", group_version=PRIMARY_GV, state="healthy") == 0
    assert _get(page, "vcluster_proxy_peer_cache_synced", group_version=PRIMARY_GV) == 1
    assert _get(page, "vcluster_proxy_peer_quarantines_total") > 5


def test_peer_watch_dropped_unsyncs_after_the_tolerance() -> None:
    world = build_world("peer-watch-dropped")
    world.advance_to(119)
    assert _get(_page(world), "vcluster_proxy_peer_cache_synced", group_version=PRIMARY_GV) == 1
    world.advance_to(125)
    assert _get(_page(world), "vcluster_proxy_peer_cache_synced", group_version=PRIMARY_GV) == 0


def test_shared_target_down_cuts_three_clients_and_keeps_the_fourth() -> None:
    world = build_world("shared-target-down")
    world.advance_to(240)
    healthy = {
        client: _get(
            _page(world, f"{client}-0", client), "vcluster_proxy_peers", group_version=gv, state="healthy"
        )
        for client in ("team-a", "team-b", "team-c", "team-d")
        for gv in (PRIMARY_GV,)
    }
    assert healthy == {"team-a": 0, "team-b": 0, "team-c": 0, "team-d": 1}
    policy = world.platform.targets["crd-store"].network_policy
    assert policy.ingress_only_from == ["vcluster-team-d"]


def test_ha_split_degrades_one_replica_only() -> None:
    world = build_world("ha-split")
    world.advance_to(300)
    synced = "vcluster_proxy_peer_cache_synced"
    assert _get(_page(world, f"{CLIENT}-0"), synced, group_version=PRIMARY_GV) == 1
    assert _get(_page(world, f"{CLIENT}-1"), synced, group_version=PRIMARY_GV) == 0


def test_discovery_degraded_falls_back_for_one_group_version() -> None:
    world = build_world("discovery-degraded")
    world.advance_to(400)
    page = _page(world)
    fallbacks = "vcluster_proxy_discovery_fallbacks_total"
    assert _get(page, fallbacks, group_version=SECONDARY_GV, reason="upstream_error") > 0
    assert _get(page, fallbacks, group_version=PRIMARY_GV, reason="upstream_error") == 0


def test_probe_failing_never_succeeds_while_healthy_probe_does() -> None:
    failing, healthy = build_world("probe-failing"), build_world("healthy")
    for world in (failing, healthy):
        world.advance_to(901)
    assert failing.probes[CLIENT].last_success is None
    assert healthy.probes[CLIENT].last_success == 900


def test_watches_silent_keeps_streams_open_without_events() -> None:
    world = build_world("watches-silent")
    world.advance_to(100)
    before = _get(_page(world), "vcluster_proxy_watch_events_total")
    world.advance_to(1000)
    page = _page(world)
    assert _get(page, "vcluster_proxy_active_watches") > 0
    assert _get(page, "vcluster_proxy_watch_events_total") == before


def test_slow_target_runs_requests_into_the_deadline_with_healthy_peers() -> None:
    world = build_world("slow-target")
    world.advance_to(59)
    terminations = "vcluster_proxy_request_terminations_total"
    assert _get(_page(world), terminations, reason="deadline") == 0
    world.advance_to(300)
    page = _page(world)
    assert _get(page, terminations, reason="deadline") > 0
    assert _get(page, "vcluster_proxy_peers", group_version=PRIMARY_GV, state="healthy") == 1
    assert _get(page, "vcluster_proxy_peer_dial_failures_total", reason="timeout") == 0


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_discovery_fallbacks_carry_only_peer_reasons_or_upstream_error(scenario: str) -> None:
    """manage/resource-proxy-operations.mdx, "Outcome reasons" (the "Also on" column and the paragraph above
    it): discovery_fallbacks_total records no_peer, stale_peers, all_quarantined or upstream_error, never a
    dial reason such as ts_server_unavailable (the licence-failure scenario recorded one)."""
    world = build_world(scenario)
    world.advance_to(420)
    allowed = {"no_peer", "stale_peers", "all_quarantined", "upstream_error"}
    for pod in [r.pod for r in world.platform.clients[CLIENT].replicas]:
        reasons = {
            dict(labels)["reason"]
            for name, labels in _page(world, pod)
            if name == "vcluster_proxy_discovery_fallbacks_total"
        }
        assert reasons <= allowed, (pod, reasons)
