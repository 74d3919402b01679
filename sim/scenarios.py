"""The failure scenarios: each a deterministic timeline on the default fleet (times in simulated seconds).

Every docstring names the guide's alerts that should fire, with the guide's full-length `for` clauses and
windows, for client `team-a` (pod label = the replica, e.g. `team-a-0`) and target `platform/crd-store`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sim.defaults import CLIENT, PRIMARY_GV, PROJECT, SECONDARY_GV, TARGET, default_fleet, demo_fleet
from sim.fleet import (
    ClientCluster,
    ControlPlanePod,
    NetworkPolicyValues,
    ProxiedResource,
    Replica,
    TargetCluster,
    TargetLink,
)
from sim.traffic import Traffic
from sim.world import ProbeRecord, World

FAULT_AT = 60.0
# The flapping scenario's cycle: longer than Alertmanager's group_wait + group_interval (5.5 min), so
# each cycle's resolve and refire reach the receiver; hung for less than NoHealthyPeers' 2 minutes.
FLAP_CYCLE = 360.0
FLAP_HUNG = 70.0
ORPHAN_GV = "legacy.example.com/v1beta1"
OLD_CLIENT_VERSION = "0.36.4"
Setup = Callable[[World], None]


@dataclass(frozen=True)
class Scenario:
    """A named timeline: `setup` adjusts the fleet and schedules the events."""

    name: str
    setup: Setup
    replicas: int = 1
    # Simulated seconds per wall second `proxybot demo` runs it at unless told (None: the demo's default).
    demo_speed: float | None = None

    @property
    def summary(self) -> str:
        return (self.setup.__doc__ or "").strip().splitlines()[0]

    @property
    def description(self) -> str:
        return (self.setup.__doc__ or "").strip()


def healthy(world: World) -> None:
    """Direct path, steady traffic, probe succeeding every 5 minutes.

    Alerts: none. `peer_list_age_seconds` grows for the whole run: no peer churn, not staleness.
    """


def relay_fallback(world: World) -> None:
    """At t=60 the target is redeployed without its UDP ingress rule: the path falls back to the DERP relay.

    Alerts: none (no metric says "relayed"). Evidence: dial and request latency step up by a constant
    floor (~80 ms dial, ~60 ms request) from t=60 with no change on the target.
    """

    def drop_rule(w: World) -> None:
        w.platform.targets[TARGET].network_policy.udp_ingress_from.clear()

    world.at(FAULT_AT, "target redeployed with default network policy values", drop_rule)


def target_rolling_restart(world: World) -> None:
    """At t=120 and again at t=240 the target's only control-plane pod restarts, back ~8 s later renamed.

    Each time, dials to the departed endpoint fail (peer_departed, then 5 s timeouts), it is quarantined
    and no peer is selectable until the new list arrives; then it self-heals. The first restart's
    all-quarantined transition is the counter's first event, so the series appears already counted and
    `increase()` cannot see it (the guide: counters appear only after their first event); the second is seen.
    Alerts: ResourceProxyTargetUnavailable fires at ~t=243 and clears ~10 minutes later (~t=850).
    ResourceProxyNoHealthyPeers does not fire (healthy is 0 for seconds, not 2 minutes).
    """
    for at in (120.0, 240.0):
        world.at(at, "target pod restarts", lambda w: w.restart_target_pod(TARGET, 0))


def target_down(world: World) -> None:
    """At t=60 the target's control plane hangs: every dial times out, quarantines cycle every ~20 s.

    Alerts: ResourceProxyTargetUnavailable from ~t=62; ResourceProxyNoHealthyPeers (both group/versions)
    from ~t=180; ResourceProxyPeerChurn from ~t=150 (more than 5 quarantines, healthy 0 everywhere);
    ResourceProxyDiscoveryDegraded (reason all_quarantined) from ~t=360; ResourceProxyProbeFailing after
    t=900 (last success t=0). Not PeerCacheUnsynced: the cache stays synced with zero healthy peers.
    """

    def hang(w: World) -> None:
        for pod in w.platform.targets[TARGET].pods:
            pod.answering = False

    world.at(FAULT_AT, "target control plane stops answering", hang)


def peer_watch_dropped(world: World) -> None:
    """At t=60 team-a's peer-watch subscription drops and never returns; at t=120 the cached list is stale.

    Alerts: ResourceProxyPeerCacheUnsynced (both group/versions) from ~t=240;
    ResourceProxyDiscoveryDegraded (reason stale_peers) from ~t=420; ResourceProxyProbeFailing after t=900.
    Not NoHealthyPeers: the stale list still counts its peers healthy.
    """
    world.at(FAULT_AT, "peer watch subscription drops", lambda w: w.drop_peer_watch(CLIENT))


def license_failure(world: World) -> None:
    """At t=60 the platform licence fails and team-a-0 restarts: no peer list ever arrives.

    Requests fail with ts_server_unavailable; peers are 0 in every state; cache_synced is 0. Discovery's
    fallback records no_peer: its first check is the peer cache, and ts_server_unavailable is a dial reason.
    Alerts: ResourceProxyNoHealthyPeers and ResourceProxyPeerCacheUnsynced from ~t=180;
    ResourceProxyDiscoveryDegraded (reason no_peer) from ~t=360;
    ResourceProxyProbeFailing after t=900.
    """

    def expire(w: World) -> None:
        w.platform.licence_ok = False
        for replica in w.platform.clients[CLIENT].replicas:
            w.restart_replica(CLIENT, replica.pod)

    world.at(FAULT_AT, "licence fails, team-a replicas restart", expire)


def flapping(world: World) -> None:
    """From t=75 the target hangs for 70 s every 6 minutes, then answers again: an alert that flaps.

    Each hung stretch quarantines its endpoint a few times; the half-open trial after it heals. Alerts:
    ResourceProxyTargetUnavailable from ~t=120, and on (its 10-minute window always holds the last
    all-quarantined transition); ResourceProxyPeerChurn during each hung stretch from ~t=150 and
    resolved in between, which Alertmanager's 5-minute group_interval sees as one resolve and one refire
    per cycle (resolved ~t=750, firing again ~t=840, 1200, 1560, ...): it flaps;
    ResourceProxyDiscoveryDegraded from ~t=450. Not NoHealthyPeers: every stretch without a healthy
    peer (~75 s) is shorter than 2 minutes. The demo runs it at 30x, so the flaps fit its 70 s.
    """

    def toggle(answering: bool) -> Callable[[World], None]:
        def apply(w: World) -> None:
            for pod in w.platform.targets[TARGET].pods:
                pod.answering = answering

        return apply

    for cycle in range(60):
        start = 75.0 + cycle * FLAP_CYCLE
        world.at(start, "target hangs", toggle(False))
        world.at(start + FLAP_HUNG, "target answers again", toggle(True))


def discovery_degraded(world: World) -> None:
    """At t=60 the target's data.example.com/v1alpha1 API starts failing with 503 (peers stay healthy).

    Discovery for that group/version is served from the fallback document (reason upstream_error), the
    APIService stays Available, and its requests fail with target-made 503s.
    Alerts: ResourceProxyDiscoveryDegraded{group_version="data.example.com/v1alpha1"} from ~t=360.
    Not ProbeFailing: the probe reads example.com/v1.
    """

    def fail(w: World) -> None:
        w.platform.targets[TARGET].failing_group_versions.add(SECONDARY_GV)

    world.at(FAULT_AT, "target's data.example.com API fails", fail)


def ownership_masked(world: World) -> None:
    """team-a proxies with accessResources: owned; callers often ask for objects team-a does not own.

    Named GETs on unowned objects get 404 ownership_masked; lists only show owned objects.
    Alerts: none (isolation working as intended).
    """
    link = world.platform.clients[CLIENT].links[0]
    link.owned_only = True
    if isinstance(world.traffic, Traffic):
        world.traffic.foreign_gets = 0.4


def watches_silent(world: World) -> None:
    """At t=60 every watch stream stalls: streams stay open, no events flow.

    Alerts: ResourceProxyWatchesSilent from ~t=5460 (no events for 1 h, then `for: 30m`).
    """

    def stall(w: World) -> None:
        for proxy in w.replicas_of(CLIENT):
            proxy.stall_streams = True
            for watch in proxy.watches.values():
                watch.stalled = True

    world.at(FAULT_AT, "watch streams stall", stall)


def probe_failing(world: World) -> None:
    """The proxy-probe CronJob is created at t=0 but its kubeconfig secret is missing: no run succeeds.

    Alerts: ResourceProxyProbeFailing from t=900 (created more than 900 s ago, never succeeded).
    Proxy metrics stay healthy: nothing else fires.
    """
    world.probes[CLIENT] = ProbeRecord(CLIENT, created_at=0.0, broken=True)


def ha_split(world: World) -> None:
    """team-a runs two replicas; at t=60 only team-a-1's peer watch drops (stale from t=120).

    Alerts: ResourceProxyPeerCacheUnsynced{pod="team-a-1"} (both group/versions) from ~t=240, never for
    team-a-0; ResourceProxyDiscoveryDegraded from ~t=420. Not ProbeFailing: runs alternate replicas and
    every second run succeeds.
    """
    world.at(FAULT_AT, "team-a-1 peer watch drops", lambda w: w.drop_peer_watch(CLIENT, f"{CLIENT}-1"))


def slow_target(world: World) -> None:
    """At t=60 the target's API server slows down: answers take 36-72 s, many past the proxy's 60 s deadline.

    Dials stay fast and peers healthy: the delay is on the target's response path. Requests past the cap
    are cut (terminations reason deadline, 504). Alerts: ResourceProxyProbeFailing after t=900 (the probe
    gives up after 15 s); the peer rules stay quiet.
    """

    def slow(w: World) -> None:
        w.platform.targets[TARGET].latency = 45.0

    world.at(FAULT_AT, "target API server slows down", slow)


def apiservice_orphan(world: World) -> None:
    """team-a once also proxied legacy.example.com/v1beta1; the entry was removed, its objects stayed.

    The protected APIService v1beta1.legacy.example.com and its kube-system Service are left over (vCluster
    does not garbage-collect them) and the APIService is not Available. The proxy itself is healthy.
    Alerts: none.
    """
    world.platform.clients[CLIENT].orphan_group_versions.append(ORPHAN_GV)


def old_client(world: World) -> None:
    """team-a runs vCluster 0.36.4, older than v0.37: /metrics/syncer answers 404 (too old, not down).

    The proxy works (requests succeed), but its state cannot be read; client and target are on different
    minor versions. Alerts: none (nothing to scrape: an absent target is not an alert by itself).
    """
    world.platform.clients[CLIENT].vcluster_version = OLD_CLIENT_VERSION


def dial_direct_off(world: World) -> None:
    """team-a sets TS_DEBUG_DIAL_DIRECT=false in controlPlane.statefulSet.env: no direct dials at all.

    The NetworkPolicies allow the direct path, but tsnet never tries it: every byte goes through the DERP
    relay from the start (dial ~80 ms and request ~60 ms above a direct path). The variable is visible in
    the StatefulSet vcluster-team-a/team-a on the control plane cluster. Alerts: none.
    """
    world.platform.clients[CLIENT].env["TS_DEBUG_DIAL_DIRECT"] = "false"


def auth_failed(world: World) -> None:
    """At t=60 crd-store stops accepting team-a's platform access key: every proxied request answers 401.

    `auth failed` is platform trust, not RBAC (a rotated key the client has not picked up: restarting its
    control plane pod fixes it). Dials and peers stay healthy; discovery falls back (upstream_error).
    Alerts: ResourceProxyProbeFailing after ~t=900 (last success t=0); the peer and 503 rules stay quiet.
    """

    def reject(w: World) -> None:
        w.platform.targets[TARGET].rejected_keys.add(CLIENT)

    world.at(FAULT_AT, "crd-store rejects team-a's platform access key", reject)


def ownership_get_denied(world: World) -> None:
    """At t=60 crd-store's RBAC for team-a is rebound with create/update/patch/delete only: no get/list/watch.

    team-a proxies with accessResources: owned. Lists and GETs answer 403 naming the identity
    loft:vcluster:p-platform:team-a; a named PUT/PATCH/DELETE answers 404, the refused ownership GET
    masked (reason ownership_masked). Alerts: ResourceProxyProbeFailing after ~t=900.
    """
    world.platform.clients[CLIENT].links[0].owned_only = True
    identity = world.platform.clients[CLIENT].identity

    def rebind(w: World) -> None:
        w.platform.targets[TARGET].rbac[identity] = {"create", "update", "patch", "delete"}

    world.at(FAULT_AT, "crd-store's RBAC for team-a loses get, list and watch", rebind)


def name_collision(world: World) -> None:
    """team-a proxies with accessResources: owned; creating a widget whose name the target holds answers 409.

    widget-1 in default exists on crd-store without team-a's ownership label: team-a's lists do not show
    it (owned isolates visibility), yet `kubectl create` of widget-1 answers 409 AlreadyExists (not
    names). Alerts: none.
    """
    world.platform.clients[CLIENT].links[0].owned_only = True


LATE_JOINER = "late-joiner"
LATE_GV = "lamps.example.com/v1"
GROWS_AT = 30.0


def fleet_grows(world: World) -> None:
    """At t=30 the platform gains the target platform/late-joiner, and team-a's vcluster.yaml a new entry
    (lamps.lamps.example.com/v1) pointing at it: team-a's control plane restarts with it.

    For `proxybot sim --platform`: a running bot discovers the new target within `platform.refresh`, with no
    change to its config. Alerts: none (the new pair is healthy from the start).
    """

    def grow(w: World) -> None:
        target = TargetCluster(
            name=LATE_JOINER,
            project=PROJECT,
            resources=[ProxiedResource(LATE_GV, "lamps", "Lamp")],
            pods=[ControlPlanePod(f"{LATE_JOINER}-0", w.new_hostname_for(LATE_JOINER), created_at=w.now())],
            namespaces={"default"},
            network_policy=NetworkPolicyValues(udp_ingress_from=[f"vcluster-{CLIENT}"]),
        )
        w.platform.targets[LATE_JOINER] = target
        client = w.platform.clients[CLIENT]
        client.links.append(TargetLink(target, [LATE_GV], resources=["lamps"]))
        client.network_policy.udp_egress_to.append(f"vcluster-{LATE_JOINER}")
        for replica in client.replicas:
            w.restart_replica(CLIENT, replica.pod)
        w.publish(target)

    world.at(GROWS_AT, "platform/late-joiner added; team-a's vcluster.yaml points at it", grow)


NEXT_TARGET = "crd-store-next"
NEXT_VERSION = "0.37.2"


def config_change(world: World) -> None:
    """At t=60 team-a's vcluster.yaml changes through the platform: data.example.com/v1alpha1 now goes to
    platform/crd-store-next (was crd-store), whose control plane never answers, and team-a's control plane
    restarts with vCluster 0.37.2 (was 0.37.1).

    For `proxybot sim --platform`: a bot reading the platform keeps each instance's history; the alerts
    about crd-store-next say what changed before them. Alerts: for platform/crd-store-next,
    ResourceProxyTargetUnavailable from ~t=90; ResourceProxyPeerChurn from ~t=165;
    ResourceProxyNoHealthyPeers (data.example.com/v1alpha1) from ~t=180; ResourceProxyDiscoveryDegraded
    (data.example.com/v1alpha1) from ~t=390. Not ProbeFailing: the probe reads example.com/v1 on crd-store.
    """

    def change(w: World) -> None:
        target = TargetCluster(
            name=NEXT_TARGET,
            project=PROJECT,
            resources=[ProxiedResource(SECONDARY_GV, "datasets", "Dataset")],
            pods=[ControlPlanePod(f"{NEXT_TARGET}-0", w.new_hostname_for(NEXT_TARGET), answering=False)],
            network_policy=NetworkPolicyValues(udp_ingress_from=[f"vcluster-{CLIENT}"]),
        )
        w.platform.targets[NEXT_TARGET] = target
        client = w.platform.clients[CLIENT]
        kept = client.links[0]
        kept.group_versions.remove(SECONDARY_GV)
        kept.resources = [r for r in kept.resources or [] if r != "datasets"]
        client.links.append(TargetLink(target, [SECONDARY_GV], resources=["datasets"]))
        client.network_policy.udp_egress_to.append(f"vcluster-{NEXT_TARGET}")
        client.vcluster_version = NEXT_VERSION
        for replica in client.replicas:
            w.restart_replica(CLIENT, replica.pod)
        w.publish(target)

    world.at(FAULT_AT, "team-a's vcluster.yaml retargets data.example.com/v1alpha1; team-a upgrades", change)


SHARING = ("team-b", "team-c", "team-d")  # the clients that forward to crd-store besides team-a
KEPT = "team-d"  # the one the target's new ingress rule admits


def shared_target_down(world: World) -> None:
    """Four clients (team-a..team-d) forward both group/versions to platform/crd-store; at t=60 crd-store's
    vcluster.yaml gains a control-plane ingress rule that admits team-d only: team-a, team-b and team-c
    lose the target (every dial times out), team-d keeps its healthy peer.

    For `proxybot sim --platform`: a bot reading the platform sees one target used by four clients; its
    alert names the three clients hit and the one still healthy. Alerts: for each of team-a, team-b and
    team-c: ResourceProxyTargetUnavailable from ~t=75-90; ResourceProxyPeerChurn from ~t=105-120;
    ResourceProxyNoHealthyPeers (both group/versions) from ~t=180; ResourceProxyProbeFailing after t=900.
    ResourceProxyDiscoveryDegraded (both group/versions, labelled by target only: the rule keeps no
    client) from ~t=390. Nothing for team-d.
    """
    target = world.platform.targets[TARGET]
    first = world.platform.clients[CLIENT].links[0]
    for name in SHARING:
        client = ClientCluster(
            name=name,
            project=PROJECT,
            replicas=[Replica(f"{name}-0")],
            links=[TargetLink(target, list(first.group_versions), resources=list(first.resources or []))],
            network_policy=NetworkPolicyValues(udp_egress_to=[f"vcluster-{TARGET}"]),
        )
        world.platform.clients[name] = client
        target.network_policy.udp_ingress_from.append(client.namespace)

    def admit_one(w: World) -> None:
        w.platform.targets[TARGET].network_policy.ingress_only_from = [f"vcluster-{KEPT}"]

    world.at(FAULT_AT, f"crd-store's vcluster.yaml admits {KEPT} only", admit_one)


STORM_TARGETS = 30
STORM_HUNG = 2  # of them, the ones whose control plane also hangs


def storm_target(i: int) -> str:
    return f"shard-{i:02d}"


def storm_group_versions(i: int) -> tuple[str, str]:
    """The two group/versions team-a forwards to shard i (as crd-store's two, in a group of the shard's)."""
    return f"shard{i:02d}.example.com/v1", f"data.shard{i:02d}.example.com/v1alpha1"


def storm(world: World) -> None:
    """team-a proxies 30 more targets (platform/shard-00..29); at t=60 its peer watch drops for all of them.

    Every cached peer list of team-a goes stale at t=120 (peer_cache_synced 0 on every target, the stale
    peers still counted healthy); at t=90 shard-00 and shard-01 also stop answering (dials time out, no
    healthy peer). Alerts: ResourceProxyTargetUnavailable for the two hung shards from ~t=120 and
    ResourceProxyNoHealthyPeers (both group/versions) from ~t=225; ResourceProxyPeerCacheUnsynced for all
    31 targets (both group/versions) from ~t=255, one group each: an alert storm whose common cause is
    team-a's peer feed; ResourceProxyDiscoveryDegraded for all 31 from ~t=480; ResourceProxyProbeFailing
    after t=900.
    """
    client = world.platform.clients[CLIENT]
    for i in range(STORM_TARGETS):
        name = storm_target(i)
        # Its own group/versions: vCluster refuses one group/version forwarded to two targets.
        gvs = storm_group_versions(i)
        target = TargetCluster(
            name=name,
            project=PROJECT,
            resources=[
                ProxiedResource(gvs[0], "widgets", "Widget"),
                ProxiedResource(gvs[1], "datasets", "Dataset"),
            ],
            pods=[ControlPlanePod(f"{name}-0", f"{name}-{i:010x}.vcluster.invalid")],
            namespaces={"default"},
            network_policy=NetworkPolicyValues(udp_ingress_from=[f"vcluster-{CLIENT}"]),
        )
        world.platform.targets[name] = target
        client.links.append(TargetLink(target, list(gvs), resources=["widgets", "datasets"]))
        client.network_policy.udp_egress_to.append(f"vcluster-{name}")
    if isinstance(world.traffic, Traffic):
        world.traffic.rate = 0.3  # 31 targets: a quieter caller per group/version keeps the model light

    def hang(w: World) -> None:
        for i in range(STORM_HUNG):
            for pod in w.platform.targets[storm_target(i)].pods:
                pod.answering = False

    world.at(FAULT_AT, "team-a's peer watch subscription drops", lambda w: w.drop_peer_watch(CLIENT))
    world.at(90.0, "shard-00 and shard-01 stop answering", hang)


# What `proxybot demo` plays unless told: the target's only control-plane pod restarts twice, the proxy heals.
DEMO_DEFAULT = "target-rolling-restart"

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("healthy", healthy),
        Scenario("relay-fallback", relay_fallback),
        Scenario("target-rolling-restart", target_rolling_restart),
        Scenario("target-down", target_down),
        Scenario("peer-watch-dropped", peer_watch_dropped),
        Scenario("license-failure", license_failure),
        Scenario("flapping", flapping, demo_speed=30.0),
        Scenario("discovery-degraded", discovery_degraded),
        Scenario("ownership-masked", ownership_masked),
        Scenario("watches-silent", watches_silent),
        Scenario("probe-failing", probe_failing),
        Scenario("ha-split", ha_split, replicas=2),
        Scenario("slow-target", slow_target),
        Scenario("apiservice-orphan", apiservice_orphan),
        Scenario("old-client", old_client),
        Scenario("dial-direct-off", dial_direct_off),
        Scenario("auth-failed", auth_failed),
        Scenario("ownership-get-denied", ownership_get_denied),
        Scenario("name-collision", name_collision),
        Scenario("storm", storm),
        Scenario("fleet-grows", fleet_grows),
        Scenario("config-change", config_change),
        Scenario("shared-target-down", shared_target_down),
    )
}


def build_world(
    name: str,
    seed: int = 7,
    epoch: float = 1_700_000_000.0,
    speed: float = 1.0,
    traffic: Traffic | None = None,
    clients: int = 1,
    wide: bool = False,
) -> World:
    """A world for one scenario, not yet started (call `advance_to`); `clients` > 1 adds healthy pairs,
    `wide` sets it in the demo's fleet (`sim.defaults.demo_fleet`)."""
    try:
        scenario = SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}") from None
    fleet = demo_fleet(seed, scenario.replicas) if wide else default_fleet(seed, scenario.replicas, clients)
    world = World(fleet, seed=seed, epoch=epoch, speed=speed)
    world.traffic = traffic if traffic is not None else Traffic()
    scenario.setup(world)
    return world


__all__ = ["PRIMARY_GV", "SCENARIOS", "Scenario", "build_world"]
