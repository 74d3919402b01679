"""A running simulation: the platform, one proxy per client replica, a timeline, traffic and the probe."""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from sim.clock import FakeClock
from sim.fleet import ClientCluster, ControlPlanePod, Platform, PodPhase, TargetCluster
from sim.noise import SyncerNoise
from sim.proxy import ReplicaProxy

Action = Callable[["World"], None]


@dataclass(order=True)
class _Scheduled:
    at: float
    seq: int
    description: str = field(compare=False)
    action: Action = field(compare=False)


@dataclass
class ProbeRecord:
    """The `proxy-probe` CronJob of one client, as the control plane cluster sees it."""

    client: str
    created_at: float
    schedule_seconds: float = 300.0
    broken: bool = False
    last_schedule: float | None = None
    last_success: float | None = None
    runs: int = 0


class World:
    """Everything simulated, advanced in order on a fake clock (tests) or chasing wall time (server)."""

    def __init__(self, platform: Platform, seed: int = 7, epoch: float = 1_700_000_000.0, speed: float = 1.0):
        self.clock = FakeClock()
        self.platform = platform
        self.seed = seed
        self.rng = random.Random(seed)
        # Unix time of t=0, and how many simulated seconds pass per wall second (for exposed timestamps).
        self.epoch = epoch
        self.speed = speed
        self.proxies: dict[tuple[str, str], ReplicaProxy] = {}
        self.noise: dict[tuple[str, str], SyncerNoise] = {}
        self.probes: dict[str, ProbeRecord] = {}
        self.probe_every = ProbeRecord.schedule_seconds  # each client's CronJob's, from `start()`
        self.publish_lag = 1.0
        self.log: list[tuple[float, str]] = []
        self._queue: list[_Scheduled] = []
        self._seq = itertools.count()
        self._round_robin: dict[str, int] = {}
        self.traffic: Callable[[World], None] | None = None
        self.started = False

    # -- time ----------------------------------------------------------------------------------

    def now(self) -> float:
        return self.clock.now()

    def wall_time(self, t: float) -> float:
        """The unix time a simulated instant is shown as (timestamps Prometheus compares with time())."""
        return self.epoch + t / self.speed

    def at(self, when: float, description: str, action: Action) -> None:
        heapq.heappush(self._queue, _Scheduled(when, next(self._seq), description, action))

    def start(self) -> None:
        """Create the proxies and publish the first peer lists at t=0."""
        for client in self.platform.clients.values():
            for replica in client.replicas:
                self._boot_replica(client, replica.pod)
            record = ProbeRecord(client.name, created_at=-3600.0, schedule_seconds=self.probe_every)
            self.probes.setdefault(client.name, record)
        for target in self.platform.targets.values():
            self.publish(target)
        self.at(0.0, "tick", _tick)
        self.started = True

    def advance_to(self, when: float) -> None:
        """Run every scheduled event and traffic tick up to `when`, in order."""
        if not self.started:
            self.start()
        while self._queue and self._queue[0].at <= when:
            item = heapq.heappop(self._queue)
            self.clock.set(item.at)
            if item.description != "tick":
                self.log.append((item.at, item.description))
            item.action(self)
        self.clock.set(when)

    def advance(self, seconds: float) -> None:
        self.advance_to(self.now() + seconds)

    # -- replicas ------------------------------------------------------------------------------

    def _boot_replica(self, client: ClientCluster, pod: str) -> None:
        replica = next(r for r in client.replicas if r.pod == pod)
        rng = random.Random(f"{self.seed}/{client.name}/{pod}/{self.now()}")
        self.proxies[(client.name, pod)] = ReplicaProxy(self.clock, self.platform, client, replica, rng)
        self.noise[(client.name, pod)] = SyncerNoise(rng, self.now())

    def restart_replica(self, client_name: str, pod: str) -> None:
        """A new process: counters start over, caches are empty until the platform lists peers."""
        client = self.platform.clients[client_name]
        self._boot_replica(client, pod)
        replica = next(r for r in client.replicas if r.pod == pod)
        if self.platform.network_up and self.platform.licence_ok and replica.licence_ok:
            for target in {lk.target.name: lk.target for lk in client.links}.values():
                self._publish_to(target, client_name, pod)

    def replicas_of(self, client_name: str) -> list[ReplicaProxy]:
        return [p for (c, _), p in self.proxies.items() if c == client_name]

    def proxy(self, client_name: str, pod: str | None = None) -> ReplicaProxy:
        """One replica's proxy; without `pod`, the next one round robin (what a Service would do)."""
        if pod is not None:
            return self.proxies[(client_name, pod)]
        replicas = self.replicas_of(client_name)
        turn = self._round_robin.get(client_name, 0)
        self._round_robin[client_name] = turn + 1
        return replicas[turn % len(replicas)]

    # -- peer lists ----------------------------------------------------------------------------

    def publish(self, target: TargetCluster) -> None:
        """The platform publishes the target's current endpoints to every subscribed cache."""
        for client_name, pod in self.proxies:
            self._publish_to(target, client_name, pod)

    def _publish_to(self, target: TargetCluster, client_name: str, pod: str) -> None:
        proxy = self.proxies[(client_name, pod)]
        if not (self.platform.network_up and self.platform.licence_ok and proxy.replica.licence_ok):
            return
        for (label, _), cache in proxy.caches.items():
            if label == target.target_label:
                cache.publish(target.peer_hostnames())

    def publish_later(self, target: TargetCluster) -> None:
        self.at(
            self.now() + self.publish_lag, f"platform publishes peers of {target.name}", _publisher(target)
        )

    def drop_peer_watch(self, client_name: str, pod: str | None = None) -> None:
        for (c, p), proxy in self.proxies.items():
            if c == client_name and (pod is None or p == pod):
                for cache in proxy.caches.values():
                    cache.drop_subscription()

    # -- target pods ---------------------------------------------------------------------------

    def new_hostname(self, target: TargetCluster) -> str:
        return self.new_hostname_for(target.name)

    def new_hostname_for(self, name: str) -> str:
        return f"{name}-{self.rng.getrandbits(40):010x}.vcluster.invalid"

    def restart_target_pod(self, target_name: str, index: int, down_for: float = 8.0) -> None:
        """The pod terminates, and comes back `down_for` seconds later under a new hostname."""
        target = self.platform.targets[target_name]
        pod = target.pods[index]
        pod.phase = PodPhase.TERMINATING
        target.restarts += 1

        def gone(world: World) -> None:
            pod.phase = PodPhase.GONE

        def replaced(world: World) -> None:
            target.pods[index] = ControlPlanePod(pod.name, world.new_hostname(target), created_at=world.now())
            world.publish_later(target)

        self.at(self.now() + 2.0, f"{pod.name} gone", gone)
        self.at(self.now() + down_for, f"{pod.name} back with a new hostname", replaced)


def _publisher(target: TargetCluster) -> Action:
    def publish(world: World) -> None:
        world.publish(target)

    return publish


def _tick(world: World) -> None:
    """One simulated second: noise, the proxies' own work, traffic, the probe schedule; then the next tick."""
    for noise in world.noise.values():
        noise.tick()
    for proxy in world.proxies.values():
        proxy.housekeep()
    if world.traffic is not None:
        world.traffic(world)
    world.at(world.now() + 1.0, "tick", _tick)
