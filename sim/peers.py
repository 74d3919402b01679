"""One proxy's peer cache for one group/version: the peer list, the watch that feeds it, host health."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sim.clock import Clock
from sim.names import QUARANTINE_AFTER_FAILURES, QUARANTINE_SECONDS, STALE_AFTER_SECONDS, PeerState, Reason


@dataclass
class HostHealth:
    """Dial history of one peer endpoint (a target control-plane pod's hostname)."""

    hostname: str
    consecutive_failures: int = 0
    quarantined_until: float | None = None
    # After a quarantine expires the host gets exactly one trial dial.
    on_trial: bool = False

    def state(self, now: float) -> PeerState:
        if self.quarantined_until is not None and now < self.quarantined_until:
            return PeerState.QUARANTINED
        if self.quarantined_until is not None:
            return PeerState.HALF_OPEN
        return PeerState.HEALTHY


@dataclass(frozen=True)
class DialOutcome:
    """What a dial result did to the cache: counter transitions for the metrics."""

    quarantined: bool = False
    left_none_selectable: bool = False
    recovered: bool = False


class PeerCache:
    """Peer list + subscription state + per-host quarantine, as one replica keeps it per group/version."""

    def __init__(self, clock: Clock, group_version: str) -> None:
        self.clock = clock
        self.group_version = group_version
        self.hosts: dict[str, HostHealth] = {}
        self.last_list_at: float | None = None
        self.subscribed = True
        self.dropped_at: float | None = None

    # -- the peer-watch subscription -----------------------------------------------------------

    def publish(self, hostnames: Iterable[str]) -> None:
        """A new peer list arrived: known hosts keep their health, new ones start healthy."""
        if not self.subscribed:
            return
        names = list(hostnames)
        self.hosts = {h: self.hosts.get(h, HostHealth(h)) for h in names}
        self.last_list_at = self.clock.now()

    def drop_subscription(self) -> None:
        if self.subscribed:
            self.subscribed = False
            self.dropped_at = self.clock.now()

    def restore_subscription(self, hostnames: Iterable[str]) -> None:
        """The watch is back: it re-lists at once, which resets the staleness clock."""
        self.subscribed = True
        self.dropped_at = None
        self.publish(hostnames)

    def is_stale(self) -> bool:
        return self.dropped_at is not None and self.clock.now() - self.dropped_at > STALE_AFTER_SECONDS

    def synced(self) -> bool:
        """A current, trusted snapshot exists (an empty one counts: the guide says so)."""
        return self.last_list_at is not None and not self.is_stale()

    def list_age(self) -> float | None:
        return None if self.last_list_at is None else self.clock.now() - self.last_list_at

    # -- host selection and health -------------------------------------------------------------

    def state_counts(self) -> dict[PeerState, int]:
        counts = dict.fromkeys(PeerState, 0)
        now = self.clock.now()
        for host in self.hosts.values():
            counts[host.state(now)] += 1
        return counts

    def _selectable(self) -> list[HostHealth]:
        now = self.clock.now()
        healthy = [h for h in self.hosts.values() if h.state(now) is PeerState.HEALTHY]
        trials = [h for h in self.hosts.values() if h.state(now) is PeerState.HALF_OPEN and not h.on_trial]
        return healthy + trials

    def availability(self) -> Reason | None:
        """Why no dial can start (the peer-availability reasons), or None when one can."""
        if self.last_list_at is None or not self.hosts:
            return Reason.NO_PEER
        if self.is_stale():
            return Reason.STALE_PEERS
        if not self._selectable():
            return Reason.ALL_QUARANTINED
        return None

    def choose(self, pick: int) -> HostHealth | None:
        """The host for the next dial; `pick` spreads load (the caller's random draw)."""
        candidates = self._selectable()
        if not candidates:
            return None
        host = candidates[pick % len(candidates)]
        if host.state(self.clock.now()) is PeerState.HALF_OPEN:
            host.on_trial = True
        return host

    def record_success(self, host: HostHealth) -> DialOutcome:
        recovered = host.consecutive_failures > 0 or host.quarantined_until is not None
        host.consecutive_failures = 0
        host.quarantined_until = None
        host.on_trial = False
        return DialOutcome(recovered=recovered)

    def record_failure(self, host: HostHealth) -> DialOutcome:
        was_trial = host.on_trial
        host.on_trial = False
        host.consecutive_failures += 1
        if not was_trial and host.consecutive_failures < QUARANTINE_AFTER_FAILURES:
            return DialOutcome()
        # The third failure in a row, or a failed trial dial, (re)starts a quarantine.
        host.quarantined_until = self.clock.now() + QUARANTINE_SECONDS
        return DialOutcome(quarantined=True, left_none_selectable=not self._selectable())
