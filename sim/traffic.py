"""Simulated callers: requests, discovery refreshes, watches, object churn and the scheduled probe."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from sim.fleet import OWNER_LABEL, TargetLink
from sim.names import Verb
from sim.proxy import ProxyRequest, ReplicaProxy
from sim.world import ProbeRecord, World

PROBE_TIMEOUT = 15.0
DISCOVERY_EVERY = 30


def poisson(rng: random.Random, mean: float) -> int:
    """Knuth's method: fine for the small means of a simulated second."""
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


@dataclass
class Traffic:
    """Per replica, per target group/version: about `rate` requests a second, `watches` open streams."""

    rate: float = 2.0
    watches: int = 2
    # Share of named GETs aimed at objects the client does not own (ownership-masked).
    foreign_gets: float = 0.0
    changes_per_second: float = 0.7

    def __call__(self, world: World) -> None:
        rng = world.rng
        for proxy in list(world.proxies.values()):
            for link in proxy.client.links:
                for gv in link.group_versions:
                    self._drive(world, proxy, link, gv, rng)
        self._churn(world, rng)
        self._probe(world)

    def _drive(
        self, world: World, proxy: ReplicaProxy, link: TargetLink, gv: str, rng: random.Random
    ) -> None:
        label = link.target.target_label
        plurals = [r.plural for r in link.target.resources if r.group_version == gv]
        if not plurals:
            return
        for _ in range(poisson(rng, self.rate)):
            proxy.request(self._pick(proxy, link, gv, rng.choice(plurals), rng))
        if int(world.now()) % DISCOVERY_EVERY == 0:
            proxy.discover(label, gv)
        self._keep_watches(proxy, link, gv, plurals[0], rng)

    def _pick(
        self, proxy: ReplicaProxy, link: TargetLink, gv: str, plural: str, rng: random.Random
    ) -> ProxyRequest:
        label = link.target.target_label
        objects = [
            o for o in link.target.objects if o.resource.group_version == gv and o.resource.plural == plural
        ]
        if not objects or rng.random() < 0.7:
            return ProxyRequest(label, gv, Verb.LIST, plural, namespace="default")
        mine = [o for o in objects if o.labels.get(OWNER_LABEL) == proxy.client.owner_value]
        foreign = [o for o in objects if o not in mine]
        pool = objects
        if link.owned_only:
            pool = foreign if foreign and rng.random() < self.foreign_gets else (mine or objects)
        obj = rng.choice(pool)
        return ProxyRequest(label, gv, Verb.GET, plural, namespace=obj.namespace, name=obj.name)

    def _keep_watches(
        self, proxy: ReplicaProxy, link: TargetLink, gv: str, plural: str, rng: random.Random
    ) -> None:
        label = link.target.target_label
        mine = [w for w in proxy.watches.values() if w.target == label and w.group_version == gv]
        for watch in mine:
            # A target that stops answering ends its streams; callers also recycle them now and then.
            if not link.target.answering() or (not watch.stalled and rng.random() < 1 / 600):
                proxy.close_watch(watch.ident)
        open_now = sum(1 for w in proxy.watches.values() if w.target == label and w.group_version == gv)
        if open_now < self.watches and link.target.answering():
            proxy.open_watch(label, gv, plural)

    def _churn(self, world: World, rng: random.Random) -> None:
        for target in world.platform.targets.values():
            if not target.answering() or not target.objects:
                continue
            changes = poisson(rng, self.changes_per_second)
            for _ in range(changes):
                rng.choice(target.objects).resource_version += 1
            for proxy in world.proxies.values():
                proxy.deliver_events(target.target_label, changes)

    def _probe(self, world: World) -> None:
        for record in world.probes.values():
            if world.now() % record.schedule_seconds == 0:
                run_probe(world, record)


def run_probe(world: World, record: ProbeRecord) -> bool:
    """One CronJob run: the guide's `GET /apis/<gv>/namespaces/<ns>/<resource>?limit=1`, 15 s timeout."""
    record.last_schedule = world.now()
    record.runs += 1
    client = world.platform.clients[record.client]
    if record.broken or not client.links:
        return False
    link = client.links[0]
    gv = link.group_versions[0]
    plural = next(r.plural for r in link.target.resources if r.group_version == gv)
    req = ProxyRequest(link.target.target_label, gv, Verb.LIST, plural, namespace="default")
    # The probe's own connections spread over the replicas, independent of other callers.
    replicas = world.replicas_of(record.client)
    resp = replicas[(record.runs - 1) % len(replicas)].request(req)
    ok = resp.code == 200 and resp.duration <= PROBE_TIMEOUT
    if ok:
        record.last_success = world.now()
    return ok
