"""How a firing guide alert stands right now, judged from the live snapshot (and window when given).

An alert fires from Prometheus' view a minute or more ago; the on-call engineer needs to know whether
the condition still holds: still broken, recovering (healthy again but not yet proven), or recovered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from bot.domain import alerts_catalog as catalog
from bot.domain.diagnosis_readings import Readings, describe_peers, fmt_count
from bot.domain.reasons import reason_info
from bot.domain.snapshot import (
    ACTIVE_WATCHES,
    ALL_QUARANTINED,
    DISCOVERY_FALLBACKS,
    QUARANTINES,
    REQUESTS,
    WATCH_EVENTS,
    PeerCounts,
)


class Standing(StrEnum):
    """Where a firing alert's condition is now."""

    STILL_BROKEN = "still_broken"
    RECOVERING = "recovering"
    RECOVERED = "recovered"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Now:
    """The standing of one alert, a one-line summary, and the live numbers behind it."""

    standing: Standing
    summary: str
    evidence: tuple[str, ...] = ()


def _peers(r: Readings, gv: str | None) -> dict[str, PeerCounts]:
    wanted = [gv] if gv is not None else r.group_versions()
    found = {g: r.snapshot.peers(r.target, g) for g in wanted}
    return {g: c for g, c in found.items() if c is not None}


def _peer_lines(peers: dict[str, PeerCounts]) -> tuple[str, ...]:
    return tuple(f"{gv}: {describe_peers(c)}" for gv, c in sorted(peers.items()))


def _proxy_failures(r: Readings, gv: str | None) -> float:
    """Requests that failed on the proxy path over the window (0 without a window)."""
    if r.window is None:
        return 0.0
    by = r.counter_by(REQUESTS, "group_version", "reason")
    return sum(
        n for (g, reason), n in by.items() if (gv is None or g == gv) and reason_info(reason).is_proxy_fault
    )


def _healed(r: Readings, gv: str | None, what: str, evidence: tuple[str, ...]) -> Now:
    """Healthy again: recovered when the window shows no proxy-path failures, else recovering."""
    if r.window is None:
        return Now(Standing.RECOVERING, f"{what}; no window to confirm requests succeed", evidence)
    failed = _proxy_failures(r, gv)
    if failed > 0:
        line = f"{what}, but {fmt_count(failed)} requests failed on the proxy path {r.scope}"
        return Now(Standing.RECOVERING, line, evidence)
    return Now(Standing.RECOVERED, f"{what}; no proxy-path failures {r.scope}", evidence)


def _no_gauge(r: Readings, gv: str | None) -> Now:
    where = f"{r.target} ({gv})" if gv else r.target
    return Now(
        Standing.UNKNOWN,
        f"the proxy read reports no peer gauge for {where}: another replica, or no longer proxied",
    )


def no_healthy_peers(r: Readings, gv: str | None) -> Now:
    peers = _peers(r, gv)
    if not peers:
        return _no_gauge(r, gv)
    evidence = _peer_lines(peers)
    broken = sorted(g for g, c in peers.items() if c.healthy == 0)
    if broken:
        trial = any(peers[g].half_open > 0 for g in broken)
        note = " (half_open peers on trial dials)" if trial else ""
        return Now(Standing.STILL_BROKEN, f"still no healthy peer for {', '.join(broken)}{note}", evidence)
    return _healed(r, gv, "healthy peers are back", evidence)


def peer_cache_unsynced(r: Readings, gv: str | None) -> Now:
    peers = _peers(r, gv)
    wanted = [gv] if gv is not None else r.group_versions()
    found = {g: r.snapshot.cache_synced(r.target, g) for g in wanted}
    synced = {g: s for g, s in found.items() if s is not None}
    if not synced:
        return _no_gauge(r, gv)
    evidence = (
        *(f"{g}: peer_cache_synced = {int(s)}" for g, s in sorted(synced.items())),
        *_peer_lines(peers),
    )
    unsynced = sorted(g for g, s in synced.items() if s is False)
    if unsynced:
        return Now(Standing.STILL_BROKEN, f"peer cache still unsynced for {', '.join(unsynced)}", evidence)
    empty = sorted(g for g, c in peers.items() if c.healthy == 0)
    if empty:
        line = f"synced again but no healthy peer for {', '.join(empty)}: requests still fail"
        return Now(Standing.STILL_BROKEN, line, evidence)
    return _healed(r, gv, "peer cache synced with healthy peers", evidence)


def target_unavailable(r: Readings, gv: str | None) -> Now:
    peers = _peers(r, None)
    if not peers:
        return _no_gauge(r, None)
    evidence = (
        *_peer_lines(peers),
        f"all-peers-quarantined transitions {r.scope}: {fmt_count(r.counter(ALL_QUARANTINED))}",
    )
    if not r.healthy_everywhere():
        return Now(Standing.STILL_BROKEN, "some group/version still has no healthy peer", evidence)
    if r.window is not None and r.counter(ALL_QUARANTINED) > 0:
        return Now(Standing.RECOVERING, f"healthy peers are back after quarantines {r.scope}", evidence)
    return _healed(r, None, "every group/version has healthy peers (self-healed)", evidence)


def peer_churn(r: Readings, gv: str | None) -> Now:
    peers = _peers(r, None)
    if not peers:
        return _no_gauge(r, None)
    evidence = (*_peer_lines(peers), f"quarantines {r.scope}: {fmt_count(r.counter(QUARANTINES))}")
    if r.healthy_nowhere():
        return Now(Standing.STILL_BROKEN, "still no healthy peer in any group/version", evidence)
    if r.window is not None and r.counter(QUARANTINES) > 0:
        return Now(
            Standing.RECOVERING, f"a healthy peer is back, but quarantines continue {r.scope}", evidence
        )
    return _healed(r, None, "a healthy peer is back", evidence)


def discovery_degraded(r: Readings, gv: str | None) -> Now:
    match = {"group_version": gv} if gv else {}
    peers = _peers(r, gv)
    down = sorted(g for g, c in peers.items() if c.healthy == 0)
    down += sorted(g for g in peers if r.snapshot.cache_synced(r.target, g) is False and g not in down)
    evidence = _peer_lines(peers)
    if r.window is not None:
        fallbacks = r.counter(DISCOVERY_FALLBACKS, **match)
        evidence += (f"discovery fallbacks {r.scope}: {fmt_count(fallbacks)}",)
        if fallbacks > 0:
            return Now(Standing.STILL_BROKEN, f"discovery still served from the fallback {r.scope}", evidence)
    if down:
        return Now(
            Standing.STILL_BROKEN, f"no usable peer for {', '.join(down)}: discovery falls back", evidence
        )
    if r.window is None:
        line = "peers are healthy; without a window it is unknown whether the target still refuses discovery"
        return Now(Standing.RECOVERING, line, evidence)
    return Now(Standing.RECOVERED, f"no discovery fallback {r.scope}", evidence)


def watches_silent(r: Readings, gv: str | None) -> Now:
    active = r.gauge(ACTIVE_WATCHES)
    events = r.counter(WATCH_EVENTS)
    evidence = (f"active watches: {fmt_count(active)}", f"watch events {r.scope}: {fmt_count(events)}")
    if active <= 0:
        return Now(Standing.RECOVERED, "no watch is open now", evidence)
    if events > 0:
        if r.window is None:
            return Now(
                Standing.UNKNOWN, "events were counted since start; a window is needed to see now", evidence
            )
        return Now(Standing.RECOVERED, f"watch events are flowing {r.scope}", evidence)
    return Now(Standing.STILL_BROKEN, f"watches open and no event {r.scope}", evidence)


StandingFn = Callable[[Readings, "str | None"], Now]

BY_ALERT: Mapping[str, StandingFn] = MappingProxyType(
    {
        catalog.NO_HEALTHY_PEERS: no_healthy_peers,
        catalog.PEER_CACHE_UNSYNCED: peer_cache_unsynced,
        catalog.TARGET_UNAVAILABLE: target_unavailable,
        catalog.PEER_CHURN: peer_churn,
        catalog.DISCOVERY_DEGRADED: discovery_degraded,
        catalog.WATCHES_SILENT: watches_silent,
    }
)
