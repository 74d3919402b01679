"""Findings about load and flow: latency creep, silent watches, requests piling up in flight."""

from __future__ import annotations

from dataclasses import dataclass

from bot.domain.alerts_catalog import WATCHES_SILENT
from bot.domain.diagnosis_readings import Readings, fmt_count, fmt_duration, fmt_seconds, histogram_minus
from bot.domain.findings import Finding, Severity
from bot.domain.guide import CONFIRM_PATH, PEER_METRICS, REQUEST_METRICS, WATCH_METRICS
from bot.domain.snapshot import (
    ACTIVE_WATCHES,
    DIAL_DURATION,
    INFLIGHT,
    REQUEST_DURATION,
    TERMINATIONS,
    WATCH_EVENTS,
    Histogram,
    label,
)

# A p99 at least this many times the one before the window, and this much higher, is a step.
CREEP_FACTOR = 2.0
CREEP_FLOOR_SECONDS = 0.1
# The alert rule's window: shorter windows of silence are normal for idle resources.
WATCH_SILENCE_SECONDS = 3600.0
# No guide constant for saturation; this many non-watch requests in flight at once is worth a look.
INFLIGHT_HINT = 50.0

_PATH_CAUSE = (
    "The network path degraded: a step with no change on the target is consistent with a fallback to the "
    "DERP relay, which adds a hop."
)
_PATH_STEP = "Run the path check (direct vs relay) and confirm the UDP NetworkPolicy exceptions on both ends."
# Near the 5 s dial timeout the dials fail: a relay raises dial latency by a step, it does not time them out.
_DIAL_FAILING_CAUSE = (
    "Dials run into the 5 s dial timeout: they fail on the peer path (a dead or stale endpoint, or nothing "
    "reaches it), not on a relay fallback, which only raises dial latency by a step."
)
_DIAL_FAILING_STEP = (
    "Check the target's control plane pods and whether the peer list is current; if they are Ready, check "
    "peer publication and reachability (NetworkPolicy, firewall rules, DERP availability)."
)


@dataclass(frozen=True, slots=True)
class _Latency:
    """How to judge one latency histogram."""

    family: str
    kind: str
    what: str
    slow_seconds: float  # a p99 this high is bad on its own
    ceiling: str  # the cap the histogram's buckets stop at
    cause: str  # of a step up
    next_step: str
    section: str
    near_cause: str  # of a p99 close to the ceiling, which a step's cause does not explain
    near_step: str
    near_section: str


DIAL = _Latency(
    DIAL_DURATION,
    "dial_latency",
    "peer dial",
    2.5,
    "5 s dial timeout",
    _PATH_CAUSE,
    _PATH_STEP,
    CONFIRM_PATH,
    _DIAL_FAILING_CAUSE,
    _DIAL_FAILING_STEP,
    PEER_METRICS,
)
REQUEST = _Latency(
    REQUEST_DURATION,
    "request_latency",
    "request",
    30.0,
    "60 s request deadline",
    "A slow target or a relayed network path.",
    "Compare with the same request made directly against the target; run the path check.",
    REQUEST_METRICS,
    "Requests near the 60 s deadline connected but the target answered too slowly.",
    "Check the target's API server, backing store and admission webhooks; compare request with dial "
    "duration: a short dial puts the delay on the target.",
    REQUEST_METRICS,
)


def load_findings(r: Readings) -> list[Finding]:
    return [
        *latency_findings(r, DIAL),
        *latency_findings(r, REQUEST),
        *watch_findings(r),
        *inflight_findings(r),
    ]


def _before_window(r: Readings, spec: _Latency, recent: Histogram | None) -> Histogram | None:
    """What the histogram held before the window, unless a reset makes that unknowable."""
    lifetime = r.snapshot.histogram(spec.family, target=r.target)
    if r.window is None or lifetime is None or recent is None:
        return None
    for name, labels in r.window.reset_series:
        if name == spec.family and label(labels, "target") == r.target:
            return None
    return histogram_minus(lifetime, recent)


def latency_findings(r: Readings, spec: _Latency) -> list[Finding]:
    """A p99 that stepped up against the time before the window, or that sits near its ceiling."""
    if r.window is None:
        recent = r.snapshot.histogram(spec.family, target=r.target)
    else:
        recent = r.window.increase.histogram(spec.family, target=r.target)
    now = r.p99(recent)
    if now is None:
        return []
    base = r.p99(_before_window(r, spec, recent))
    stepped = base is not None and now >= CREEP_FACTOR * base and now - base >= CREEP_FLOOR_SECONDS
    if not stepped and now < spec.slow_seconds:
        return []
    evidence = [f"{spec.what} p99 {fmt_seconds(now)} {r.scope}", f"buckets stop at the {spec.ceiling}"]
    if base is not None:
        evidence.insert(1, f"{spec.what} p99 before the window: {fmt_seconds(base)}")
    near = now >= spec.slow_seconds
    title = (
        f"{spec.what} p99 {fmt_seconds(now)} {r.scope}, close to the {spec.ceiling}"
        if near or base is None
        else f"{spec.what} latency stepped up: p99 {fmt_seconds(now)} against {fmt_seconds(base)} before"
    )
    return [
        r.finding(
            r.for_counters(Severity.WARNING),
            spec.kind,
            title=title,
            evidence=evidence,
            cause=spec.near_cause if near else spec.cause,
            next_step=spec.near_step if near else spec.next_step,
            guide_section=spec.near_section if near else spec.section,
        )
    ]


def watch_findings(r: Readings) -> list[Finding]:
    """Watches open while no event was counted: maybe a stalled stream, maybe an uncounted format."""
    active = r.gauge(ACTIVE_WATCHES)
    if active <= 0 or r.counter(WATCH_EVENTS) > 0:
        return []
    long_enough = r.window is not None and r.window.seconds >= WATCH_SILENCE_SECONDS
    severity = Severity.WARNING if long_enough else Severity.INFO
    return [
        r.finding(
            severity,
            "watches_silent",
            title=f"{fmt_count(active)} watches open but no watch event {r.scope}",
            evidence=[
                f"active watches: {fmt_count(active)}",
                f"watch events: 0 {r.scope}",
                "only uncompressed JSON and CBOR sequence watch streams are counted",
            ]
            + (
                []
                if long_enough
                else [f"the alert waits for {fmt_duration(WATCH_SILENCE_SECONDS)} of silence"]
            ),
            cause="A stalled watch stream, or resources that simply did not change, or clients using a "
            "watch format the counter does not see (compressed, protobuf).",
            next_step="Change a watched object and check that events arrive; if clients use other formats, "
            "this signal does not apply to them.",
            guide_section=WATCH_METRICS,
            alert=WATCHES_SILENT,
        )
    ]


def inflight_findings(r: Readings) -> list[Finding]:
    """A hint that requests are piling up: many in flight, or some in flight while deadlines expire."""
    inflight = r.gauge(INFLIGHT)
    deadlines = r.counter(TERMINATIONS, reason="deadline") if r.window is not None else 0.0
    if inflight < INFLIGHT_HINT and not (inflight > 0 and deadlines > 0):
        return []
    evidence = [f"non-watch requests in flight now: {fmt_count(inflight)}"]
    if deadlines > 0:
        evidence.append(f"requests cut at the 60 s deadline {r.scope}: {fmt_count(deadlines)}")
    return [
        r.finding(
            Severity.INFO,
            "inflight_saturation",
            title=f"{fmt_count(inflight)} requests in flight: possible saturation",
            evidence=evidence,
            cause="Requests are waiting on a slow target or path, so they pile up in the proxy.",
            next_step="Look at request latency and the target's API server load.",
            guide_section=REQUEST_METRICS,
        )
    ]
