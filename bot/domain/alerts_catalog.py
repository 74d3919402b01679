"""The guide's alert rules, as data: severity, meaning, traps, and which live evidence to read.

Unknown alert names give None: callers then post the alert as it came, without a diagnosis template.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from bot.domain.findings import Severity
from bot.domain.guide import ALERT_STARTING_POINTS, SYNTHETIC_PROBE
from bot.domain.snapshot import (
    ACTIVE_WATCHES,
    ALL_QUARANTINED,
    DIAL_DURATION,
    DIAL_FAILURES,
    DISCOVERY_FALLBACKS,
    PEER_CACHE_SYNCED,
    PEER_LIST_AGE,
    PEERS,
    QUARANTINES,
    RECOVERIES,
    REQUESTS,
    WATCH_EVENTS,
)

NO_HEALTHY_PEERS = "ResourceProxyNoHealthyPeers"
PEER_CACHE_UNSYNCED = "ResourceProxyPeerCacheUnsynced"
TARGET_UNAVAILABLE = "ResourceProxyTargetUnavailable"
PEER_CHURN = "ResourceProxyPeerChurn"
DISCOVERY_DEGRADED = "ResourceProxyDiscoveryDegraded"
WATCHES_SILENT = "ResourceProxyWatchesSilent"
PROBE_FAILING = "ResourceProxyProbeFailing"


class AlertScope(StrEnum):
    """What one alert instance is about: which labels identify it."""

    GROUP_VERSION = "group_version"  # target + group_version (+ pod): one peer cache
    TARGET = "target"  # target (+ pod)
    PROBE = "probe"  # namespace + cronjob of the synthetic probe; no target label


@dataclass(frozen=True, slots=True)
class AlertInfo:
    """One guide alert: how bad, what it means, what misleads people, where to look."""

    name: str
    severity: Severity
    scope: AlertScope
    meaning: str
    traps: tuple[str, ...]
    cause: str
    next_step: str
    live_evidence: tuple[str, ...]  # metric families to read from the client cluster right now
    guide_section: str = ALERT_STARTING_POINTS
    for_duration: str | None = None
    # About the client's peer feed (its peer list from the platform): a cause of its own, beside a target
    # that is down as well.
    peer_feed: bool = False


_ENTRIES = (
    AlertInfo(
        name=NO_HEALTHY_PEERS,
        severity=Severity.CRITICAL,
        scope=AlertScope.GROUP_VERSION,
        for_duration="2m",
        meaning="For two minutes this group/version's peer cache has had no fully healthy peer: requests "
        "fail, or get at most a single trial dial against a half_open peer.",
        traps=(
            "Do not sum across group_version or pod: each group/version and each HA replica has its own "
            "cache, and one healthy series would hide a degraded one.",
            "peer_cache_synced=1 does not mean an endpoint exists: a fresh empty peer list is still synced.",
            "Unlike the transition counters, this also catches a proxy pod that started already degraded.",
        ),
        cause="The target's endpoints are down or unreachable (restart, dead endpoint, network path), "
        "or the peer list is empty.",
        next_step="Check the target tenant cluster's control plane pods, then dial failures by reason and "
        "the path check (direct vs relay).",
        live_evidence=(PEERS, PEER_CACHE_SYNCED, DIAL_FAILURES, QUARANTINES, RECOVERIES, REQUESTS),
    ),
    AlertInfo(
        name=PEER_CACHE_UNSYNCED,
        severity=Severity.CRITICAL,
        scope=AlertScope.GROUP_VERSION,
        for_duration="2m",
        meaning="No current, trusted peer snapshot: resource requests to this target fail fast with 503 "
        "(Retry-After: 1) while discovery is answered from the local fallback.",
        traps=(
            "The APIService stays Available because discovery falls back locally; real requests still fail.",
            "Covers both a peer list that never arrived and one that aged out 60 s after the peer watch "
            "dropped.",
            "peer_list_age_seconds is not the staleness clock: do not read a high age as the cause.",
        ),
        cause="No peer list since startup (platform connectivity or license), or the peer watch to the "
        "platform dropped for more than 60 s.",
        next_step="Check the client control plane's connectivity to the platform, the platform pods and the "
        "license; look for ts_server_unavailable and stale_peers in dial failures.",
        live_evidence=(PEER_CACHE_SYNCED, PEERS, PEER_LIST_AGE, DIAL_FAILURES, DISCOVERY_FALLBACKS),
        peer_feed=True,
    ),
    AlertInfo(
        name=TARGET_UNAVAILABLE,
        severity=Severity.WARNING,
        scope=AlertScope.TARGET,
        meaning="In the last 10 minutes a quarantine transition left no peer selectable for new requests; "
        "while that lasted, resource requests failed fast with 503 and discovery fell back.",
        traps=(
            "A target rolling restart quarantines every old endpoint and heals within seconds: this alone is "
            "not a page. ResourceProxyNoHealthyPeers is the paging rule while requests still fail.",
        ),
        cause="Every endpoint failed 3 dials in a row: a target restart, a dead endpoint, or a broken path.",
        next_step="Check whether healthy peers are back now; if not, follow ResourceProxyNoHealthyPeers. "
        "Otherwise check whether the target restarted around the alert.",
        live_evidence=(ALL_QUARANTINED, PEERS, QUARANTINES, RECOVERIES, DIAL_FAILURES),
    ),
    AlertInfo(
        name=PEER_CHURN,
        severity=Severity.WARNING,
        scope=AlertScope.TARGET,
        meaning="More than 5 quarantines in 30 minutes and no healthy peer in any group/version of the "
        "target: peers are quarantined over and over without recovering.",
        traps=(
            "This rule deliberately takes the max over group/versions: it fires only when every "
            "group/version proxy of the target has zero healthy peers.",
            "A replacement endpoint from a new peer list starts healthy without counting a recovery.",
        ),
        cause="A dead or stale endpoint that is re-quarantined every cycle (stale peer cleanup on the "
        "platform), or a flapping target.",
        next_step="Compare the peer list with the target's actual control plane pods; upgrade the platform "
        "and vCluster if stale peers linger; check the target for restarts.",
        live_evidence=(QUARANTINES, RECOVERIES, PEERS, DIAL_FAILURES, DIAL_DURATION),
    ),
    AlertInfo(
        name=DISCOVERY_DEGRADED,
        severity=Severity.WARNING,
        scope=AlertScope.GROUP_VERSION,
        for_duration="5m",
        meaning="Discovery for this group/version is served from the local fallback document: callers get "
        "a 200 and the APIService looks Available while real requests are likely failing.",
        traps=(
            "A healthy-looking APIService proves nothing here: the fallback keeps it Available.",
            "The fallback lists explicit resources with only the `get` verb (wildcards: an empty list), so "
            "tools that check verbs may misbehave.",
            "request_total keeps the first reason (a dial reason) even when the fallback counter says "
            "upstream_error for the same request.",
        ),
        cause="The peer check failed (no_peer, stale_peers, all_quarantined), or discovery got 401, 404 or "
        "5xx after it (upstream_error): the target's answer, or a failed dial the proxy turned into a 5xx.",
        next_step="Read the fallback reasons: peer-availability reasons mean the proxy path is down. For "
        "upstream_error read the requests' reason first (a dial reason means the path failed), then the "
        "client proxy's logs, then whether the target serves this group/version and accepts the proxy.",
        live_evidence=(DISCOVERY_FALLBACKS, REQUESTS, PEERS, PEER_CACHE_SYNCED),
    ),
    AlertInfo(
        name=WATCHES_SILENT,
        severity=Severity.WARNING,
        scope=AlertScope.TARGET,
        for_duration="30m",
        meaning="Watches are open but no watch event has been counted for an hour: possibly a half-dead "
        "stream.",
        traps=(
            "Only uncompressed JSON and CBOR sequence watch streams are counted; other formats "
            "(compressed, protobuf) can make this fire falsely.",
            "Resources that are normally idle for an hour make this fire with nothing wrong.",
            "A counter that keeps moving does not prove every watch is alive.",
        ),
        cause="A stalled watch stream through the proxy, or simply no changes on the watched resources.",
        next_step="Change a watched object (or check that one changed) and see whether events arrive; "
        "ask the watching clients to re-establish their watches.",
        live_evidence=(ACTIVE_WATCHES, WATCH_EVENTS),
    ),
    AlertInfo(
        name=PROBE_FAILING,
        severity=Severity.CRITICAL,
        scope=AlertScope.PROBE,
        meaning="The synthetic probe has not succeeded in three schedule intervals (15 minutes): callers "
        "most likely cannot use the proxied API.",
        traps=(
            "The probe covers the parts before the proxy too (APIService wiring, aggregation layer): "
            "healthy proxy metrics do not clear it.",
            "A single failed run during a target rolling restart is expected; this alert is about the age "
            "of the last success.",
            "If the CronJob never ran, kube_cronjob_created must exist for the alert to see it.",
        ),
        cause="The proxy path is failing, or the probe itself is broken (CronJob not scheduled, "
        "kubeconfig secret missing, wrong group/version or resource).",
        next_step="Run the probe now from the bot; if it passes, inspect the probe CronJob and its "
        "kubeconfig secret; if it fails, follow the proxy findings below.",
        live_evidence=(PEERS, PEER_CACHE_SYNCED, REQUESTS, DISCOVERY_FALLBACKS),
        guide_section=SYNTHETIC_PROBE,
    ),
)

ALERTS: Mapping[str, AlertInfo] = MappingProxyType({a.name: a for a in _ENTRIES})


def alert_info(name: str) -> AlertInfo | None:
    """The catalogue entry of one guide alert; None for an alert this catalogue does not know."""
    return ALERTS.get(name)


def about_peer_feed(name: str) -> bool:
    """Whether the alert is about the client's peer feed, a cause of its own beside a target that is down."""
    info = ALERTS.get(name)
    return info is not None and info.peer_feed
