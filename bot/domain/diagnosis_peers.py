"""Findings about peers: per group/version caches (synced, healthy, empty) and quarantine transitions."""

from __future__ import annotations

from bot.domain.alerts_catalog import NO_HEALTHY_PEERS, PEER_CACHE_UNSYNCED, PEER_CHURN, TARGET_UNAVAILABLE
from bot.domain.diagnosis_readings import Readings, describe_peers, fmt_count, fmt_duration, fmt_times
from bot.domain.findings import Finding, Severity
from bot.domain.guide import ALERT_STARTING_POINTS, PEER_METRICS
from bot.domain.reasons import PEER_AVAILABILITY
from bot.domain.snapshot import ALL_QUARANTINED, DIAL_FAILURES, QUARANTINES, RECOVERIES, PeerCounts

# The churn alert's threshold: more than this many quarantines (over 30 minutes in the rule).
CHURN_QUARANTINES = 5
# An age this high is worth a hint, but only next to another problem: on a quiet healthy cluster the
# age grows without bound because publication is event-driven.
PEER_LIST_AGE_HINT_SECONDS = 900.0
STALENESS_TOLERANCE_SECONDS = 60


def peer_findings(r: Readings) -> list[Finding]:
    """Cache and peer-state findings per group/version, then target-wide quarantine findings."""
    out: list[Finding] = []
    for gv in r.group_versions():
        found = _cache_finding(r, gv)
        if found is not None:
            out.append(found)
    out.extend(_all_quarantined(r))
    out.extend(_churn(r))
    return out


def _cache_finding(r: Readings, gv: str) -> Finding | None:
    peers = r.snapshot.peers(r.target, gv)
    synced = r.snapshot.cache_synced(r.target, gv)
    if synced is False:
        return _unsynced(r, gv, peers)
    if peers is None or peers.healthy > 0:
        return None
    if peers.total == 0:
        return _empty(r, gv, synced)
    return _no_healthy(r, gv, peers, synced)


def _age_evidence(r: Readings, gv: str) -> str:
    age = r.snapshot.peer_list_age(r.target, gv)
    if age is None:
        return "no peer list published since the proxy started"
    return f"last peer list published {fmt_duration(age)} ago (age alone is not staleness)"


def _peer_rejections(r: Readings) -> list[str]:
    """Dial rejections that never reached a peer, the fingerprints of a missing or empty peer list."""
    by_reason = r.counter_breakdown(DIAL_FAILURES, "reason")
    wanted = [*sorted(PEER_AVAILABILITY), "ts_server_unavailable"]
    return [f"dial failures {k}: {fmt_count(by_reason[k])} {r.scope}" for k in wanted if k in by_reason]


def _unsynced(r: Readings, gv: str, peers: PeerCounts | None) -> Finding:
    never = r.snapshot.peer_list_age(r.target, gv) is None
    cause = (
        "No peer list has arrived since the proxy started: the client cannot reach the platform, "
        "or the license or platform network server failed."
        if never
        else f"The peer watch to the platform dropped more than {STALENESS_TOLERANCE_SECONDS} s ago "
        "and the cached list is no longer trusted."
    )
    evidence = ["peer_cache_synced = 0", _age_evidence(r, gv)]
    if peers is not None:
        evidence.append(describe_peers(peers))
    evidence += [
        *_peer_rejections(r),
        "discovery answers from the local fallback: APIService still Available",
    ]
    return r.finding(
        Severity.CRITICAL,
        "cache_unsynced",
        title=f"{gv}: no trusted peer snapshot, resource requests fail fast with 503",
        evidence=evidence,
        cause=cause,
        next_step="Check the client control plane's connectivity to the platform (NetworkPolicy egress to "
        "the platform pods), the platform pods, and the license.",
        guide_section=PEER_METRICS,
        group_version=gv,
        alert=PEER_CACHE_UNSYNCED,
    )


def _empty(r: Readings, gv: str, synced: bool | None) -> Finding:
    evidence = [
        "peers: healthy 0, quarantined 0, half_open 0",
        "peer_cache_synced = 1 (a fresh empty list still counts as synced)" if synced else "",
        _age_evidence(r, gv),
        *_peer_rejections(r),
    ]
    return r.finding(
        Severity.CRITICAL,
        "empty_peer_list",
        title=f"{gv}: peer cache synced but the peer list is empty, no endpoint to send to",
        evidence=[e for e in evidence if e],
        cause="The platform published an empty peer list: the target tenant cluster has no running, "
        "connected control plane pod (stopped, sleeping, or not registered with the platform).",
        next_step="Check that the target tenant cluster is running and its control plane pods are ready "
        "and connected to the platform.",
        guide_section=PEER_METRICS,
        group_version=gv,
        alert=NO_HEALTHY_PEERS,
    )


def _no_healthy(r: Readings, gv: str, peers: PeerCounts, synced: bool | None) -> Finding:
    if peers.half_open > 0:
        title = (
            f"{gv}: no healthy peers; {fmt_count(peers.half_open)} half_open on a single trial dial, "
            "requests fail unless that trial succeeds"
        )
    else:
        title = (
            f"{gv}: no healthy peers, all {fmt_count(peers.quarantined)} quarantined; requests fail with 503"
        )
    evidence = [describe_peers(peers)]
    if synced:
        evidence.append("peer_cache_synced = 1, yet no healthy endpoint (synced is not availability)")
    by_reason = r.counter_breakdown(DIAL_FAILURES, "reason")
    evidence += [f"dial failures {k}: {fmt_count(v)} {r.scope}" for k, v in list(by_reason.items())[:3]]
    return r.finding(
        Severity.CRITICAL,
        "no_healthy_peers",
        title=title,
        evidence=evidence,
        cause="The target's endpoints failed 3 dials in a row and were quarantined for 20 s: the target is "
        "restarting or down, or the network path between the clusters is broken.",
        next_step="Check the target tenant cluster's control plane pods, then the dial failures by reason "
        "and the path check (direct vs relay).",
        guide_section=PEER_METRICS,
        group_version=gv,
        alert=NO_HEALTHY_PEERS,
    )


def _all_quarantined(r: Readings) -> list[Finding]:
    times = r.counter(ALL_QUARANTINED)
    if times == 0:
        return []
    healed = r.healthy_everywhere()
    severity = r.for_counters(Severity.INFO if healed else Severity.WARNING)
    now = "healthy peers are back" if healed else "still no healthy peer in some group/version"
    return [
        r.finding(
            severity,
            "all_quarantined",
            title=f"quarantine left no selectable peer {fmt_times(times)} {r.scope}; {now}",
            evidence=[
                f"all-peers-quarantined transitions: {fmt_count(times)} {r.scope}",
                f"quarantines: {fmt_count(r.counter(QUARANTINES))}, "
                f"recoveries: {fmt_count(r.counter(RECOVERIES))}",
            ],
            cause="Every endpoint was quarantined at once; a target rolling restart does this and heals "
            "in seconds, a dead endpoint or broken path does not.",
            next_step="If healthy peers are back, check whether the target restarted; if not, treat it as "
            "no healthy peers: target control plane pods, dial failures, path check.",
            guide_section=ALERT_STARTING_POINTS,
            alert=TARGET_UNAVAILABLE,
        )
    ]


def _churn(r: Readings) -> list[Finding]:
    quarantines = r.counter(QUARANTINES)
    recoveries = r.counter(RECOVERIES)
    if quarantines <= CHURN_QUARANTINES:
        return []
    evidence = [f"quarantines: {fmt_count(quarantines)}, recoveries: {fmt_count(recoveries)} {r.scope}"]
    if recoveries > 0:
        return [
            r.finding(
                Severity.INFO,
                "quarantine_flapping",
                title=f"{fmt_count(quarantines)} quarantines with {fmt_count(recoveries)} recoveries "
                f"{r.scope}",
                evidence=evidence,
                cause="Endpoints fail and come back: a flapping target or repeated restarts.",
                next_step="Check the target's control plane pods for restarts and the dial failure reasons.",
                guide_section=PEER_METRICS,
            )
        ]
    stuck = r.healthy_nowhere()
    if stuck:
        evidence.append("no healthy peer in any group/version right now")
    return [
        r.finding(
            r.for_counters(Severity.WARNING),
            "quarantine_churn",
            title=f"peers quarantined {fmt_times(quarantines)} without a single recovery {r.scope}",
            evidence=evidence,
            cause="A dead or stale endpoint is re-quarantined every cycle (stale peer cleanup), "
            "or the target is flapping.",
            next_step="Compare the peer list with the target's actual control plane pods; keep the platform "
            "and vCluster current (stale peer fixes span both).",
            guide_section=ALERT_STARTING_POINTS,
            alert=PEER_CHURN if stuck else None,
        )
    ]


def age_hint(r: Readings) -> Finding | None:
    """An info hint about a very old peer list; only called when something else is already wrong."""
    ages = {gv: r.snapshot.peer_list_age(r.target, gv) for gv in r.group_versions()}
    old = {gv: a for gv, a in ages.items() if a is not None and a >= PEER_LIST_AGE_HINT_SECONDS}
    if not old:
        return None
    return r.finding(
        Severity.INFO,
        "peer_list_age_hint",
        title=f"no peer list published for {fmt_duration(max(old.values()))}: "
        "a hint to check platform connectivity",
        evidence=[f"{gv}: last peer list {fmt_duration(a)} ago" for gv, a in sorted(old.items())],
        cause="Peer lists are published only on change, so the age grows on a healthy quiet cluster; "
        "it is not the staleness clock, just a hint next to the other findings.",
        next_step="Check the client's connectivity to the platform; trust peer_cache_synced for staleness.",
        guide_section=ALERT_STARTING_POINTS,
    )
