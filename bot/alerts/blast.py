"""The blast radius of an alert's target, read in the alert's own round: every client behind the target.

A target that several clients forward to (`Settings.forwarders`) gets each of those clients read live with
the notification's own reads (`sources`: the clients' live-state sources, started with the alert's, inside
the same enrichment budget), and each channel's share of the notification gets the `BlastRadius` of its
targets (`radii`), judged from each client's own peer caches (`bot.domain.blast`). A client whose read
was late or failed is "not read", with why; nothing waits beyond the budget.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from bot.alerts.grouping import Reading, Routed
from bot.domain.alert_summary import PeerReading, peer_readings
from bot.domain.blast import BlastRadius, ClientReach, client_reach
from config.settings import Settings

MAX_TARGETS = 3  # targets of one share given a blast radius (a storm's many go to its table instead)


def sources(settings: Settings, routed: Iterable[Routed]) -> dict[str, tuple[str, ...]]:
    """The live-state sources of every client behind each shared target of `routed`, by client: the
    sources the alerts read already for their own client, else the client itself."""
    routed = list(routed)
    own: dict[str, set[str]] = {}
    for r in routed:
        if r.cluster is not None and r.source is not None:
            own.setdefault(r.cluster, set()).add(r.source)
    wanted: dict[str, tuple[str, ...]] = {}
    for target in _targets(routed):
        behind = settings.forwarders(target)
        if len(behind) < 2:
            continue
        for cluster, _ in behind:
            wanted.setdefault(cluster.name, tuple(sorted(own.get(cluster.name, {cluster.name}))))
    return wanted


def radii(
    settings: Settings,
    routed: Sequence[Routed],
    readings: Mapping[str, Reading],
    by_client: Mapping[str, tuple[str, ...]],
) -> tuple[BlastRadius, ...]:
    """The blast radius of each shared target of one channel's share, from the round's readings."""
    found = []
    for target in _targets(routed):
        behind = settings.forwarders(target)
        if len(behind) < 2:
            continue
        reaches = [
            _reach(cluster.name, entry.group_versions, target, readings, by_client.get(cluster.name, ()))
            for cluster, entry in behind
        ]
        found.append(BlastRadius(target, tuple(reaches)))
    return tuple(found)


def _reach(
    client: str,
    group_versions: Sequence[str],
    target: str,
    readings: Mapping[str, Reading],
    sources: Sequence[str],
) -> ClientReach:
    peers: list[PeerReading] = []
    missing: list[str] = []
    for source in sources:
        read = readings.get(source)
        if read is None or read.snapshot is None:
            missing.append((read.live.unavailable if read is not None else None) or "no live state")
            continue
        peers.extend(peer_readings(read.snapshot, [target], read.live.replica))
    if not peers and missing:
        return client_reach(client, group_versions, None, target, missing[0])
    return client_reach(client, group_versions, peers, target)


def _targets(routed: Iterable[Routed]) -> list[str]:
    """The targets of firing alerts of a client (in first-seen order), at most `MAX_TARGETS`."""
    seen: dict[str, None] = {}
    for r in routed:
        target = r.alert.labels.get("target")
        if target and r.cluster is not None and r.alert.firing:
            seen.setdefault(target, None)
    return list(seen)[:MAX_TARGETS]


__all__ = ["MAX_TARGETS", "radii", "sources"]
