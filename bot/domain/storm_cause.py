"""The common cause of a storm, with its evidence when the live state shows one.

Read from the storm's rows (every target with its live state), failing targets only (firing, not healthy
now); a target the proxy reports nothing for, or whose cluster was not read, proves nothing and is only
counted. A cause is stated when every judged failing target shows it and those make up most of the
failing ones:

    one target failing from several clients            -> the target
    one client, every failing target's cache unsynced  -> that client's peer feed (peer_cache_synced 0)
    one client, every failing target's dial p99 >= 4 s -> that client's network path (5 s dial timeout)
    several clients, each with the same one of these   -> the platform, which every client shares

Without such evidence the storm's shape gives a suspicion only (`evidence` False): many targets of several
clients -> the shared platform path; of one client -> that client; one target -> that target.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from bot.domain.storm_targets import StormRow


class CommonCause(StrEnum):
    """What many alerts at once most likely share (the relay makes the platform a shared failure domain)."""

    PEER_FEED = "peer_feed"  # one client's peer list from the platform
    NETWORK_PATH = "network_path"  # one client's network path to its targets
    PLATFORM_PATH = "platform_path"  # many targets across several clients
    CLIENT_CLUSTER = "client_cluster"  # many targets of one client
    ONE_TARGET = "one_target"  # many alerts, one target
    HEALTHY_NOW = "healthy_now"  # every target still firing reads healthy now
    UNCLEAR = "unclear"


@dataclass(frozen=True, slots=True)
class StormCause:
    """The storm's common cause, and what it rests on."""

    kind: CommonCause
    evidence: bool = False  # shown by the live state (else suspected from the storm's shape)
    cluster: str | None = None  # the client it is about
    target: str | None = None  # the target it is about
    failing: int = 0  # failing targets it covers
    judged: int = 0  # of them, the ones with a reading (the rest: no series, not read)
    clusters: int = 0  # clients it covers
    via: CommonCause | None = None  # for the platform: what every client showed
    dial_p99: tuple[float, float] | None = None  # lowest and highest dial p99 behind a network path cause


def shape_cause(targets: int, clusters: int, alerts: int) -> CommonCause:
    """A suspicion from the storm's shape alone (how many targets, clients and alerts)."""
    if targets >= 3 and clusters >= 2:
        return CommonCause.PLATFORM_PATH
    if targets >= 3 and clusters == 1:
        return CommonCause.CLIENT_CLUSTER
    if targets == 1 and alerts >= 2:
        return CommonCause.ONE_TARGET
    return CommonCause.UNCLEAR


def judge_cause(rows: Sequence[StormRow], shape: CommonCause) -> StormCause:
    """The cause the rows show, else the storm's `shape` as a suspicion."""
    failing = [r for r in rows if r.failing]
    if not failing:
        firing = any(not r.resolved for r in rows)
        return StormCause(CommonCause.HEALTHY_NOW if firing else shape)
    targets = {r.target for r in failing}
    clusters = {r.cluster for r in failing}
    if len(targets) == 1 and len(clusters) >= 2 and None not in targets:
        return _one_target(failing)
    per_cluster = [cluster_cause(group) for group in _by_cluster(failing).values()]
    if len(per_cluster) == 1 and per_cluster[0] is not None:
        return per_cluster[0]
    kinds = {c.kind if c is not None else None for c in per_cluster}
    if len(per_cluster) >= 2 and len(kinds) == 1 and None not in kinds:
        found = [c for c in per_cluster if c is not None]
        return StormCause(
            CommonCause.PLATFORM_PATH,
            evidence=True,
            failing=sum(c.failing for c in found),
            judged=sum(c.judged for c in found),
            clusters=len(found),
            via=found[0].kind,
        )
    return StormCause(shape, failing=len(failing), clusters=len(clusters))


def cluster_cause(failing: Sequence[StormRow]) -> StormCause | None:
    """The live cause behind one client's failing targets, when they all show the same one."""
    judged = [r for r in failing if r.live.state.judged]
    if not judged or 2 * len(judged) <= len(failing):
        return None
    cluster = failing[0].cluster
    if all(r.live.synced is False for r in judged):
        return StormCause(CommonCause.PEER_FEED, True, cluster, None, len(failing), len(judged), 1)
    if all(r.live.slow_dials for r in judged):
        dials = [r.live.dial_p99 for r in judged if r.live.dial_p99 is not None]
        return StormCause(
            CommonCause.NETWORK_PATH,
            True,
            cluster,
            None,
            len(failing),
            len(judged),
            1,
            dial_p99=(min(dials), max(dials)),
        )
    return None


def _one_target(failing: Sequence[StormRow]) -> StormCause:
    judged = sum(1 for r in failing if r.live.state.judged)
    clusters = len({r.cluster for r in failing})
    target = failing[0].target
    return StormCause(CommonCause.ONE_TARGET, judged > 0, None, target, len(failing), judged, clusters)


def _by_cluster(rows: Sequence[StormRow]) -> dict[str | None, list[StormRow]]:
    found: dict[str | None, list[StormRow]] = defaultdict(list)
    for row in rows:
        found[row.cluster].append(row)
    return found
