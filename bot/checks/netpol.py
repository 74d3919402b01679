"""The vcluster.yaml NetworkPolicy values that let the proxy's direct path through, for both ends.

vCluster's generated policies (`policies.networkPolicy.enabled: true`) allow the control plane's TCP
egress but not the UDP path between two tenant clusters' control planes that direct WireGuard needs, so
with them alone the proxy falls back to the DERP relay. The fix is one rule on each end: egress on the
client towards the target's control plane pods, ingress on the target from the client's. One alone
still leaves the pair on the relay.

Same control plane cluster: namespace + pod selectors (`app: vcluster` narrows to control plane pods).
Different clusters: `ipBlock`s covering the endpoint addresses the platform advertises, plus a separate
egress rule for the STUN endpoints. UDP is never pinned to a port: the embedded tsnet server binds an
OS-assigned port each session. Pure: builds text from validated names and parsed CIDRs only, every
value double-quoted so that YAML cannot read a name like `yes` or `123` as anything but a string.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from bot.domain.netpol_result import ANYWHERE_V4, DEFAULT_STUN_PORT, CrossCluster, Endpoint, NetpolResult
from bot.errors import InputError
from config.names import dns1123_label


def parse_endpoint(flag: str, text: str) -> Endpoint:
    """`NS/RELEASE`, both DNS-1123 labels."""
    namespace, slash, release = text.partition("/")
    if not slash:
        raise InputError(f"{flag}: {text[:80]!r} is not NS/RELEASE (like vcluster-team-a/team-a)")
    try:
        return Endpoint(dns1123_label(namespace), dns1123_label(release))
    except ValueError as err:
        raise InputError(f"{flag}: {err}") from None


def parse_cidr(flag: str, text: str) -> str:
    """A network in CIDR notation, normalised (`10.0.0.1/8` is refused: host bits set)."""
    try:
        return str(ipaddress.ip_network(text, strict=True))
    except ValueError as err:
        raise InputError(f"{flag}: {text[:80]!r} is not a CIDR ({err})") from None


def parse_port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise InputError(f"--stun-port: {text[:20]!r} is not a port (1-65535)")
    return int(text)


def cross_cluster(peers: Sequence[str], stun: Sequence[str], ports: Sequence[str]) -> CrossCluster | None:
    """`--cross-cluster CIDR...`, `--stun CIDR`, `--stun-port PORT` as typed (to `/proxy netpol` or
    `proxybot netpol`): None for the same cluster, where a STUN option is refused."""
    if not peers:
        if stun or ports:
            raise InputError(
                "--stun/--stun-port: only with --cross-cluster (same cluster needs no STUN rule)"
            )
        return None
    peer_cidrs = tuple(parse_cidr("--cross-cluster", c) for c in peers)
    stun_cidrs = tuple(parse_cidr("--stun", c) for c in stun or (ANYWHERE_V4,))
    stun_ports = tuple(parse_port(p) for p in ports or (str(DEFAULT_STUN_PORT),))
    return CrossCluster(peer_cidrs, stun_cidrs, stun_ports, stun_given=bool(stun))


def netpol(client: Endpoint, target: Endpoint, cross: CrossCluster | None = None) -> NetpolResult:
    """The values for both ends of a client/target pair."""
    if cross is None:
        client_yaml = _values(client, "egress", _selector_rule("to", target, _EGRESS_WHY))
        target_yaml = _values(target, "ingress", _selector_rule("from", client, _INGRESS_WHY))
    else:
        client_yaml = _values(
            client, "egress", _ip_rule("to", cross.peer_cidrs, _EGRESS_WHY), _stun_rule(cross)
        )
        target_yaml = _values(
            target,
            "ingress",
            _ip_rule("from", cross.peer_cidrs, _INGRESS_WHY),
            _stun_rule(cross),
            egress_too=True,
        )
    return NetpolResult(client, target, cross, client_yaml, target_yaml, _notes(cross))


_EGRESS_WHY = "Let the resource proxy dial the target's control plane directly instead of via the DERP relay."
_INGRESS_WHY = "Let the client's resource proxy reach this control plane directly (hole-punched UDP)."
_UDP_WHY = "UDP with no port: tsnet binds an OS-assigned port each session; a pinned one breaks on restart."


def _notes(cross: CrossCluster | None) -> tuple[str, ...]:
    both = "Apply both: one rule alone still leaves the pair on the DERP relay."
    if cross is None:
        return (both, "Same control plane cluster: selectors match the other end's control plane pods.")
    notes = [
        both,
        "Different clusters: the ipBlocks must cover the endpoint addresses the platform advertises for the "
        "peer (pod, node, load balancer or NAT address); narrow each end to the other end's ranges if known.",
        "Also open the firewall paths: outbound UDP to the peer endpoints and STUN, outbound TCP 80 and 443.",
    ]
    if not cross.stun_given:
        notes.append(f"STUN egress is open to {ANYWHERE_V4}: narrow it to your STUN endpoints with --stun.")
    return tuple(notes)


def _comment(text: str, indent: int) -> list[str]:
    return [" " * indent + "# " + text]


def _values(end: Endpoint, direction: str, *rules: list[str], egress_too: bool = False) -> str:
    """`policies.networkPolicy.controlPlane.<direction>` with the rules; STUN (last) goes under egress."""
    lines = [
        f"# vcluster.yaml values for {end} (merge into the release's values)",
        "policies:",
        "  networkPolicy:",
        "    enabled: true",
        "    controlPlane:",
        f"      {direction}:",
    ]
    main, stun = (rules[:-1], rules[-1:]) if egress_too else (rules, ())
    for rule in main:
        lines += rule
    if stun:
        lines += ["      egress:", *stun[0]]
    return "\n".join(lines) + "\n"


def _udp_ports(indent: int) -> list[str]:
    pad = " " * indent
    return [f"{pad}ports:", *_comment(_UDP_WHY, indent + 2), f"{pad}  - protocol: UDP"]


def _selector_rule(key: str, peer: Endpoint, why: str) -> list[str]:
    return [
        *_comment(why, 8),
        f"        - {key}:",
        "            - namespaceSelector:",
        "                matchLabels:",
        f'                  kubernetes.io/metadata.name: "{peer.namespace}"',
        *_comment("app: vcluster narrows the release's pods to its control plane pods.", 14),
        "              podSelector:",
        "                matchLabels:",
        '                  app: "vcluster"',
        f'                  release: "{peer.release}"',
        *_udp_ports(10),
    ]


def _ip_rule(key: str, cidrs: tuple[str, ...], why: str) -> list[str]:
    blocks = [
        line for cidr in cidrs for line in ("            - ipBlock:", f'                cidr: "{cidr}"')
    ]
    return [
        *_comment(why, 8),
        *_comment("Different control plane clusters: the peer's advertised endpoint addresses.", 8),
        f"        - {key}:",
        *blocks,
        *_udp_ports(10),
    ]


def _stun_rule(cross: CrossCluster) -> list[str]:
    blocks = [
        line
        for cidr in cross.stun_cidrs
        for line in ("            - ipBlock:", f'                cidr: "{cidr}"')
    ]
    ports = [f"            - protocol: UDP\n              port: {port}" for port in cross.stun_ports]
    return [
        *_comment(
            "A separate rule for STUN, so each end can learn its public endpoint for hole punching.", 8
        ),
        "        - to:",
        *blocks,
        "          ports:",
        *"\n".join(ports).split("\n"),
    ]
