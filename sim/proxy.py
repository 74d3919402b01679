"""The resource proxy of one client replica: peer checks, dials, deadlines, ownership, discovery, watches.

What it follows from the vendor's pages (loft-sh/vcluster-docs):
- every 503 the proxy answers carries `Retry-After: 1`, a target's own 5xx included: it becomes a 503 with
  the generic unavailable text, so a caller cannot tell the causes apart; only the `reason` label and the
  logs can (troubleshoot/resource-proxy.mdx, "Target tenant cluster returns 503 unavailable");
- a 401 or RBAC 403 on the ownership GET before a named PUT, PATCH or DELETE is masked as a 404 labelled
  `ownership_masked`; `ownership_check_failed` is an undecodable GET or a 5xx there
  (manage/resource-proxy-operations.mdx, "Outcome reasons"; troubleshoot, "Existing target resources
  return 404");
- a discovery fallback records a peer-availability reason when the first peer check fails and
  `upstream_error` when the proxied attempt fails afterwards, a failed dial included; `request_total`
  keeps the dial's own reason ("Outcome reasons": the first reason wins). `ts_server_unavailable` is a
  dial reason only.

What it assumes where the pages are silent: a resource request checks the local platform network server
and the licence before the peer cache, so a licence failure labels requests `ts_server_unavailable` even
when no peer list ever arrived; discovery's first check is the peer cache alone. A target's 5xx other
than 503 is modelled as one API that answers 503. The 60 s cap answers 504.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from sim.clock import Clock
from sim.fleet import (
    OWNER_LABEL,
    ClientCluster,
    Path,
    Platform,
    PodPhase,
    Replica,
    StoredObject,
    TargetCluster,
    TargetLink,
)
from sim.names import DIAL_TIMEOUT, REQUEST_DEADLINE, RETRY_AFTER, WRITE_VERBS, PeerState, Reason, Verb
from sim.peers import DialOutcome, PeerCache
from sim.proxy_journal import ProxyJournal
from sim.registry import ProxyMetrics

# The RBAC verb each request needs on the target.
_RBAC_VERBS = {
    Verb.GET: "get",
    Verb.LIST: "list",
    Verb.WATCH: "watch",
    Verb.POST: "create",
    Verb.PUT: "update",
    Verb.PATCH: "patch",
    Verb.DELETE: "delete",
}
_NAMED_MUTATIONS = frozenset({Verb.PUT, Verb.PATCH, Verb.DELETE})

# A relayed path adds this much to every dial and every request (the DERP hop), a direct one nothing.
RELAY_DIAL_FLOOR = 0.08
RELAY_REQUEST_FLOOR = 0.06


@dataclass(frozen=True)
class ProxyRequest:
    """One caller request for a proxied resource."""

    target: str
    group_version: str
    verb: Verb
    resource: str
    namespace: str | None = None
    name: str | None = None
    upgrade: bool = False


@dataclass
class ProxyResponse:
    """What the caller gets back, and how long the proxy took."""

    code: int
    reason: Reason
    duration: float
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    objects: list[StoredObject] = field(default_factory=list)


@dataclass(frozen=True)
class DiscoveryAnswer:
    """Discovery for one group/version: `(plural, kind, namespaced, verbs)` rows and the fallback reason."""

    resources: list[tuple[str, str, bool, list[str]]]
    fallback_reason: Reason | None


@dataclass
class Watch:
    """An open proxied watch stream."""

    ident: int
    target: str
    group_version: str
    stalled: bool = False


@dataclass(frozen=True)
class _Dial:
    ok: bool
    reason: Reason
    duration: float | None


def _unavailable(link: TargetLink, group_version: str) -> str:
    """The vendor's generic unavailable text: the cause is only on the metrics and in the logs."""
    return f'target tenant cluster "{link.target.name}" for {group_version} is unavailable'


class ReplicaProxy:
    """The proxy inside one client control-plane replica; every metric it exposes is kept here."""

    def __init__(
        self, clock: Clock, platform: Platform, client: ClientCluster, replica: Replica, rng: random.Random
    ) -> None:
        self.clock = clock
        self.platform = platform
        self.client = client
        self.replica = replica
        self.rng = rng
        self.metrics = ProxyMetrics()
        self.caches = {
            (link.target.target_label, gv): PeerCache(clock, gv)
            for link in client.links
            for gv in link.group_versions
        }
        self.watches: dict[int, Watch] = {}
        self._next_watch = 1
        # Set by a scenario: streams opened from now on deliver no events (a half-dead stream).
        self.stall_streams = False
        self._busy_until: list[tuple[float, str]] = []
        # The process's own log (`kubectl logs` of this replica's pod): the startup pair is written now.
        self.journal = ProxyJournal(clock, self.caches)

    # -- plumbing ------------------------------------------------------------------------------

    def link(self, target: str) -> TargetLink | None:
        return next((lk for lk in self.client.links if lk.target.target_label == target), None)

    def cache(self, target: str, group_version: str) -> PeerCache | None:
        return self.caches.get((target, group_version))

    def _platform_reason(self) -> Reason | None:
        up = self.platform.network_up and self.platform.licence_ok and self.replica.licence_ok
        return None if up else Reason.TS_SERVER_UNAVAILABLE

    def _availability(self, cache: PeerCache) -> Reason | None:
        return self._platform_reason() or cache.availability()

    def _count(self, req: ProxyRequest, code: int, reason: Reason) -> None:
        labels = (req.target, req.group_version, req.verb.value, str(code), reason.value)
        self.metrics.requests.inc(labels)

    def _finish(self, req: ProxyRequest, resp: ProxyResponse) -> ProxyResponse:
        self._count(req, resp.code, resp.reason)
        self.metrics.request_duration.observe((req.target, req.verb.value), resp.duration)
        self._busy_until.append((self.clock.now() + resp.duration, req.target))
        if resp.code == 503:  # the proxy's unavailability, the target's own 5xx included
            resp.headers["Retry-After"] = RETRY_AFTER
        return resp

    # -- dials ---------------------------------------------------------------------------------

    def _dial(self, link: TargetLink, cache: PeerCache) -> _Dial:
        reason = self._availability(cache)
        host = None if reason else cache.choose(self.rng.randrange(1 << 16))
        if host is None:
            reason = reason or Reason.ALL_QUARANTINED
            self.metrics.dial_failures.inc((link.target.target_label, reason.value))
            return _Dial(False, reason, None)
        pod = link.target.pod_by_hostname(host.hostname)
        if pod is not None and pod.phase is PodPhase.TERMINATING:
            # The endpoint is leaving the list while we dial: no duration, no strike against it.
            self.metrics.dial_failures.inc((link.target.target_label, Reason.PEER_DEPARTED.value))
            host.on_trial = False
            return _Dial(False, Reason.PEER_DEPARTED, None)
        path = self.platform.path(self.client, link.target)
        reachable = pod is not None and pod.phase is PodPhase.RUNNING and pod.answering
        ok = reachable and path is not Path.CUT
        duration = self._dial_latency(path) if ok else DIAL_TIMEOUT
        self.metrics.dial_duration.observe((link.target.target_label,), duration)
        outcome = cache.record_success(host) if ok else cache.record_failure(host)
        self._count_transitions(link.target.target_label, outcome)
        self.journal.dial_failed(link.target.target_label, cache, host, outcome)
        if not ok:
            self.metrics.dial_failures.inc((link.target.target_label, Reason.TIMEOUT.value))
        return _Dial(ok, Reason.UPSTREAM if ok else Reason.TIMEOUT, duration)

    def _count_transitions(self, target: str, outcome: DialOutcome) -> None:
        if outcome.recovered:
            self.metrics.recoveries.inc((target,))
        if outcome.quarantined:
            self.metrics.quarantines.inc((target,))
        if outcome.left_none_selectable:
            self.metrics.all_quarantined.inc((target,))

    def _dial_latency(self, path: Path) -> float:
        base = self.rng.uniform(0.002, 0.012)
        return base + (RELAY_DIAL_FLOOR + self.rng.uniform(0.0, 0.03) if path is Path.RELAYED else 0.0)

    def _request_latency(self, link: TargetLink) -> float:
        path = self.platform.path(self.client, link.target)
        floor = RELAY_REQUEST_FLOOR if path is Path.RELAYED else 0.0
        return link.target.latency * self.rng.uniform(0.8, 1.6) + floor

    # -- the process's own work ----------------------------------------------------------------

    def housekeep(self) -> None:
        """One simulated second of the process's own work: startup probes, the peer-watch check."""
        for target, gv in self.journal.probes_due(self.caches):
            link, cache = self.link(target), self.caches[(target, gv)]
            failure = None if link is None else self._unreachable(link, cache)
            self.journal.probed((target, gv), synced=cache.synced(), failure=failure)
        self.journal.watch(self.caches)

    def _unreachable(self, link: TargetLink, cache: PeerCache) -> str | None:
        """Why the startup probe does not reach the target (it counts no dial: it is not a request)."""
        # The probe dials the placeholder host, rewritten to a peer endpoint on every request.
        host = f"kube.{link.target.name}.{link.target.project}.vcluster.invalid"
        reason = self._availability(cache)
        if reason is not None:
            return f"dial {host}: no usable peer ({reason.value})"
        pods = [link.target.pod_by_hostname(h) for h in cache.hosts]
        answering = any(p is not None and p.phase is PodPhase.RUNNING and p.answering for p in pods)
        if not answering or self.platform.path(self.client, link.target) is Path.CUT:
            return f"dial {host}: i/o timeout after {DIAL_TIMEOUT:g}s"
        return None

    def _mirror_namespace(self, req: ProxyRequest, target: TargetCluster) -> None:
        """The first namespaced write to a namespace the target lacks creates it there."""
        if req.verb in WRITE_VERBS and req.namespace and req.namespace not in target.namespaces:
            target.namespaces.add(req.namespace)
            self.journal.namespace_mirrored(req.namespace, target.target_label)

    # -- requests ------------------------------------------------------------------------------

    def request(self, req: ProxyRequest) -> ProxyResponse:
        """Serve one non-watch request the way the proxy would."""
        link = self.link(req.target)
        cache = self.cache(req.target, req.group_version)
        if link is None or cache is None:
            return ProxyResponse(404, Reason.UPSTREAM, 0.001, "the proxy has no such target")
        if req.upgrade:
            self.metrics.terminations.inc((req.target, Reason.UPGRADE_REJECTED.value))
            msg = "connection upgrades are not supported by the resource proxy"
            return self._finish(req, ProxyResponse(501, Reason.UPGRADE_REJECTED, 0.001, msg))
        if req.verb in WRITE_VERBS and req.namespace and req.namespace not in self.client.namespaces:
            msg = f'namespaces "{req.namespace}" not found'
            return self._finish(req, ProxyResponse(404, Reason.NAMESPACE_MISSING, 0.001, msg))
        dial = self._dial(link, cache)
        if not dial.ok:
            msg = _unavailable(link, req.group_version)
            return self._finish(req, ProxyResponse(503, dial.reason, dial.duration or 0.001, msg))
        return self._finish(req, self._forward(req, link, dial.duration or 0.0))

    def _forward(self, req: ProxyRequest, link: TargetLink, dial_time: float) -> ProxyResponse:
        elapsed = dial_time + self._request_latency(link)
        if elapsed > REQUEST_DEADLINE:
            self.metrics.terminations.inc((req.target, Reason.DEADLINE.value))
            msg = "the proxy's 60s request deadline expired"
            return ProxyResponse(504, Reason.DEADLINE, REQUEST_DEADLINE, msg)
        target = link.target
        if req.group_version in target.failing_group_versions:
            # The target's 5xx is mapped to the proxy's own 503: same text, same Retry-After.
            return ProxyResponse(503, Reason.UPSTREAM, elapsed, _unavailable(link, req.group_version))
        if target.resource(req.group_version, req.resource) is None:
            # The target's API server serves no such resource: its 404 is passed through, as for any path.
            msg = f"the server could not find the requested resource ({req.resource}.{req.group_version})"
            return ProxyResponse(404, Reason.UPSTREAM, elapsed, msg)
        refused = self._refused(req, link, elapsed)
        if refused is not None:
            return refused
        self._mirror_namespace(req, target)
        found = [
            o
            for o in target.objects
            if o.resource.group_version == req.group_version
            and o.resource.plural == req.resource
            and (req.namespace is None or o.namespace == req.namespace)
            and (req.name is None or o.name == req.name)
        ]
        if req.verb is Verb.POST:
            if found:  # `owned` isolates what a client sees, not the names it may take
                msg = f'{req.resource}.{req.group_version.split("/")[0]} "{req.name}" already exists'
                return ProxyResponse(409, Reason.UPSTREAM, elapsed, msg)
            return ProxyResponse(200, Reason.UPSTREAM, elapsed)
        if link.owned_only:
            return self._owned(req, found, elapsed)
        if req.name is not None and not found:
            return ProxyResponse(404, Reason.UPSTREAM, elapsed, f'{req.resource} "{req.name}" not found')
        return ProxyResponse(200, Reason.UPSTREAM, elapsed, objects=found)

    def _refused(self, req: ProxyRequest, link: TargetLink, elapsed: float) -> ProxyResponse | None:
        """The target's refusal of the client: its platform key (401) or its RBAC (403, or a masked 404)."""
        if self.client.name in link.target.rejected_keys:
            return ProxyResponse(401, Reason.UPSTREAM, elapsed, "auth failed")
        granted = link.target.rbac.get(self.client.identity)
        if granted is None:
            return None
        if link.owned_only and req.name is not None and req.verb in _NAMED_MUTATIONS and "get" not in granted:
            # The ownership GET before a named mutation is refused (403), and the refusal is masked as a
            # 404: isolation's label, not a failed check (that is a 5xx or an undecodable answer).
            msg = f'{req.resource} "{req.name}" not found'
            return ProxyResponse(404, Reason.OWNERSHIP_MASKED, elapsed, msg)
        verb = _RBAC_VERBS.get(req.verb, "get")
        if verb in granted:
            return None
        group = req.group_version.split("/")[0]
        msg = (
            f'{req.resource}.{group} is forbidden: User "{self.client.identity}" cannot {verb} resource '
            f'"{req.resource}" in API group "{group}"'
        )
        msg += f' in the namespace "{req.namespace}"' if req.namespace else " at the cluster scope"
        return ProxyResponse(403, Reason.UPSTREAM, elapsed, msg)

    def _owned(self, req: ProxyRequest, found: list[StoredObject], elapsed: float) -> ProxyResponse:
        mine = [o for o in found if o.labels.get(OWNER_LABEL) == self.client.owner_value]
        if req.name is None:
            # Lists get the owner selector injected: the caller sees only its own objects.
            return ProxyResponse(200, Reason.UPSTREAM, elapsed, objects=mine)
        if mine:
            return ProxyResponse(200, Reason.UPSTREAM, elapsed, objects=mine)
        reason = Reason.OWNERSHIP_MASKED if found else Reason.UPSTREAM
        return ProxyResponse(404, reason, elapsed, f'{req.resource} "{req.name}" not found')

    # -- discovery -----------------------------------------------------------------------------

    def discover(self, target: str, group_version: str) -> DiscoveryAnswer:
        """Proxied discovery when the target answers, the local fallback document otherwise."""
        link, cache = self.link(target), self.cache(target, group_version)
        if link is None or cache is None:
            return DiscoveryAnswer([], None)
        req = ProxyRequest(target, group_version, Verb.GET, "")
        # The first check is the peer cache's; the platform network server fails the dial after it.
        start_reason = cache.availability()
        dial = self._dial(link, cache)
        rejected = self.client.name in link.target.rejected_keys
        if dial.ok and group_version not in link.target.failing_group_versions and not rejected:
            self._finish(req, ProxyResponse(200, Reason.UPSTREAM, (dial.duration or 0.0) + 0.002))
            rows = [
                (r.plural, r.kind, r.namespaced, ["get", "list", "watch", "create", "update", "delete"])
                for r in link.target.resources
                if r.group_version == group_version
            ]
            return DiscoveryAnswer(rows, None)
        fallback = start_reason or Reason.UPSTREAM_ERROR
        # The first reason wins on request_total: a dial's reason survives the upstream_error fallback.
        request_reason = start_reason or (dial.reason if not dial.ok else Reason.UPSTREAM_ERROR)
        self.metrics.discovery_fallbacks.inc((target, group_version, fallback.value))
        self._finish(req, ProxyResponse(200, request_reason, (dial.duration or 0.0) + 0.001))
        return DiscoveryAnswer(self._fallback_rows(link, group_version), fallback)

    def _fallback_rows(self, link: TargetLink, group_version: str) -> list[tuple[str, str, bool, list[str]]]:
        if link.resources is None:
            return []
        rows = []
        for plural in link.resources:
            res = link.target.resource(group_version, plural)
            if res is not None:
                rows.append((res.plural, res.kind, res.namespaced, ["get"]))
        return rows

    # -- watches -------------------------------------------------------------------------------

    def open_watch(self, target: str, group_version: str, resource: str) -> Watch | None:
        link, cache = self.link(target), self.cache(target, group_version)
        if link is None or cache is None:
            return None
        req = ProxyRequest(target, group_version, Verb.WATCH, resource)
        dial = self._dial(link, cache)
        if not dial.ok:
            self._count(req, 503, dial.reason)
            return None
        self._count(req, 200, Reason.UPSTREAM)
        watch = Watch(self._next_watch, target, group_version, stalled=self.stall_streams)
        self._next_watch += 1
        self.watches[watch.ident] = watch
        return watch

    def close_watch(self, ident: int) -> None:
        self.watches.pop(ident, None)

    def deliver_events(self, target: str, count: int) -> None:
        """Object changes on a target stream to every open, unstalled watch on it."""
        for watch in self.watches.values():
            if watch.target == target and not watch.stalled and count > 0:
                self.metrics.watch_events.inc((target,), count)

    # -- exposition ----------------------------------------------------------------------------

    def render(self) -> list[str]:
        """The proxy's part of `/metrics/syncer`, with gauges computed at scrape time."""
        now = self.clock.now()
        self._busy_until = [b for b in self._busy_until if b[0] > now]
        m = self.metrics
        m.peers.values.clear()
        m.cache_synced.values.clear()
        m.list_age.values.clear()
        for (target, gv), cache in sorted(self.caches.items()):
            counts = cache.state_counts()
            for state in PeerState:
                m.peers.set((target, gv, state.value), counts[state])
            m.cache_synced.set((target, gv), 1.0 if cache.synced() else 0.0)
            age = cache.list_age()
            if age is not None:
                m.list_age.set((target, gv), round(age, 3))
        for link in self.client.links:
            label = link.target.target_label
            m.inflight.set((label,), sum(1 for _, t in self._busy_until if t == label))
            m.active_watches.set((label,), sum(1 for w in self.watches.values() if w.target == label))
        return m.render()
