"""Incidents and flapping, pure: which alerts share one cause, and how often a group fired again.

One cause, one message: alerts on the same client cluster and target whose live diagnosis names the same
cause belong to one incident. The cause of an alert is read from its diagnosis, the quick-triage verdict
first (`bot.domain.verdict`), else its worst finding that names one:

    PEER_FEED   the client holds no current peer list      verdict no_peer_feed; cache_unsynced;
                (peer cache unsynced -> discovery degraded  requests or fallbacks stale_peers,
                -> probe failing)                           ts_server_unavailable
    ENDPOINTS   no healthy peer: the target's endpoints     verdict target_down or proxy_path;
                are down or unreachable (no healthy peers   no_healthy_peers, empty_peer_list,
                -> target unavailable -> peer churn)        all_quarantined, quarantine churn/flapping
    TARGET_ANSWERS  peers healthy, the target answers 503   verdict check_reason (only when no finding
    SLOW_TARGET     requests run into the 60 s deadline     or stronger verdict names another cause)

A `CauseKey` is (client cluster, target, cause). `pick_incident` decides which open incident a new group
joins: the one with its key; ResourceProxyProbeFailing (labelled by namespace and CronJob only, so it
carries no target) joins the one of its cluster, the one naming its own cause and target first.

Flapping: `Flaps` counts a group's resolve -> fire transitions within `FLAP_WINDOW_SECONDS`; from
`FLAPPING_AT` of them the group is flapping, and a note about it is due at most once per
`FLAP_NOTE_EVERY_SECONDS`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from bot.domain.alerts_catalog import about_peer_feed
from bot.domain.diagnosis import AlertDiagnosis
from bot.domain.findings import Finding, Severity
from bot.domain.verdict import Verdict

FLAP_WINDOW_SECONDS = 3600.0
FLAPPING_AT = 2  # resolve -> fire transitions within the window that make a group flapping
FLAP_NOTE_EVERY_SECONDS = 3600.0
MAX_MEMBERS = 20  # groups joined to one incident; later ones post on their own


class Cause(StrEnum):
    """What an incident is about: the one cause its alerts' diagnoses name."""

    PEER_FEED = "peer_feed"
    ENDPOINTS = "endpoints"
    TARGET_ANSWERS = "target_answers"
    SLOW_TARGET = "slow_target"


_STRONG_VERDICTS = {
    Verdict.NO_PEER_FEED: Cause.PEER_FEED,
    Verdict.TARGET_DOWN: Cause.ENDPOINTS,
    Verdict.PROXY_PATH: Cause.ENDPOINTS,
}
# Verdicts read from counters over a window: a finding naming the state behind them is preferred.
_WEAK_VERDICTS = {Verdict.CHECK_REASON: Cause.TARGET_ANSWERS, Verdict.SLOW_TARGET: Cause.SLOW_TARGET}
_KINDS = {
    "cache_unsynced": Cause.PEER_FEED,
    "no_healthy_peers": Cause.ENDPOINTS,
    "empty_peer_list": Cause.ENDPOINTS,
    "all_quarantined": Cause.ENDPOINTS,
    "quarantine_churn": Cause.ENDPOINTS,
    "quarantine_flapping": Cause.ENDPOINTS,
}
_REASONS = {
    "stale_peers": Cause.PEER_FEED,
    "ts_server_unavailable": Cause.PEER_FEED,
    "all_quarantined": Cause.ENDPOINTS,
    "no_peer": Cause.ENDPOINTS,
}


def finding_cause(finding: Finding) -> Cause | None:
    """The cause one finding names, if any (by its kind, else by the outcome reason it is about)."""
    by_kind = _KINDS.get(finding.kind)
    if by_kind is not None:
        return by_kind
    return None if finding.reason is None else _REASONS.get(finding.reason)


def cause_of(diagnosis: AlertDiagnosis) -> Cause | None:
    """The cause an alert's live diagnosis names; None when it names none (no live state, healthy)."""
    verdict = None if diagnosis.verdict is None else diagnosis.verdict.verdict
    # An alert about the client's peer feed (the catalogue says which) names that cause of its own.
    own = Cause.PEER_FEED if about_peer_feed(diagnosis.alertname) else None
    if own is not None and any(
        finding_cause(f) is own for f in diagnosis.findings if f.severity >= Severity.WARNING
    ):
        # An alert about the client's peer feed is about that while its finding stands, whatever the
        # target's state: a target that is down as well is a second cause, not this alert's.
        return own
    if verdict in _STRONG_VERDICTS:
        return _STRONG_VERDICTS[verdict]
    named = (finding_cause(f) for f in diagnosis.findings if f.severity >= Severity.INFO)
    found = next((c for c in named if c is not None), None)
    if found is not None:
        return found
    return _WEAK_VERDICTS.get(verdict) if verdict is not None else None


def group_cause(diagnoses: Iterable[AlertDiagnosis | None]) -> Cause | None:
    """The cause of a group: that of its worst alert naming one (`diagnoses` of its firing alerts)."""
    known = [d for d in diagnoses if d is not None]
    for diagnosis in sorted(known, key=lambda d: -d.severity):
        found = cause_of(diagnosis)
        if found is not None:
            return found
    return None


def probe_subject(diagnoses: Iterable[AlertDiagnosis | None]) -> tuple[str, Cause] | None:
    """The target and cause a failing probe's findings point at: its worst finding that names a cause."""
    for diagnosis in diagnoses:
        if diagnosis is None:
            continue
        for finding in diagnosis.findings:
            found = finding_cause(finding) if finding.severity >= Severity.WARNING else None
            if found is not None:
                return finding.target, found
    return None


@dataclass(frozen=True, slots=True, order=True)
class CauseKey:
    """An incident's identity: one cause on one client cluster and target."""

    cluster: str
    target: str
    cause: Cause


@dataclass(frozen=True, slots=True)
class OpenIncident:
    """An incident some alert of which still fires: its key and the group whose message carries it."""

    key: CauseKey
    anchor: str  # the group key of the incident's first message
    opened_at: float


# Causes on the target's side: clients that forward to one target and read the same one there share an
# incident (one message for every client hit). The peer feed is each client's own.
ACROSS_CLIENTS = frozenset({Cause.ENDPOINTS, Cause.TARGET_ANSWERS, Cause.SLOW_TARGET})


def pick_incident(
    key: CauseKey | None, cluster: str | None, incidents: Sequence[OpenIncident], *, probe: bool = False
) -> OpenIncident | None:
    """The open incident a new group joins, if any (`incidents`: the candidates, on the group's cluster or
    on a target it shares with another client).

    A group joins the incident of its own key, else, when its cause is on the target's side
    (`ACROSS_CLIENTS`), the oldest incident of the same target and cause on another client. A failing probe
    (no target label) joins the incident of its cluster: the one of its own key (or of its target's, on
    another client) when its findings name one, else the oldest of its cluster.
    """
    if key is not None:
        exact = next((i for i in incidents if i.key == key), None)
        if exact is not None:
            return exact
        if key.cause in ACROSS_CLIENTS:
            alike = (i for i in incidents if i.key.target == key.target and i.key.cause is key.cause)
            shared = min(alike, key=lambda i: i.opened_at, default=None)
            if shared is not None:
                return shared
        if not probe:
            return None
    if not probe or cluster is None:
        return None
    same = sorted((i for i in incidents if i.key.cluster == cluster), key=lambda i: i.opened_at)
    return same[0] if same else None


# -- flapping ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Flaps:
    """A group's resolve -> fire transitions within the flap window, and its last note about flapping."""

    refired_at: tuple[float, ...] = ()
    noted_at: float | None = None

    def record(self, now: float, *, refired: bool) -> Flaps:
        """The flaps as of `now`: transitions older than the window dropped, this one added if `refired`."""
        kept = tuple(t for t in self.refired_at if now - t < FLAP_WINDOW_SECONDS and t <= now)
        return replace(self, refired_at=(*kept, now) if refired else kept)

    def count(self, now: float) -> int:
        """Transitions within the window ending at `now`."""
        return sum(1 for t in self.refired_at if 0 <= now - t < FLAP_WINDOW_SECONDS)

    def flapping(self, now: float) -> bool:
        return self.count(now) >= FLAPPING_AT

    def note_due(self, now: float) -> bool:
        """Whether a note about flapping goes out now: flapping, and none within the last period."""
        recent = self.noted_at is not None and now - self.noted_at < FLAP_NOTE_EVERY_SECONDS
        return self.flapping(now) and not recent

    def noted(self, now: float) -> Flaps:
        return replace(self, noted_at=now)


# -- what the incident's message shows -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IncidentLine:
    """One group that joined an incident, as its line on the incident's message."""

    names: tuple[str, ...]
    target: str | None
    group_versions: tuple[str, ...]
    severity: Severity
    firing: bool
    since: datetime | None
    resolved_at: datetime | None = None
    flaps: int = 0
    cronjob: str | None = None  # a failing probe's `<namespace>/<cronjob>` (it has no target)
    alerts: int = 1  # the group's firing alerts (one per group/version and replica)
    cluster: str | None = None  # its client, when another than the message's own (a shared target)


@dataclass(frozen=True, slots=True)
class IncidentView:
    """What a group's message shows beyond its own alerts: the incident it carries and its flapping."""

    cause: Cause | None = None
    names: tuple[str, ...] = ()  # every alert name of the incident, the message's own first
    members: tuple[IncidentLine, ...] = ()
    flaps: int = 0  # the group's own resolve -> fire transitions in the flap window

    @property
    def any_member_firing(self) -> bool:
        return any(m.firing for m in self.members)

    @property
    def flapping(self) -> bool:
        return self.flaps >= FLAPPING_AT

    @property
    def shown(self) -> bool:
        """Whether there is anything to show (members, or flapping)."""
        return bool(self.members) or self.flapping


def leading_member(own: Severity, incident: IncidentView | None) -> IncidentLine | None:
    """The firing member that pages harder than the message's own alert, if any (the most severe; the
    first to join on a tie): what pages leads the incident's headline, and the message's colour."""
    if incident is None:
        return None
    harder = [m for m in incident.members if m.firing and m.severity > own]
    return max(harder, key=lambda m: m.severity, default=None)


__all__ = [
    "ACROSS_CLIENTS",
    "FLAPPING_AT",
    "FLAP_NOTE_EVERY_SECONDS",
    "FLAP_WINDOW_SECONDS",
    "MAX_MEMBERS",
    "Cause",
    "CauseKey",
    "Flaps",
    "IncidentLine",
    "IncidentView",
    "OpenIncident",
    "cause_of",
    "finding_cause",
    "group_cause",
    "leading_member",
    "pick_incident",
    "probe_subject",
]
