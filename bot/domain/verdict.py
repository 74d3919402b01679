"""The vendor's quick triage, run by the bot: is the proxy degraded or is the target down?

Three inputs, read by the checks (`bot.reads.triage`) and judged here:

    TargetPods      the target's control-plane pods (`-l app=vcluster` in its namespace of the control
                    plane cluster): Ready or not
    MetricsSignal   what the client's proxy metrics say, read as if the target were up
                    (`metrics_signal(readings)`, or `unreadable_metrics(why)` when there are none)
    LogSignals      which log-reference lines the client's control plane logged (`log_signals`, from the
                    alert's log evidence; None = not read)

`judge(pods, metrics, logs)` gives one `TargetVerdict`: the verdict word, why, the inputs it rests on and
the next step. The table it follows: pods not Ready -> `target_down` whatever else is seen; Ready and a
group/version without a trusted peer snapshot -> `no_peer_feed`; Ready and no healthy peer ->
`proxy_path`; Ready and requests near the 60 s deadline -> `slow_target`; Ready and 503s without
quarantine -> `check_reason`; otherwise `healthy`. Whatever cannot be told is `unknown`, with why.

The table speaks of what is happening now ("consistently", "still"). Over a window the counters are now;
without one (a one-shot `status`) they are totals since the proxy started, and a stray old 503 or deadline
beside many successes is history: there the counter rows need `LIFETIME_SHARE` of the requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bot.domain.diagnosis_readings import Readings, describe_peers, fmt_count, fmt_seconds
from bot.domain.reasons import PEER_AVAILABILITY
from bot.domain.snapshot import (
    ALL_QUARANTINED,
    DIAL_DURATION,
    QUARANTINES,
    REQUEST_DURATION,
    REQUESTS,
    TERMINATIONS,
    Histogram,
)


class Verdict(StrEnum):
    """The quick-triage verdict of one target (the words `status --json` carries)."""

    HEALTHY = "healthy"
    TARGET_DOWN = "target_down"
    PROXY_PATH = "proxy_path"
    NO_PEER_FEED = "no_peer_feed"
    CHECK_REASON = "check_reason"
    SLOW_TARGET = "slow_target"
    UNKNOWN = "unknown"


# A request p99 this close to the proxy's 60 s cap means requests run into it.
SLOW_REQUEST_SECONDS = 45.0
# 503s of the peers' state: their availability, and a peer leaving while dialled (a restart). With every
# peer healthy and synced now, they are an outage that is over.
PEER_OUTAGE = PEER_AVAILABILITY | {"peer_departed"}
# A dial's 5 s timeout: beside quarantines counted over the same span, the dials to a peer that stopped
# answering (a restarted pod's old endpoint) until they quarantined it, the same outage; without one, a
# path that times out while its peers stay selectable, for the reasons check.
QUARANTINING_DIAL = "timeout"
# The 5 s dial timeout: failures near it are dial failures (the peer path), not a slow target.
DIAL_TIMEOUT_SECONDS = 5.0
# Without a window, the share of all requests since the proxy started that 503s or deadline cuts must reach
# to be judged as happening now: the share a request p99 near the cap stands for.
LIFETIME_SHARE = 0.01

NEXT_STEPS = {
    Verdict.HEALTHY: "Nothing to do.",
    Verdict.TARGET_DOWN: "Fix the target tenant cluster's control plane (its pods, their events and logs). "
    "Nothing to change on the client: the proxy recovers by itself once a peer accepts a dial.",
    # Its first sentence fits a message's two lines: the message never cuts a next step mid-sentence.
    Verdict.PROXY_PATH: "Check the path between the two control planes: the target's current peers on the "
    "platform, then NetworkPolicies, firewalls and the relay (run the path check). The target itself is up: "
    "its endpoints are what the client cannot use.",
    Verdict.NO_PEER_FEED: "Restore the client's peer feed first: its control plane's connection to the "
    "platform, the license, the platform itself. Ready target pods do not prove the target's API.",
    Verdict.CHECK_REASON: "Read the `reason` of the failing requests (the reasons check). `upstream` with "
    "503 is usually the target's own 5xx, but it is also where failures the proxy did not classify land: "
    "read the client's control-plane logs before blaming the target.",
    Verdict.SLOW_TARGET: "The target took the connection but did not answer within the 60 s deadline: check "
    "its API server, backing store and admission webhooks for latency.",
}


@dataclass(frozen=True, slots=True)
class PodState:
    """One control-plane pod: its name, whether it is Ready, and the words for its state."""

    name: str
    ready: bool
    detail: str  # "Ready", "not Ready (ContainersNotReady)", "Terminating", ...


@dataclass(frozen=True, slots=True)
class TargetPods:
    """The target's control-plane pods as the control plane cluster lists them, or why they were not read."""

    pods: tuple[PodState, ...] = ()
    unavailable: str | None = None
    where: str = ""  # `namespace` and selector, for the words

    @classmethod
    def missing(cls, why: str) -> TargetPods:
        return cls(unavailable=why)

    @property
    def ready(self) -> tuple[PodState, ...]:
        return tuple(p for p in self.pods if p.ready)

    def summary(self) -> str:
        if self.unavailable is not None:
            return f"target pods not read ({self.unavailable})"
        if not self.pods:
            return f"no target control-plane pods{f' in {self.where}' if self.where else ''}"
        return f"target pods: {len(self.ready)} of {len(self.pods)} Ready"


class LogSignal(StrEnum):
    """The log-reference lines the verdict weighs, for whatever reads the client's logs to report."""

    QUARANTINING = "quarantining"  # quarantining proxy target peer host after consecutive dial failures
    ALL_QUARANTINED = "all_quarantined"  # all peer hosts for the proxy target are quarantined
    STARTUP_SYNC_TIMEOUT = "startup_sync_timeout"  # peer cache did not sync in time for the startup probe
    PEER_WATCH_DOWN = "peer_watch_down"  # peer watch subscription is down and no fresh netmap is available
    INITIAL_PROBE_FAILED = "initial_probe_failed"  # initial probe of proxy target failed


_FEED_LINES = frozenset({LogSignal.STARTUP_SYNC_TIMEOUT, LogSignal.PEER_WATCH_DOWN})
# The log reference's entries (`bot.domain.log_reference`) that are signals of the verdict.
_SIGNAL_OF = {
    "quarantining_peer": LogSignal.QUARANTINING,
    "all_quarantined": LogSignal.ALL_QUARANTINED,
    "startup_sync_timeout": LogSignal.STARTUP_SYNC_TIMEOUT,
    "peer_watch_down": LogSignal.PEER_WATCH_DOWN,
    "initial_probe_failed": LogSignal.INITIAL_PROBE_FAILED,
}


@dataclass(frozen=True, slots=True)
class LogSignals:
    """Which log-reference lines were seen in the client's control-plane logs, and over what."""

    seen: frozenset[LogSignal]
    scope: str  # "last 100 lines of 2 pods"


def log_signals(keys: Sequence[str], scope: str) -> LogSignals:
    """The verdict's view of log-reference matches (their `key`s) read over `scope`: the one reading of
    the logs an alert shows as evidence is the one its verdict rests on."""
    return LogSignals(frozenset(_SIGNAL_OF[k] for k in keys if k in _SIGNAL_OF), scope)


@dataclass(frozen=True, slots=True)
class MetricsSignal:
    """What the client's proxy metrics say about one target, assuming its control plane is Ready."""

    verdict: Verdict
    evidence: tuple[str, ...]
    scope: str  # the counters': "in the last 5m" or "since the proxy started"
    unavailable: str | None = None
    too_old: bool = False  # the client's vCluster predates /metrics/syncer (v0.37): never "down"

    def summary(self) -> str:
        if self.too_old:
            return "proxy metrics: none, the client's vCluster is too old (before v0.37)"
        if self.unavailable is not None:
            return f"proxy metrics not read ({self.unavailable})"
        return f"proxy metrics: gauges now, counts {self.scope}"


@dataclass(frozen=True, slots=True)
class TargetVerdict:
    """One target's verdict, why, what it rests on, the evidence and the next step."""

    verdict: Verdict
    why: str
    inputs: tuple[str, ...]
    evidence: tuple[str, ...]
    next_step: str

    def line(self) -> str:
        """The verdict in one line: `proxy_path: no healthy peer ...`."""
        return f"{self.verdict.value}: {self.why}"


def verdict_dict(v: TargetVerdict | None) -> dict[str, Any]:
    """The verdict's keys of a target in `--json`: `verdict`, `why`, `verdict_inputs`, evidence, next step."""
    if v is None:
        return {"verdict": Verdict.UNKNOWN.value, "why": "not judged", "verdict_inputs": []}
    return {
        "verdict": v.verdict.value,
        "why": v.why,
        "verdict_inputs": list(v.inputs),
        "verdict_evidence": list(v.evidence),
        "verdict_next_step": v.next_step,
    }


def unreadable_metrics(why: str, *, too_old: bool = False) -> MetricsSignal:
    """No proxy metrics: `why`, and whether it is because the client is too old for them."""
    return MetricsSignal(Verdict.UNKNOWN, (), "", unavailable=why, too_old=too_old)


def metrics_signal(r: Readings) -> MetricsSignal:
    """The metrics' side of the triage table for `r.target` (gauges now, counters over `r.scope`)."""
    if r.target not in r.snapshot.targets():
        return unreadable_metrics("the proxy reports no series for this target")
    for judge in (_no_feed, _no_healthy, _slow, _failing):
        found = judge(r)
        if found is not None:
            return found
    return MetricsSignal(Verdict.HEALTHY, (_requests_line(r),), r.scope)


def _no_feed(r: Readings) -> MetricsSignal | None:
    unsynced = [gv for gv in r.group_versions() if r.snapshot.cache_synced(r.target, gv) is False]
    if not unsynced:
        return None
    return MetricsSignal(Verdict.NO_PEER_FEED, (f"peer_cache_synced 0 for {', '.join(unsynced)}",), r.scope)


def _no_healthy(r: Readings) -> MetricsSignal | None:
    empty = [
        (gv, peers)
        for gv in r.group_versions()
        if (peers := r.snapshot.peers(r.target, gv)) is not None and peers.healthy == 0
    ]
    if not empty:
        return None
    evidence = [f"{gv}: {describe_peers(peers)}" for gv, peers in empty]
    evidence.append(
        f"all-quarantined transitions {r.scope}: {fmt_count(r.counter(ALL_QUARANTINED))}, "
        f"quarantines: {fmt_count(r.counter(QUARANTINES))}"
    )
    return MetricsSignal(Verdict.PROXY_PATH, tuple(evidence), r.scope)


def _slow(r: Readings) -> MetricsSignal | None:
    requests = r.p99(_recent(r, REQUEST_DURATION))
    deadline = r.counter(TERMINATIONS, reason="deadline")
    near_cap = requests is not None and requests >= SLOW_REQUEST_SECONDS
    if not near_cap and (deadline == 0 or _history(r, deadline)):
        return None
    dials = r.p99(_recent(r, DIAL_DURATION))
    evidence = [
        f"request p99 {r.scope}: {_latency(requests)}; dial p99: {_latency(dials)}",
        f"requests cut at the 60 s deadline {r.scope}: {fmt_count(deadline)}{_share(r)}",
    ]
    return MetricsSignal(Verdict.SLOW_TARGET, tuple(evidence), r.scope)


def _failing(r: Readings) -> MetricsSignal | None:
    failed, _ = _503s_by_kind(r)
    if not failed or _history(r, sum(failed.values())):
        return None
    listing = ", ".join(f"{reason} {fmt_count(n)}" for reason, n in sorted(failed.items(), key=_largest))
    evidence = [f"503 answers {r.scope} by reason: {listing}{_share(r)}"]
    if "upstream" in failed:
        evidence.append("`upstream` is also the proxy's default for failures it did not classify")
    dials = r.p99(_recent(r, DIAL_DURATION))
    if dials is not None and dials >= DIAL_TIMEOUT_SECONDS * 0.8:
        evidence.append(
            f"dial p99 {fmt_seconds(dials)}: failures near the 5 s dial timeout are the peer path"
        )
    return MetricsSignal(Verdict.CHECK_REASON, tuple(evidence), r.scope)


def _503s_by_kind(r: Readings) -> tuple[dict[str, float], dict[str, float]]:
    """503 answers by reason, split: the others, and those of a peer outage (`PEER_OUTAGE`, and dial
    timeouts where peers were quarantined). With healthy peers now (the judges before this one found no
    unhealthy or unsynced cache) the outage is over; the guide's table sends "503s without quarantine" to
    the reasons."""
    outage_reasons = PEER_OUTAGE | ({QUARANTINING_DIAL} if r.counter(QUARANTINES) > 0 else set())
    others: dict[str, float] = {}
    outage: dict[str, float] = {}
    for (code, reason), n in r.counter_by(REQUESTS, "code", "reason").items():
        if code == "503":
            (outage if reason in outage_reasons else others)[reason] = n
    return others, outage


def _history(r: Readings, count: float) -> bool:
    """Whether `count` failures are too few of the totals since the proxy started to say they happen now."""
    total = r.counter(REQUESTS)
    return r.window is None and total > 0 and count / total < LIFETIME_SHARE


def _share(r: Readings) -> str:
    """`(of N requests)`, said of totals since the proxy started, where the share decided."""
    if r.window is not None:
        return ""
    return f" (of {fmt_count(r.counter(REQUESTS))} requests)"


def _recent(r: Readings, family: str) -> Histogram | None:
    """A latency histogram over the window, else since the proxy started."""
    source = r.snapshot if r.window is None else r.window.increase
    return source.histogram(family, target=r.target)


def _largest(item: tuple[str, float]) -> tuple[float, str]:
    return (-item[1], item[0])


def _latency(seconds: float | None) -> str:
    return "too few to tell" if seconds is None else fmt_seconds(seconds)


def _requests_line(r: Readings) -> str:
    total = fmt_count(r.counter(REQUESTS))
    others, over = _503s_by_kind(r)
    failed, cut = sum(others.values()), r.counter(TERMINATIONS, reason="deadline")
    outage = sorted(over.items(), key=_largest)
    head = "healthy peers everywhere" + "".join(
        f"; {fmt_count(n)} 503 answers ({reason}) {r.scope}: peers healthy again" for reason, n in outage
    )
    if failed == 0 and cut == 0:
        other = "; no other" if outage else ", no"
        return f"{head}{other} 503 answers {r.scope} ({total} requests)"
    return (
        f"{head}; {fmt_count(failed)} 503 answers and {fmt_count(cut)} deadline cuts "
        f"{r.scope} of {total} requests, each under {LIFETIME_SHARE:.0%} of them: history rather than now"
    )


# -- the verdict -----------------------------------------------------------------------------------------


def judge(pods: TargetPods, metrics: MetricsSignal, logs: LogSignals | None = None) -> TargetVerdict:
    """The quick-triage verdict from the three inputs (logs: None when they were not read)."""
    inputs = (pods.summary(), metrics.summary(), _logs_summary(logs))
    evidence = (*_pod_lines(pods), *metrics.evidence, *_log_lines(logs))
    if pods.unavailable is not None:
        return _unknown(
            f"the target's control-plane pods could not be read: {pods.unavailable}"
            + _leaning(metrics, logs),
            inputs,
            evidence,
            _pods_step(pods),
        )
    if not pods.ready:
        return _verdict(Verdict.TARGET_DOWN, _down_why(pods), inputs, evidence)
    verdict = metrics.verdict if metrics.unavailable is None else _from_logs(logs)
    if verdict is Verdict.UNKNOWN:
        return _unknown(_metrics_why(metrics), inputs, evidence, _metrics_step(metrics))
    return _verdict(verdict, _why(verdict, metrics), inputs, evidence)


def _verdict(verdict: Verdict, why: str, inputs: tuple[str, ...], evidence: Sequence[str]) -> TargetVerdict:
    return TargetVerdict(verdict, why, inputs, tuple(evidence), NEXT_STEPS[verdict])


def _unknown(why: str, inputs: tuple[str, ...], evidence: Sequence[str], step: str) -> TargetVerdict:
    return TargetVerdict(Verdict.UNKNOWN, why, inputs, tuple(evidence), step)


def _down_why(pods: TargetPods) -> str:
    if not pods.pods:
        return "the target has no control-plane pod running: it is down"
    return f"none of the target's {len(pods.pods)} control-plane pods is Ready: the target is down"


_WHY = {
    Verdict.HEALTHY: "the target's pods are Ready, peers are healthy and requests are not failing with 503",
    Verdict.PROXY_PATH: "the target's pods are Ready but the client has no healthy peer for it: its "
    "endpoints are stale or unreachable from the client",
    Verdict.NO_PEER_FEED: "the target's pods are Ready but the client holds no current peer list (license, "
    "network or platform)",
    Verdict.CHECK_REASON: "the target's pods are Ready and peers are healthy, yet requests answer 503",
    Verdict.SLOW_TARGET: "the target's pods are Ready but requests run into the 60 s request deadline",
}


def _why(verdict: Verdict, metrics: MetricsSignal) -> str:
    if metrics.unavailable is not None:
        return _WHY[verdict] + " (from the client's logs: its metrics could not be read)"
    return _WHY[verdict]


def _from_logs(logs: LogSignals | None) -> Verdict:
    """Without metrics, the log lines alone can still name the two client-side verdicts."""
    if logs is None:
        return Verdict.UNKNOWN
    if logs.seen & _FEED_LINES:
        return Verdict.NO_PEER_FEED
    if LogSignal.ALL_QUARANTINED in logs.seen:
        return Verdict.PROXY_PATH
    return Verdict.UNKNOWN


def _leaning(metrics: MetricsSignal, logs: LogSignals | None) -> str:
    said = metrics.verdict if metrics.unavailable is None else _from_logs(logs)
    if said in (Verdict.UNKNOWN, Verdict.HEALTHY):
        return ""
    return f"; the client's side alone points to {said.value} if the target is up"


def _metrics_why(metrics: MetricsSignal) -> str:
    if metrics.too_old:
        return (
            "the target's pods are Ready, but the client's vCluster is too old for proxy metrics "
            "(/metrics/syncer needs v0.37): too old, not down"
        )
    why = metrics.unavailable
    return f"the target's pods are Ready, but the client's proxy metrics could not be read: {why}"


def _metrics_step(metrics: MetricsSignal) -> str:
    if metrics.too_old:
        return "Upgrade the client tenant cluster to vCluster v0.37 or later to get proxy metrics."
    return "Check the bot's access to the client (kubeconfig, `get` on /metrics/syncer), then read again."


def _pods_step(pods: TargetPods) -> str:
    return (
        "Configure the target's `control_plane` (the control plane cluster hosting it) and grant the bot "
        "`list` on pods in the target's namespace there; meanwhile check the target directly."
    )


def _pod_lines(pods: TargetPods) -> list[str]:
    return [f"pod {p.name}: {p.detail}" for p in pods.pods if not p.ready]


def _logs_summary(logs: LogSignals | None) -> str:
    if logs is None:
        return "client logs: not read"
    return f"client logs: {logs.scope}"


def _log_lines(logs: LogSignals | None) -> list[str]:
    if logs is None:
        return []
    return [f"logged: {signal.value.replace('_', ' ')}" for signal in sorted(logs.seen)]


__all__ = [
    "LogSignal",
    "LogSignals",
    "MetricsSignal",
    "PodState",
    "TargetPods",
    "TargetVerdict",
    "Verdict",
    "judge",
    "metrics_signal",
    "unreadable_metrics",
    "verdict_dict",
]
