"""The proxy's outcome-reason vocabulary, as data: what each `reason` label value means and what to do.

The same vocabulary is shared by the request, termination, dial-failure and discovery-fallback
counters, though related series do not always carry the same reason (the first reason of a request
wins). A reason this catalogue does not know (a newer proxy) gets a generic entry, never a KeyError.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from bot.domain.guide import OUTCOME_REASONS
from bot.domain.snapshot import DIAL_FAILURES, DISCOVERY_FALLBACKS, REQUESTS, TERMINATIONS


class ReasonKind(StrEnum):
    """Whose side an outcome reason points at."""

    PROXY_FAULT = "proxy_fault"  # the proxy path (peers, dials, platform network) is degraded
    TARGET_SIDE = "target_side"  # the target (or what stands for it) produced the answer
    CALLER_SIDE = "caller_side"  # the caller asked for something unsupported, or went away
    ISOLATION = "isolation"  # ownership isolation doing its job
    UNKNOWN = "unknown"  # a reason this catalogue does not know


@dataclass(frozen=True, slots=True)
class OutcomeReason:
    """One value of the `reason` label: its meaning, where it appears, whose side it is, what to do."""

    name: str
    meaning: str
    families: frozenset[str]
    kind: ReasonKind
    cause: str
    next_step: str
    guide_section: str = OUTCOME_REASONS
    known: bool = True

    @property
    def is_proxy_fault(self) -> bool:
        return self.kind is ReasonKind.PROXY_FAULT


# Peer-availability rejections: they never reach a peer, so they have no dial-duration observation.
PEER_AVAILABILITY = frozenset({"no_peer", "stale_peers", "all_quarantined"})
TERMINATION_REASONS = frozenset({"deadline", "upgrade_rejected"})
# A dial's own failures past the peer check; request_total keeps one when discovery says upstream_error.
DIAL_FAILURE_REASONS = frozenset({"timeout", "peer_departed", "ts_server_unavailable", "error"})

_DIAL = frozenset({REQUESTS, DIAL_FAILURES})
_PEER = frozenset({REQUESTS, DIAL_FAILURES, DISCOVERY_FALLBACKS})


def _reason(
    name: str, kind: ReasonKind, families: frozenset[str], meaning: str, cause: str, next_step: str
) -> OutcomeReason:
    return OutcomeReason(
        name=name, meaning=meaning, families=families, kind=kind, cause=cause, next_step=next_step
    )


_CHECK_PLATFORM = (
    "check that the client's control plane pod reaches the platform (NetworkPolicy, egress to the "
    "platform pods), that the platform is healthy and the license valid"
)

_ENTRIES = (
    _reason(
        "upstream",
        ReasonKind.TARGET_SIDE,
        frozenset({REQUESTS}),
        "The default outcome: normally the target answered, but a proxy-local failure with no more "
        "specific reason is also filed here.",
        "The status code came from the target in most cases (its 5xx reach callers as the proxy's 503), "
        "but the proxy files its own unclassified failures here too.",
        "Read the client proxy's logs first (`proxybot logs`): a proxy-local failure shows there; if "
        "none does, a 5xx is the target's, so check its API server, backing store, webhooks and load.",
    ),
    _reason(
        "no_peer",
        ReasonKind.PROXY_FAULT,
        _PEER,
        "There was no peer host to send to: no peer list has arrived since the proxy started, or the "
        "list is empty.",
        "The target has no reachable control plane pods (stopped, sleeping, not ready), or the platform "
        "never delivered a peer list (platform connectivity or license).",
        "Check that the target tenant cluster is running with ready control plane pods; then "
        + _CHECK_PLATFORM
        + ".",
    ),
    _reason(
        "stale_peers",
        ReasonKind.PROXY_FAULT,
        _PEER,
        "The peer watch subscription has been down for more than the 60 s tolerance, so the cached peer "
        "list is no longer trusted.",
        "The client lost its peer watch to the platform and could not re-establish it.",
        "Check the client's connectivity to the platform and the platform pods' health; "
        "the cache re-syncs once the watch is back.",
    ),
    _reason(
        "all_quarantined",
        ReasonKind.PROXY_FAULT,
        _PEER,
        "Every peer host is quarantined (3 consecutive dial failures, 20 s), or the only candidate is "
        "in its single trial dial.",
        "The target's endpoints stopped answering dials: a rolling restart (self-heals in seconds), a "
        "dead or stale endpoint, or a broken network path.",
        "If it persists beyond a restart, look at dial failures by reason and dial latency, and check "
        "the target's control plane pods and the network path between the clusters.",
    ),
    _reason(
        "timeout",
        ReasonKind.PROXY_FAULT,
        _DIAL,
        "A peer dial ran into the 5 s dial timeout.",
        "A dial on the peer path failed: the endpoint is dead or stale (a target restart the peer list "
        "has not caught up with), or nothing reaches it. Not a relay fallback: the relay keeps traffic "
        "flowing and only raises dial latency by a step.",
        "Check the target's control plane pods and whether the peer list is current (3 failed dials "
        "quarantine an endpoint); if the pods are Ready, check peer publication and reachability: "
        "NetworkPolicy, firewall rules, DERP availability.",
    ),
    _reason(
        "deadline",
        ReasonKind.PROXY_FAULT,
        frozenset({REQUESTS, TERMINATIONS, DIAL_FAILURES}),
        "A deadline the proxy set expired, usually the 60 s cap on non-watch requests.",
        "The request connected, but the target did not finish its answer before the cap: a slow "
        "target response path.",
        "Check the target's API server, its backing store and admission webhooks for latency; compare "
        "request duration with dial duration: a request near 60 s after a short dial puts the delay on "
        "the target.",
    ),
    _reason(
        "canceled",
        ReasonKind.CALLER_SIDE,
        _DIAL,
        "The caller's own context ended (for example the client disconnected) before the dial finished.",
        "Callers gave up or timed out on their side; not a proxy fault.",
        "Nothing to fix in the proxy; if callers time out because the proxy is slow, look at latency "
        "instead.",
    ),
    _reason(
        "peer_departed",
        ReasonKind.PROXY_FAULT,
        _DIAL,
        "The peer left the peer list while it was being dialled.",
        "The target's endpoints changed mid-dial, typically during a target restart or scale-down.",
        "Usually transient; if it keeps happening, check whether the target's control plane pods are "
        "restarting.",
    ),
    _reason(
        "ts_server_unavailable",
        ReasonKind.PROXY_FAULT,
        _DIAL,
        "The local platform network server, or the license, failed before any peer was contacted.",
        "The client's embedded platform network server is not running, or the license check failed.",
        "Check the client's control plane logs for platform network and license errors, and the "
        "platform's license status.",
    ),
    _reason(
        "error",
        ReasonKind.PROXY_FAULT,
        _DIAL,
        "A dial failed for a reason with no more specific label.",
        "A dial-level error other than timeout, deadline or departure: refused connections, resets, "
        "name resolution.",
        "Read the client's control plane logs around the failures for the dial error text.",
    ),
    _reason(
        "ownership_masked",
        ReasonKind.ISOLATION,
        frozenset({REQUESTS}),
        "With `accessResources: owned`, a named request hit an object without the client's ownership "
        "labels and got a 404; also used when the preliminary ownership GET got a non-5xx status other "
        "than 200 or 404 (such as 401 or an RBAC 403).",
        "Usually isolation working as intended: the object belongs to someone else.",
        "If callers expected to see the object, check its ownership labels and that the proxy may `get` "
        "it on the target (RBAC).",
    ),
    _reason(
        "ownership_check_failed",
        ReasonKind.PROXY_FAULT,
        frozenset({REQUESTS}),
        "The proxy could not complete the ownership check: an undecodable named GET is masked as 404, "
        "a named write whose preliminary GET got a 5xx fails with a retryable 503.",
        "An operational failure during the check (the target erroring on the preliminary GET), "
        "not isolation.",
        "Check the target's API server health and errors for GETs on the affected resource.",
    ),
    _reason(
        "namespace_missing",
        ReasonKind.CALLER_SIDE,
        frozenset({REQUESTS}),
        "A namespaced create, update or patch named a namespace that does not exist in the client "
        "tenant cluster.",
        "The caller writes into a namespace it has not created in the client cluster.",
        "Create the namespace in the client tenant cluster, or fix the caller's namespace.",
    ),
    _reason(
        "upgrade_rejected",
        ReasonKind.CALLER_SIDE,
        frozenset({REQUESTS, TERMINATIONS}),
        "A connection upgrade (exec, attach, port-forward style streaming) was refused with 501.",
        "The proxy does not carry connection upgrades; a caller tried one anyway.",
        "Run the streaming operation against the target tenant cluster directly; the proxy will keep "
        "answering 501.",
    ),
    _reason(
        "upstream_error",
        ReasonKind.TARGET_SIDE,
        frozenset({REQUESTS, DISCOVERY_FALLBACKS}),
        "A proxied discovery call got 401, 404 or 5xx after the peer check passed, so the local fallback "
        "document was served.",
        "The target refused or failed discovery (auth, missing group/version, server error), or a "
        "transport failure after the peer check was turned into a 5xx.",
        "Read the requests' reason for the same group/version first: a dial reason there means the path "
        "failed, not the target. Otherwise check that the target serves the group/version (CRD "
        "installed) and accepts the proxy's credentials.",
    ),
)

REASONS: Mapping[str, OutcomeReason] = MappingProxyType({r.name: r for r in _ENTRIES})


def reason_info(name: str) -> OutcomeReason:
    """The catalogue entry of one reason; a generic entry for a reason this version does not know."""
    found = REASONS.get(name)
    if found is not None:
        return found
    return OutcomeReason(
        name=name,
        meaning=f"`{name}` is not in this bot's reason catalogue (probably a newer proxy).",
        families=frozenset(),
        kind=ReasonKind.UNKNOWN,
        cause="Unknown to this version of the bot; read the proxy's release notes for this reason.",
        next_step="Look at the client's control plane logs around these requests, and upgrade the bot.",
        known=False,
    )
