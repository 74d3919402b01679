"""Reading NetworkPolicies of vCluster control planes and deciding whether the direct UDP path is allowed.

The guide: direct WireGuard between a client's and a target's control plane pods needs a UDP egress rule on
the client end *and* a UDP ingress rule on the target end; one alone still leaves the pair on the relay.
Kubernetes NetworkPolicies are additive: any policy that selects the control plane pods and has an allowing
rule counts, and a namespace where no policy selects the pods (for that direction) isolates nothing.

Only policies are read (GET on a list path built from a constant and a validated namespace); what the
policies mean is decided by the pure functions below, so tests can feed them any policy document.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.domain.path_result import ControlPlanePods, Direction, EndVerdict, RuleState
from bot.domain.paths import ApiPath
from bot.errors import ClusterError, InputError
from config.names import dns1123_label

if TYPE_CHECKING:  # kubernetes' client is imported by whoever opens a reader
    from bot.clients.kube import KubeReader

# Control planes on the platform's own cluster reach the platform pods on this TCP port.
PLATFORM_PORT = 10443
_NETPOL_LIST = "/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies"
Json = Mapping[str, Any]


def network_policies_path(namespace: str) -> ApiPath:
    """The NetworkPolicy list of one namespace; the namespace must be a DNS-1123 label."""
    try:
        checked = dns1123_label(namespace)
    except ValueError as err:
        raise InputError(f"namespace: {err}") from None
    return ApiPath(_NETPOL_LIST.format(namespace=checked))


def unknown_end(direction: Direction, pods: ControlPlanePods, why: str) -> EndVerdict:
    return EndVerdict(direction, pods, RuleState.UNKNOWN, (), None, why)


async def read_policies(reader: KubeReader, namespace: str, *, timeout: float) -> list[Json]:
    """Every NetworkPolicy of `namespace` (raises `ClusterError` when they cannot be read)."""
    response = await reader.get_ok(network_policies_path(namespace), timeout=timeout)
    try:
        body = json.loads(response.body)
    except ValueError:
        raise ClusterError(reader.name, "http", f"NetworkPolicy list of {namespace} is not JSON") from None
    items = body.get("items") if isinstance(body, Mapping) else None
    return [item for item in items or [] if isinstance(item, Mapping)]


# -- selectors ----------------------------------------------------------------------------------------------


def selector_matches(selector: Json | None, labels: Mapping[str, str]) -> bool:
    """A Kubernetes label selector against a label set; an empty selector matches everything."""
    if selector is None:
        return True
    match_labels = selector.get("matchLabels") or {}
    if any(labels.get(str(k)) != str(v) for k, v in match_labels.items()):
        return False
    return all(_expression_matches(e, labels) for e in selector.get("matchExpressions") or [])


def _expression_matches(expression: Json, labels: Mapping[str, str]) -> bool:
    key, operator = str(expression.get("key", "")), expression.get("operator")
    values = {str(v) for v in expression.get("values") or []}
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False  # an operator we do not know selects nothing we can vouch for


# -- rules --------------------------------------------------------------------------------------------------


def _types(spec: Json) -> set[str]:
    """The directions a policy isolates; without `policyTypes`, Egress only when it has egress rules."""
    declared = spec.get("policyTypes")
    if declared:
        return {str(t) for t in declared}
    return {"Ingress", "Egress"} if spec.get("egress") is not None else {"Ingress"}


def _udp_ports(ports: Sequence[Json] | None) -> tuple[bool, str | None]:
    """Whether a rule's ports admit UDP on any port; else a note (e.g. a pinned UDP port)."""
    if not ports:
        return True, None
    pinned: list[str] = []
    for port in ports:
        protocol = str(port.get("protocol") or "TCP")
        if protocol != "UDP":
            continue
        if port.get("port") is None:
            return True, None
        pinned.append(str(port["port"]))
    if pinned:
        return False, f"UDP pinned to port {', '.join(pinned)} (the tsnet port changes every session)"
    return False, None


def _peer_matches(peer: Json, own_namespace: str, other: ControlPlanePods, same_cluster: bool) -> str | None:
    """How one `to`/`from` peer covers the other end's pods, or None."""
    if "ipBlock" in peer:
        cidr = (peer.get("ipBlock") or {}).get("cidr", "?")
        return f"ipBlock {cidr} (the addresses are not checked: make sure it covers the advertised endpoints)"
    if not same_cluster:
        return None  # selectors only see pods of this cluster
    ns_selector = peer.get("namespaceSelector")
    if ns_selector is None and own_namespace != other.namespace:
        return None  # a bare podSelector picks pods of the policy's own namespace
    if not selector_matches(ns_selector, other.namespace_labels):
        return None
    if not selector_matches(peer.get("podSelector"), other.pod_labels):
        return None
    return f"selects {other.spelled}"


@dataclass(frozen=True, slots=True)
class _RuleMatch:
    allows: bool
    note: str | None


def _rule_allows(
    rule: Json, direction: Direction, own_namespace: str, other: ControlPlanePods, same_cluster: bool
) -> _RuleMatch:
    udp, note = _udp_ports(rule.get("ports"))
    if not udp:
        return _RuleMatch(False, note)
    peers = rule.get("to" if direction is Direction.EGRESS else "from")
    if not peers:
        return _RuleMatch(True, "any address, UDP allowed")
    for peer in peers:
        if isinstance(peer, Mapping):
            how = _peer_matches(peer, own_namespace, other, same_cluster)
            if how is not None:
                return _RuleMatch(True, how)
    return _RuleMatch(False, None)


def judge_end(
    policies: Sequence[Json],
    direction: Direction,
    own: ControlPlanePods,
    other: ControlPlanePods,
    *,
    same_cluster: bool,
) -> EndVerdict:
    """Whether `own`'s control plane pods may send (egress) or receive (ingress) UDP to/from `other`'s."""
    selecting: list[str] = []
    notes: list[str] = []
    key = "egress" if direction is Direction.EGRESS else "ingress"
    for policy in policies:
        spec = policy.get("spec") or {}
        name = str((policy.get("metadata") or {}).get("name", "?"))
        if direction.value not in _types(spec) or not selector_matches(
            spec.get("podSelector"), own.pod_labels
        ):
            continue
        selecting.append(name)
        for index, rule in enumerate(spec.get(key) or []):
            found = _rule_allows(rule, direction, own.namespace, other, same_cluster)
            if found.allows:
                allowing = f"{name}: {key} rule {index + 1} ({found.note})"
                return EndVerdict(direction, own, RuleState.ALLOWED, tuple(selecting), allowing, allowing)
            if found.note:
                notes.append(f"{name}: {key} rule {index + 1}: {found.note}")
    if not selecting:
        detail = f"no NetworkPolicy in {own.namespace} isolates {key} of the control plane pods: all allowed"
        return EndVerdict(direction, own, RuleState.UNRESTRICTED, (), None, detail)
    detail = f"{', '.join(selecting)} select the control plane pods; no {key} rule allows UDP "
    detail += f"{_toward(direction)} {other.spelled}" + ("; " + "; ".join(notes) if notes else "")
    return EndVerdict(direction, own, RuleState.MISSING, tuple(selecting), None, detail)


def _toward(direction: Direction) -> str:
    return "to" if direction is Direction.EGRESS else "from"


def judge_platform_egress(policies: Sequence[Json], own: ControlPlanePods) -> str | None:
    """Why `own`'s control plane pods may not reach the platform pods on TCP 10443, or None if they may.

    Only for tenants on the platform's own control plane cluster. The platform's namespace is not known
    here, so a rule counts when it admits TCP 10443 to anything outside the tenant's own namespace.
    """
    selecting: list[str] = []
    for policy in policies:
        spec = policy.get("spec") or {}
        if "Egress" not in _types(spec) or not selector_matches(spec.get("podSelector"), own.pod_labels):
            continue
        selecting.append(str((policy.get("metadata") or {}).get("name", "?")))
        for rule in spec.get("egress") or []:
            if _admits_tcp(rule.get("ports"), PLATFORM_PORT) and _leaves_namespace(rule.get("to")):
                return None
    if not selecting:
        return None
    return (
        f"{', '.join(selecting)} select the control plane pods of {own.spelled}; no egress rule allows "
        f"TCP {PLATFORM_PORT} to the platform pods"
    )


def _admits_tcp(ports: Sequence[Json] | None, wanted: int) -> bool:
    if not ports:
        return True
    for port in ports:
        if str(port.get("protocol") or "TCP") != "TCP":
            continue
        value = port.get("port")
        if value is None:
            return True
        if isinstance(value, int) and value <= wanted <= int(port.get("endPort") or value):
            return True  # a named port cannot be resolved from the policy alone: it does not count
    return False


def _leaves_namespace(peers: Sequence[Json] | None) -> bool:
    """Any address, or a peer outside the policy's namespace (a bare podSelector stays inside it)."""
    if not peers:
        return True
    return any(isinstance(p, Mapping) and ("namespaceSelector" in p or "ipBlock" in p) for p in peers)
