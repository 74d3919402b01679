"""What the path check found: the latency of both sides, the dial reading, both ends' NetworkPolicy
verdicts, and the verdict of the path (direct or relayed) with its evidence and fix. Neutral:
`bot.checks.path` weighs the signals `bot.checks.path_signals` reads; `bot.render.checks_path` lays them out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True, slots=True)
class LatencySeries:
    """The answered samples of one side (seconds) and why the others failed."""

    side: str
    seconds: tuple[float, ...]
    failures: tuple[str, ...] = ()

    def quantile(self, q: float) -> float | None:
        """Nearest-rank quantile of the samples; None without any."""
        if not self.seconds:
            return None
        ordered = sorted(self.seconds)
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    @property
    def minimum(self) -> float | None:
        return min(self.seconds) if self.seconds else None


@dataclass(frozen=True, slots=True)
class DialReading:
    """Dial latency in the window of the check and before it; `unavailable` says why there is none."""

    recent_p50: float | None = None
    recent_p99: float | None = None
    earlier_p50: float | None = None
    earlier_p99: float | None = None
    lifetime_p99: float | None = None
    recent_dials: float = 0.0
    window_seconds: float = 0.0
    step: bool | None = None
    unavailable: str | None = None


@dataclass(frozen=True, slots=True)
class DialDirectReading:
    """Whether the client's control plane turns direct dialing off (`TS_DEBUG_DIAL_DIRECT`); None: unknown."""

    off: bool | None = None
    detail: str = "not read"


NOT_READ = DialDirectReading()


# -- NetworkPolicies: one end's verdict --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ControlPlanePods:
    """Where one tenant's control plane pods live: namespace and `release` (pods are `app: vcluster`)."""

    namespace: str
    release: str

    @property
    def pod_labels(self) -> dict[str, str]:
        return {"app": "vcluster", "release": self.release}

    @property
    def namespace_labels(self) -> dict[str, str]:
        return {NAMESPACE_NAME_LABEL: self.namespace}

    @property
    def spelled(self) -> str:
        return f"{self.namespace}/{self.release}"


class Direction(StrEnum):
    EGRESS = "Egress"
    INGRESS = "Ingress"


class RuleState(StrEnum):
    """What the policies of one end say about the peer UDP traffic."""

    ALLOWED = "allowed"  # a selecting policy has an allowing rule
    UNRESTRICTED = "unrestricted"  # no policy selects the pods for this direction: everything is allowed
    MISSING = "missing"  # policies select the pods, none allows the peer UDP traffic
    UNKNOWN = "unknown"  # the policies could not be read


@dataclass(frozen=True, slots=True)
class EndVerdict:
    """One end's rule (client egress or target ingress) and the evidence for it."""

    direction: Direction
    pods: ControlPlanePods
    state: RuleState
    selecting: tuple[str, ...]  # names of the policies that isolate the pods in this direction
    allowing: str | None  # `policy: rule` that allows the traffic, when one does
    detail: str

    @property
    def permits(self) -> bool | None:
        """True when UDP from/to the peer passes, False when blocked, None when not known."""
        if self.state is RuleState.UNKNOWN:
            return None
        return self.state is not RuleState.MISSING


@dataclass(frozen=True, slots=True)
class NetpolReading:
    """Both ends' NetworkPolicy verdicts and whether the two ends share a control plane cluster.

    `platform_egress`: on one control plane cluster, each end whose policies block TCP 10443 to the
    platform pods, in words.
    """

    egress: EndVerdict
    ingress: EndVerdict
    same_cluster: bool
    platform_egress: tuple[str, ...] = ()

    @property
    def permits(self) -> bool | None:
        ends = (self.egress.permits, self.ingress.permits)
        if False in ends:
            return False
        return True if all(ends) else None


# -- the verdict ----------------------------------------------------------------------------------------


class PathVerdict(StrEnum):
    LIKELY_DIRECT = "likely direct"
    LIKELY_RELAYED = "likely relayed"
    UNKNOWN = "unknown"
    # Neither the proxy nor the direct request answers: the target is down, and no signal of the path
    # (a dial step: dials to a dead target time out too) says anything of it.
    CANNOT_JUDGE = "cannot judge"


@dataclass(frozen=True)
class PathResult:
    """Everything `path` found, the verdict and what to do."""

    target: str
    cluster: str
    request: str
    client: LatencySeries
    direct: LatencySeries | None
    dial: DialReading
    netpol: NetpolReading
    verdict: PathVerdict
    evidence: tuple[str, ...]
    fix: tuple[str, ...]
    dial_direct: DialDirectReading = NOT_READ

    @property
    def floor(self) -> float | None:
        """Client minimum minus direct minimum: the constant the client path adds."""
        if self.direct is None or self.client.minimum is None or self.direct.minimum is None:
            return None
        return self.client.minimum - self.direct.minimum

    @property
    def passed(self) -> bool:
        return self.verdict is PathVerdict.LIKELY_DIRECT and not self.netpol.platform_egress
