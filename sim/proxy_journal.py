"""What the proxy of one client replica writes to its log, at the moments the model reaches them.

At start, the startup pair per group/version; the startup probe once the first peer list arrived (or
after a minute without one); a quarantine when a dial failure makes one; the peer watch once the cached
list is distrusted; a namespace mirrored to the target on its first write there.
"""

from __future__ import annotations

from collections.abc import Mapping

from sim.clock import Clock
from sim.names import STALE_AFTER_SECONDS
from sim.peers import DialOutcome, HostHealth, PeerCache
from sim.syncer_log import (
    ALL_QUARANTINED,
    CREATING_NAMESPACE,
    INITIAL_PROBE_FAILED,
    QUARANTINING,
    STARTING_PROXY,
    STARTING_TRANSPORT,
    STARTUP_SYNC_TIMEOUT,
    WATCH_DOWN,
    FieldValue,
    SyncerLog,
    go_duration,
)

# How long the startup probe waits for the first peer list (the log reference: "within 1 minute").
STARTUP_SYNC_SECONDS = 60.0
_CALLER = "proxy/proxy.go"
CacheKey = tuple[str, str]  # (target label, group/version)


class ProxyJournal:
    """The log of one proxy process and what it has already said about each of its peer caches."""

    def __init__(self, clock: Clock, caches: Mapping[CacheKey, PeerCache]) -> None:
        self.clock = clock
        self.log = SyncerLog(clock)
        self.booted_at = clock.now()
        self._probing = set(caches)  # caches whose startup probe has not run yet
        self._stale_logged: set[CacheKey] = set()
        for target, gv in caches:
            fields = {"target": target, "groupVersion": gv}
            self.log.info(_CALLER, STARTING_PROXY, fields)
            self.log.info("proxy/transport.go", STARTING_TRANSPORT, fields)

    def probes_due(self, caches: Mapping[CacheKey, PeerCache]) -> list[CacheKey]:
        """Caches whose startup probe runs now: their first list arrived, or a minute passed without."""
        waited = self.clock.now() - self.booted_at
        due = [k for k in sorted(self._probing) if caches[k].synced() or waited >= STARTUP_SYNC_SECONDS]
        self._probing.difference_update(due)
        return due

    def probed(self, key: CacheKey, *, synced: bool, failure: str | None) -> None:
        """The startup probe of one cache ran; `failure` says why it did not reach the target."""
        fields = {"target": key[0], "groupVersion": key[1]}
        if not synced:
            self.log.error(_CALLER, STARTUP_SYNC_TIMEOUT, fields)
        if failure is not None:
            self.log.error(_CALLER, INITIAL_PROBE_FAILED, fields | {"error": failure})

    def watch(self, caches: Mapping[CacheKey, PeerCache]) -> None:
        """Say once per outage that a cache's peer watch is down and its list is no longer trusted."""
        for key, cache in sorted(caches.items()):
            if not cache.is_stale():
                self._stale_logged.discard(key)
                continue
            if key in self._stale_logged:
                continue
            self._stale_logged.add(key)
            age = cache.list_age()
            fields = {"target": key[0], "groupVersion": key[1]}
            fields["lastNetmapAge"] = go_duration(age if age is not None else STALE_AFTER_SECONDS)
            self.log.error("proxy/peers.go", WATCH_DOWN, fields)

    def dial_failed(self, target: str, cache: PeerCache, host: HostHealth, outcome: DialOutcome) -> None:
        if outcome.quarantined:
            fields: dict[str, FieldValue] = {"host": host.hostname}
            fields["consecutiveFailures"] = host.consecutive_failures
            self.log.info("proxy/dialer.go", QUARANTINING, fields | {"target": target})
        if outcome.left_none_selectable:
            self.log.error(
                "proxy/dialer.go", ALL_QUARANTINED, {"target": target, "groupVersion": cache.group_version}
            )

    def namespace_mirrored(self, namespace: str, target: str) -> None:
        self.log.info("proxy/namespaces.go", CREATING_NAMESPACE, {"namespace": namespace, "target": target})
