"""The proxy model against the guide: Retry-After, 501 upgrades, the 60 s cap, fallback, ownership."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sim.defaults import CLIENT, PRIMARY_GV, SECONDARY_GV, TARGET, TARGET_LABEL, default_fleet
from sim.fleet import OWNER_LABEL
from sim.names import Reason, Verb
from sim.proxy import ProxyRequest, ReplicaProxy
from sim.world import World


def _world() -> World:
    world = World(default_fleet(3))
    world.start()
    return world


def _proxy(world: World) -> ReplicaProxy:
    return world.proxy(CLIENT, f"{CLIENT}-0")


def _list(gv: str = PRIMARY_GV) -> ProxyRequest:
    return ProxyRequest(TARGET_LABEL, gv, Verb.LIST, "widgets" if gv == PRIMARY_GV else "datasets", "default")


def _samples(proxy: ReplicaProxy) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = "\n".join(proxy.render()) + "\n"
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _hang_target(world: World) -> None:
    for pod in world.platform.targets[TARGET].pods:
        pod.answering = False


def test_healthy_list_is_served_by_the_target() -> None:
    world = _world()
    world.platform.clients[CLIENT].links[0].owned_only = False  # accessResources: all
    resp = _proxy(world).request(_list())
    assert resp.code == 200
    assert resp.reason is Reason.UPSTREAM
    assert {o.name for o in resp.objects} == {"widget-0", "widget-1", "widget-2", "widget-3"}
    assert "Retry-After" not in resp.headers


def test_access_resources_defaults_to_owned() -> None:
    """vCluster's default is `owned`: troubleshoot/resource-proxy.mdx, "Existing target resources return 404"
    ("With `accessResources: owned` (the default)"); a list shows only the client's objects."""
    world = _world()
    assert all(link.owned_only for link in world.platform.clients[CLIENT].links)
    resp = _proxy(world).request(_list())
    assert {o.name for o in resp.objects} == {"widget-0", "widget-2"}


def test_a_targets_own_503_reaches_the_caller_as_the_proxys_503() -> None:
    """troubleshoot/resource-proxy.mdx, "Target tenant cluster returns 503 unavailable": upstream 5xx are
    mapped to 503, prechecks and upstream 5xx share the generic unavailable text, and the proxy always sets
    `Retry-After: 1`; only the `reason` label (here `upstream`) tells the target's 5xx apart."""
    world = _world()
    proxy = _proxy(world)
    _hang_target(world)
    for _ in range(3):
        proxy.request(_list())
    precheck = proxy.request(_list())
    for pod in world.platform.targets[TARGET].pods:
        pod.answering = True
    world.clock.advance(20)
    proxy.request(_list())  # the trial dial heals the peer
    world.platform.targets[TARGET].failing_group_versions.add(PRIMARY_GV)
    upstream = proxy.request(_list())
    assert (precheck.reason, upstream.reason) == (Reason.ALL_QUARANTINED, Reason.UPSTREAM)
    assert (upstream.code, upstream.message) == (precheck.code, precheck.message)
    assert upstream.headers == precheck.headers == {"Retry-After": "1"}


def test_a_resource_the_target_does_not_serve_is_its_404_not_an_empty_list() -> None:
    proxy = _proxy(_world())
    resp = proxy.request(ProxyRequest(TARGET_LABEL, PRIMARY_GV, Verb.LIST, "gizmos", "default"))
    assert resp.code == 404
    assert resp.objects == []
    assert "could not find the requested resource (gizmos." in resp.message


def test_dial_timeouts_quarantine_on_the_third_and_then_fail_fast_with_retry_after() -> None:
    world = _world()
    proxy = _proxy(world)
    _hang_target(world)
    slow = [proxy.request(_list()) for _ in range(3)]
    assert [r.reason for r in slow] == [Reason.TIMEOUT] * 3
    assert all(r.duration == 5.0 for r in slow)
    fast = proxy.request(_list())
    assert (fast.code, fast.reason, fast.headers["Retry-After"]) == (503, Reason.ALL_QUARANTINED, "1")
    samples = _samples(proxy)
    target = (("target", TARGET_LABEL),)
    assert samples[("vcluster_proxy_peer_quarantines_total", target)] == 1
    assert samples[("vcluster_proxy_target_all_peers_quarantined_total", target)] == 1
    dial_fail = ("vcluster_proxy_peer_dial_failures_total", (("reason", "all_quarantined"), *target))
    assert samples[dial_fail] == 1
    # Rejections that never reached a peer have no dial-duration observation.
    assert samples[("vcluster_proxy_peer_dial_duration_seconds_count", target)] == 3


def test_twenty_seconds_later_one_trial_dial_recovers_the_peer() -> None:
    world = _world()
    proxy = _proxy(world)
    _hang_target(world)
    for _ in range(3):
        proxy.request(_list())
    for pod in world.platform.targets[TARGET].pods:
        pod.answering = True
    world.clock.advance(19)
    assert proxy.request(_list()).reason is Reason.ALL_QUARANTINED
    world.clock.advance(1)
    assert proxy.request(_list()).code == 200
    assert _samples(proxy)[("vcluster_proxy_peer_recoveries_total", (("target", TARGET_LABEL),))] == 1


def test_stale_cache_fails_fast_after_60_seconds_and_discovery_falls_back() -> None:
    world = _world()
    proxy = _proxy(world)
    world.drop_peer_watch(CLIENT)
    world.clock.advance(60)
    assert proxy.request(_list()).code == 200
    world.clock.advance(1)
    resp = proxy.request(_list())
    assert (resp.code, resp.reason, resp.headers["Retry-After"]) == (503, Reason.STALE_PEERS, "1")
    answer = proxy.discover(TARGET_LABEL, PRIMARY_GV)
    assert answer.fallback_reason is Reason.STALE_PEERS
    synced = ("vcluster_proxy_peer_cache_synced", (("group_version", PRIMARY_GV), ("target", TARGET_LABEL)))
    assert _samples(proxy)[synced] == 0


def test_licence_failure_is_ts_server_unavailable_before_any_peer() -> None:
    world = _world()
    world.platform.licence_ok = False
    world.restart_replica(CLIENT, f"{CLIENT}-0")
    resp = _proxy(world).request(_list())
    assert (resp.code, resp.reason) == (503, Reason.TS_SERVER_UNAVAILABLE)
    samples = _samples(_proxy(world))
    assert not any(name == "vcluster_proxy_peer_list_age_seconds" for name, _ in samples)


def _fallbacks(proxy: ReplicaProxy) -> dict[str, float]:
    return {
        dict(labels)["reason"]: value
        for (name, labels), value in _samples(proxy).items()
        if name == "vcluster_proxy_discovery_fallbacks_total"
    }


def test_a_licence_failure_records_discovery_fallback_as_a_peer_reason() -> None:
    """manage/resource-proxy-operations.mdx, "Outcome reasons": a discovery fallback records the
    peer-availability reason when the first check fails, or upstream_error; ts_server_unavailable is
    also on peer_dial_failures_total only, never on discovery_fallbacks_total."""
    world = _world()
    world.platform.licence_ok = False
    world.restart_replica(CLIENT, f"{CLIENT}-0")
    proxy = _proxy(world)
    assert proxy.discover(TARGET_LABEL, PRIMARY_GV).fallback_reason is Reason.NO_PEER
    assert _fallbacks(proxy) == {"no_peer": 1}


def test_a_dial_failing_after_the_peer_check_is_upstream_error_and_keeps_its_dial_reason() -> None:
    """manage/resource-proxy-operations.mdx, "Outcome reasons": upstream_error covers a transport failure
    turned into a 5xx after the peer check, and request_total keeps the dial's reason (the first wins)."""
    world = _world()
    proxy = _proxy(world)
    world.platform.licence_ok = False  # the network server fails after the peer list arrived
    assert proxy.discover(TARGET_LABEL, PRIMARY_GV).fallback_reason is Reason.UPSTREAM_ERROR
    assert _fallbacks(proxy) == {"upstream_error": 1}
    requests = {
        dict(labels)["reason"]
        for (name, labels), _ in _samples(proxy).items()
        if name == "vcluster_proxy_request_total"
    }
    assert requests == {"ts_server_unavailable"}


def test_a_denied_ownership_get_is_masked_not_a_failed_check() -> None:
    """manage/resource-proxy-operations.mdx, "Outcome reasons": a 401 or RBAC 403 on the preliminary
    ownership GET is `ownership_masked`; `ownership_check_failed` is an undecodable GET or a 5xx."""
    world = _world()
    world.platform.clients[CLIENT].links[0].owned_only = True
    world.platform.targets[TARGET].rbac[world.platform.clients[CLIENT].identity] = {"list", "delete"}
    req = ProxyRequest(TARGET_LABEL, PRIMARY_GV, Verb.DELETE, "widgets", "default", "widget-0")
    resp = _proxy(world).request(req)
    assert (resp.code, resp.reason) == (404, Reason.OWNERSHIP_MASKED)


def test_requests_are_capped_at_60_seconds() -> None:
    world = _world()
    world.platform.targets[TARGET].latency = 120.0
    resp = _proxy(world).request(_list())
    assert (resp.code, resp.reason, resp.duration) == (504, Reason.DEADLINE, 60.0)
    key = ("vcluster_proxy_request_terminations_total", (("reason", "deadline"), ("target", TARGET_LABEL)))
    assert _samples(_proxy(world))[key] == 1


def test_connection_upgrade_gets_501() -> None:
    world = _world()
    req = ProxyRequest(TARGET_LABEL, PRIMARY_GV, Verb.CONNECT, "widgets", "default", "widget-0", upgrade=True)
    resp = _proxy(world).request(req)
    assert (resp.code, resp.reason) == (501, Reason.UPGRADE_REJECTED)
    labels = (("reason", "upgrade_rejected"), ("target", TARGET_LABEL))
    key = ("vcluster_proxy_request_terminations_total", labels)
    assert _samples(_proxy(world))[key] == 1


def test_fallback_discovery_lists_configured_resources_with_only_get() -> None:
    world = _world()
    world.platform.targets[TARGET].failing_group_versions.add(PRIMARY_GV)
    answer = _proxy(world).discover(TARGET_LABEL, PRIMARY_GV)
    assert answer.fallback_reason is Reason.UPSTREAM_ERROR
    assert answer.resources == [("widgets", "Widget", True, ["get"]), ("gadgets", "Gadget", True, ["get"])]


def test_wildcard_fallback_discovery_is_empty_and_proxied_discovery_has_all_verbs() -> None:
    world = _world()
    world.platform.clients[CLIENT].links[0].resources = None
    proxy = _proxy(world)
    assert "list" in proxy.discover(TARGET_LABEL, SECONDARY_GV).resources[0][3]
    world.platform.targets[TARGET].failing_group_versions.add(SECONDARY_GV)
    answer = proxy.discover(TARGET_LABEL, SECONDARY_GV)
    assert answer.resources == []
    key = (
        "vcluster_proxy_discovery_fallbacks_total",
        (("group_version", SECONDARY_GV), ("reason", "upstream_error"), ("target", TARGET_LABEL)),
    )
    assert _samples(proxy)[key] == 1


def test_ownership_masks_named_requests_and_filters_lists() -> None:
    world = _world()
    world.platform.clients[CLIENT].links[0].owned_only = True
    proxy = _proxy(world)
    listed = proxy.request(_list())
    assert listed.objects
    assert all(o.labels[OWNER_LABEL] == "platform.team-a" for o in listed.objects)
    masked = proxy.request(ProxyRequest(TARGET_LABEL, PRIMARY_GV, Verb.GET, "widgets", "default", "widget-1"))
    assert (masked.code, masked.reason) == (404, Reason.OWNERSHIP_MASKED)
    mine = proxy.request(ProxyRequest(TARGET_LABEL, PRIMARY_GV, Verb.GET, "widgets", "default", "widget-0"))
    assert mine.code == 200


def test_write_into_a_namespace_the_client_lacks_is_namespace_missing() -> None:
    world = _world()
    req = ProxyRequest(TARGET_LABEL, PRIMARY_GV, Verb.POST, "widgets", "apps")
    resp = _proxy(world).request(req)
    assert (resp.code, resp.reason) == (404, Reason.NAMESPACE_MISSING)


@pytest.mark.parametrize("relayed", [False, True])
def test_relayed_path_adds_a_latency_floor_to_every_dial(relayed: bool) -> None:
    world = _world()
    if relayed:
        world.platform.targets[TARGET].network_policy.udp_ingress_from.clear()
    proxy = _proxy(world)
    durations = [proxy.request(_list()).duration for _ in range(20)]
    assert (min(durations) > 0.1) is relayed


def test_counters_absent_before_first_event_peers_always_three_states() -> None:
    world = _world()
    samples = _samples(_proxy(world))
    names = {name for name, _ in samples}
    assert "vcluster_proxy_request_total" not in names
    assert "vcluster_proxy_peer_quarantines_total" not in names
    states = {dict(labels)["state"] for name, labels in samples if name == "vcluster_proxy_peers"}
    assert states == {"healthy", "quarantined", "half_open"}


def test_watches_count_events_until_they_stall() -> None:
    world = _world()
    proxy = _proxy(world)
    watch = proxy.open_watch(TARGET_LABEL, PRIMARY_GV, "widgets")
    assert watch is not None
    proxy.deliver_events(TARGET_LABEL, 3)
    watch.stalled = True
    proxy.deliver_events(TARGET_LABEL, 5)
    samples = _samples(proxy)
    target = (("target", TARGET_LABEL),)
    assert samples[("vcluster_proxy_watch_events_total", target)] == 3
    assert samples[("vcluster_proxy_active_watches", target)] == 1
