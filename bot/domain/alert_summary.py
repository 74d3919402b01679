"""What an alert group's compact message folds, neutral: peer states read live per group/version and
replica, findings that say the same thing across group/versions, replicas and targets, the one trap that
applies now, the worst state an incident reached, and the links an on-call engineer opens.

Nothing here knows Slack; `bot/render/alert_message.py` turns it into words. Titles and label values are
outside text: the renderers escape them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from urllib.parse import quote, urlsplit

from bot.domain import alerts_catalog as catalog
from bot.domain.alert_standing import Standing
from bot.domain.diagnosis import AlertDiagnosis
from bot.domain.findings import Finding, Severity
from bot.domain.snapshot import ProxySnapshot

# Peer caches a view keeps (a group about many targets would otherwise carry hundreds).
MAX_PEER_READINGS = 60
# Slack refuses a button URL longer than this.
MAX_URL = 3000
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


# -- peer states ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PeerReading:
    """One peer cache as read live: its target, group/version and replica, peers per state, synced."""

    target: str
    group_version: str
    healthy: float
    quarantined: float
    half_open: float
    synced: bool | None
    replica: str | None = None

    @property
    def state(self) -> tuple[float, float, float, bool | None]:
        return (self.healthy, self.quarantined, self.half_open, self.synced)


def peer_readings(
    snapshot: ProxySnapshot, targets: Iterable[str], replica: str | None = None
) -> tuple[PeerReading, ...]:
    """Every peer cache of `targets` in the snapshot (targets it does not report are skipped)."""
    found: list[PeerReading] = []
    known = set(snapshot.targets())
    for target in sorted(set(targets) & known):
        for gv in snapshot.group_versions(target):
            peers = snapshot.peers(target, gv)
            if peers is not None:
                synced = snapshot.cache_synced(target, gv)
                found.append(
                    PeerReading(
                        target, gv, peers.healthy, peers.quarantined, peers.half_open, synced, replica
                    )
                )
    return tuple(found[:MAX_PEER_READINGS])


@dataclass(frozen=True, slots=True)
class PeerCacheState:
    """One state of peer caches (peers per state, synced) and the caches that share it."""

    healthy: float
    quarantined: float
    half_open: float
    synced: bool | None
    caches: tuple[PeerReading, ...]

    @property
    def broken(self) -> bool:
        return self.healthy == 0 or self.synced is False


def fold_peers(readings: Sequence[PeerReading]) -> list[PeerCacheState]:
    """Peer caches grouped by identical state, the worst state first (no healthy peer, unsynced)."""
    by_state: dict[tuple[float, float, float, bool | None], list[PeerReading]] = {}
    for reading in readings:
        by_state.setdefault(reading.state, []).append(reading)
    states = [PeerCacheState(*state, caches=tuple(caches)) for state, caches in by_state.items()]
    return sorted(states, key=lambda s: (not s.broken, s.healthy, s.synced is not False, -len(s.caches)))


# -- findings ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FoldedFinding:
    """Findings that say the same thing about several group/versions, replicas or targets, as one.

    `title` is the shared title without the place prefix; numbers that differ between them are joined
    ("298/398 requests ..."). `finding` is the first of them (its cause and next step stand for all)."""

    finding: Finding
    title: str
    targets: tuple[str, ...]
    group_versions: tuple[str, ...]
    replicas: tuple[str, ...]
    count: int

    @property
    def severity(self) -> Severity:
        return self.finding.severity


def fold_findings(found: Iterable[tuple[Finding, str | None]]) -> list[FoldedFinding]:
    """(finding, replica that reported it) pairs folded, worst first, then the most widespread."""
    groups: dict[tuple[object, ...], list[tuple[Finding, str | None]]] = {}
    seen: set[tuple[str, str | None]] = set()
    for finding, replica in found:
        if (finding.key, replica) in seen:
            continue
        seen.add((finding.key, replica))
        bare = _bare_title(finding)
        key = (finding.severity, finding.kind, finding.reason, _NUMBER.sub("#", bare))
        groups.setdefault(key, []).append((finding, replica))
    folded = [_fold(members) for members in groups.values()]
    return sorted(folded, key=lambda f: (-f.severity, -f.count, f.title))


def _bare_title(f: Finding) -> str:
    """The title without the `target: ` and `group/version: ` it starts with, if it does."""
    title = f.title
    for prefix in (f.target, f.group_version):
        if prefix and title.startswith(f"{prefix}: "):
            title = title[len(prefix) + 2 :]
    return title


def _fold(members: list[tuple[Finding, str | None]]) -> FoldedFinding:
    titles = [_bare_title(f) for f, _ in members]
    return FoldedFinding(
        finding=members[0][0],
        title=_merge_numbers(titles),
        targets=_distinct(f.target for f, _ in members),
        group_versions=_distinct(f.group_version for f, _ in members),
        replicas=_distinct(r for _, r in members),
        count=len({f.key for f, _ in members}),
    )


def _merge_numbers(titles: Sequence[str]) -> str:
    """Titles equal but for their numbers, as one: a number that differs becomes its range (`54-70`)."""
    parts = _NUMBER.split(titles[0])
    numbers = [_NUMBER.findall(t) for t in titles]
    out = [parts[0]]
    for i, rest in enumerate(parts[1:]):
        values = sorted({n[i] for n in numbers if i < len(n)}, key=_number)
        out.append(values[0] if len(values) == 1 else f"{values[0]}-{values[-1]}")
        out.append(rest)
    return "".join(out)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _distinct(values: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(sorted({v for v in values if v}))


# -- the one trap that applies now ---------------------------------------------------------------------


def _kinds(d: AlertDiagnosis) -> set[str]:
    return {f.kind for f in d.findings}


def _bad_kinds(d: AlertDiagnosis) -> set[str]:
    return {f.kind for f in d.findings if f.severity >= Severity.WARNING}


TrapRule = Callable[[AlertDiagnosis], int]

# Which of an alert's traps (its index in the catalogue) applies to the state the diagnosis found.
_TRAP_NOW: Mapping[str, TrapRule] = MappingProxyType(
    {
        # A fresh empty list is synced: say so when that is what we see; else: never sum across caches.
        catalog.NO_HEALTHY_PEERS: lambda d: 1 if "empty_peer_list" in _kinds(d) else 0,
        # A high peer list age is on screen: it is not the cause. Still broken: the APIService lies.
        catalog.PEER_CACHE_UNSYNCED: lambda d: (
            2 if "peer_list_age_hint" in _kinds(d) else 0 if d.standing is Standing.STILL_BROKEN else 1
        ),
        # Proxy metrics look healthy: they do not clear the probe. Failing: one failed run is not the story.
        catalog.PROBE_FAILING: lambda d: 1 if _bad_kinds(d) else 0,
        # Events flowing or no watch open: idle resources are the likely story; else the stream format.
        catalog.WATCHES_SILENT: lambda d: 0 if d.standing is Standing.STILL_BROKEN else 1,
    }
)


def current_trap(d: AlertDiagnosis) -> str | None:
    """The one "watch out" of the alert that applies to the state its diagnosis found, if it has any."""
    if not d.traps:
        return None
    rule = _TRAP_NOW.get(d.alertname)
    index = 0 if rule is None else rule(d)
    return d.traps[min(index, len(d.traps) - 1)]


# -- the worst state of an incident --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorstSeen:
    """The worst state an incident reached: its severity and what it was, in the finding's words."""

    severity: Severity
    what: str

    def worse(self, other: WorstSeen | None) -> WorstSeen:
        """The worse of the two; the earlier one on a tie (the incident reached it first)."""
        return self if other is None or self.severity > other.severity else other


def worst_of(folded: Sequence[FoldedFinding]) -> WorstSeen | None:
    """What the worst folded finding says, with how widely it held; None without findings."""
    top = next((f for f in folded if f.severity >= Severity.WARNING), None)
    if top is None:
        return None
    spread = _spread(top)
    return WorstSeen(top.severity, top.title + (f" ({spread})" if spread else ""))


def _spread(f: FoldedFinding) -> str:
    parts = []
    if len(f.targets) > 1:
        parts.append(f"{len(f.targets)} targets")
    if len(f.group_versions) > 1:
        parts.append(f"{len(f.group_versions)} group/versions")
    if len(f.replicas) > 1:
        parts.append(f"{len(f.replicas)} replicas")
    return ", ".join(parts)


# -- links ---------------------------------------------------------------------------------------------


def web_link(url: str) -> str | None:
    """`url` when it is an absolute http(s) URL Slack takes for a link button, else None."""
    if not url or len(url) > MAX_URL or any(c.isspace() or ord(c) < 32 for c in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return url if parts.scheme in ("http", "https") and parts.hostname else None


def silence_page(external_url: str, labels: Mapping[str, str]) -> str | None:
    """Alertmanager's new-silence page for `labels` (its own Slack template's link), or None.

    The filter is `{alertname="X", k="v", ...}` as Alertmanager's `__alert_silence_link` builds it."""
    base = web_link(external_url)
    if base is None or not labels:
        return None
    pairs = sorted((k, v) for k, v in labels.items() if k != "alertname")
    if "alertname" in labels:
        pairs.append(("alertname", labels["alertname"]))
    matchers = ", ".join(f'{k}="{_quoted(v)}"' for k, v in pairs)
    return web_link(f"{base.rstrip('/')}/#/silences/new?filter={quote('{' + matchers + '}', safe='')}")


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def common_labels(label_sets: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """The labels every set carries with the same value (Alertmanager's `commonLabels` of a share)."""
    sets = list(label_sets)
    if not sets:
        return {}
    first = sets[0]
    return {k: v for k, v in first.items() if all(s.get(k) == v for s in sets[1:])}
