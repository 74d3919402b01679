"""Blast radius, pure: of every client that forwards to one target, which ones cannot reach it now.

Read live, never assumed from the graph: each client's own peer caches for the target (`PeerReading`, one
per group/version and replica). A client has lost the target when some group/version it forwards has no
healthy peer on every replica read; it still reaches it when each has one (a peer cache that is not synced
but still holds healthy peers reaches the target: that is the client's own peer feed, said as a note);
it is unknown when its live state could not be read (said with why) or reports none of the target's caches.

`BlastRadius.sentence()` is the one line a message shows: "3 of 4 clients cannot reach platform/crd-store:
team-a (example.com/v1: no healthy peers), team-b (...), team-c (...); team-d still healthy". A target with
one client has no blast radius worth a line (`shown`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from bot.domain.alert_summary import PeerReading

SHOWN_CLIENTS = 6  # clients named in the sentence before "+N more"


class Reach(StrEnum):
    """How one client reaches the target now."""

    LOST = "lost"
    HEALTHY = "healthy"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class ClientReach:
    """One client behind a target, as read now: whether it reaches it, and what it lost or why unknown."""

    client: str
    reach: Reach
    lost: tuple[str, ...] = ()  # the group/versions with no healthy peer
    unsynced: tuple[str, ...] = ()  # the group/versions whose peer cache is not synced
    why: str | None = None  # unknown: why its state was not read

    def words(self) -> str:
        """What this client's state is, in a few words (without its name)."""
        if self.reach is Reach.UNKNOWN:
            return f"not read: {self.why}" if self.why else "not read"
        if self.reach is Reach.LOST:
            return f"{', '.join(self.lost)}: no healthy peers"
        if self.unsynced:
            return f"still healthy; peer cache unsynced for {', '.join(self.unsynced)}"
        return "still healthy"


def client_reach(
    client: str,
    group_versions: Sequence[str],
    peers: Iterable[PeerReading] | None,
    target: str,
    unavailable: str | None = None,
) -> ClientReach:
    """How `client` reaches `target` from its peer caches as read (None: its live state was not read)."""
    if peers is None:
        return ClientReach(client, Reach.UNKNOWN, why=unavailable or "no live state")
    caches = [p for p in peers if p.target == target]
    if not caches:
        return ClientReach(client, Reach.UNKNOWN, why="it reports no peer cache for this target")
    forwarded = list(group_versions) or sorted({p.group_version for p in caches})
    lost, unsynced = [], []
    for gv in forwarded:
        mine = [p for p in caches if p.group_version == gv]
        if not mine:
            continue  # not forwarded by this client after all: nothing it could lose
        if all(p.healthy <= 0 for p in mine):
            lost.append(gv)
        elif any(p.synced is False for p in mine):
            unsynced.append(gv)
    if lost:
        return ClientReach(client, Reach.LOST, lost=tuple(lost), unsynced=tuple(unsynced))
    return ClientReach(client, Reach.HEALTHY, unsynced=tuple(unsynced))


@dataclass(frozen=True, slots=True)
class BlastRadius:
    """Every client behind one target and how each reaches it now, in the fleet's listed order."""

    target: str
    clients: tuple[ClientReach, ...]

    @property
    def hit(self) -> tuple[ClientReach, ...]:
        return tuple(c for c in self.clients if c.reach is Reach.LOST)

    @property
    def healthy(self) -> tuple[ClientReach, ...]:
        return tuple(c for c in self.clients if c.reach is Reach.HEALTHY)

    @property
    def unknown(self) -> tuple[ClientReach, ...]:
        return tuple(c for c in self.clients if c.reach is Reach.UNKNOWN)

    @property
    def shown(self) -> bool:
        """Worth a line: the target has more than one client."""
        return len(self.clients) > 1

    def names(self, reach: Reach) -> tuple[str, ...]:
        return tuple(c.client for c in self.clients if c.reach is reach)

    def sentence(self, *, each: bool = True) -> str:
        """The one line: how many of the target's clients cannot reach it, each with what it lost (`each`;
        else what they lost once when they all lost the same, and only their names), then the ones still
        healthy and the ones not read."""
        total, hit = len(self.clients), self.hit
        if hit:
            head = f"{len(hit)} of {total} clients cannot reach {self.target}"
            if len(hit) == total:
                head = f"all {total} clients cannot reach {self.target}"
            if each:
                named = [f"{c.client} ({c.words()})" for c in hit]
            else:
                named = [c.client for c in hit]
                if len({c.lost for c in hit}) == 1:
                    head += f" ({hit[0].words()})"
            parts = [f"{head}: {_listed(named)}"]
        else:
            parts = [f"none of the {total} clients of {self.target} has lost it"]
        if self.healthy and hit:
            parts.append(f"{_listed([c.client for c in self.healthy])} still healthy")
        if self.unknown:
            parts.append(f"{_listed([c.client for c in self.unknown])} not read")
        return "; ".join(parts)


def _listed(names: Sequence[str]) -> str:
    shown = list(names[:SHOWN_CLIENTS])
    if len(names) > SHOWN_CLIENTS:
        shown.append(f"+{len(names) - SHOWN_CLIENTS} more")
    return ", ".join(shown)


__all__ = ["SHOWN_CLIENTS", "BlastRadius", "ClientReach", "Reach", "client_reach"]
