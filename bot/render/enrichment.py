"""The words enrichment adds to an alert: Prometheus' window as evidence lines, and why a read is missing.

Counts read from Prometheus are labelled with their window and source ("last 15m, from Prometheus"), so
they are never mistaken for the live state read from the cluster itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from bot.domain.diagnosis import AlertDiagnosis, judged
from bot.domain.diagnosis_readings import MIN_OBSERVATIONS, fmt_duration, fmt_seconds
from bot.domain.enrichment import PromOutcome, PromWindow, Unavailable
from bot.domain.snapshot import (
    DIAL_DURATION,
    DIAL_FAILURES,
    DISCOVERY_FALLBACKS,
    REQUEST_DURATION,
    REQUESTS,
    TERMINATIONS,
)
from bot.domain.verdict import TargetVerdict
from bot.errors import UpstreamError

REASON_LINES = (
    (REQUESTS, "Requests by reason"),
    (DIAL_FAILURES, "Dial failures by reason"),
    (DISCOVERY_FALLBACKS, "Discovery fallbacks by reason"),
    (TERMINATIONS, "Terminations by reason"),
)
TOP_REASONS = 5


def live_unavailable(missed: Unavailable) -> str:
    """Why an alert has no live state: the cluster read was late, cancelled or failed."""
    if missed.late:
        return f"enrichment took longer than {missed.budget:g}s"
    if missed.error is not None:
        return f"the live read failed ({type(missed.error).__name__})"
    return "the live read was cancelled"


def prometheus_unavailable(missed: Unavailable) -> str:
    """Why an alert has no window from Prometheus: late, cancelled, or what Prometheus said."""
    if missed.late:
        return f"took longer than {missed.budget:g}s"
    if missed.error is not None:
        error = missed.error
        return str(error) if isinstance(error, UpstreamError) else type(error).__name__
    return "the read was cancelled"


def scope_label(seconds: float) -> str:
    """How Prometheus-read numbers are labelled: "last 15m, from Prometheus"."""
    return f"last {fmt_duration(seconds)}, from Prometheus"


def evidence_lines(window: PromWindow, group_version: str | None = None) -> tuple[str, ...]:
    """Reason breakdowns (requests always, the others when they counted anything) and p99s."""
    scope = scope_label(window.seconds)
    lines = []
    for family, what in REASON_LINES:
        found = window.reasons(family, group_version if family == REQUESTS else None)
        if found or family == REQUESTS:
            lines.append(f"{what} ({scope}): {_breakdown(found) if found else 'none'}")
    requests = _p99(window, REQUEST_DURATION, window.request_p99, "requests")
    dials = _p99(window, DIAL_DURATION, window.dial_p99, "dials")
    lines.append(f"p99 ({scope}): {requests}; {dials}")
    return tuple(lines)


def with_prometheus(diagnosis: AlertDiagnosis, outcome: PromOutcome | None) -> AlertDiagnosis:
    """The diagnosis with what Prometheus said about the alert's window (or why it said nothing)."""
    if outcome is None:
        return diagnosis
    if outcome.window is None:
        scope = scope_label(outcome.ask.seconds)
        why = "no answer" if outcome.unavailable is None else prometheus_unavailable(outcome.unavailable)
        line = f"Window counts ({scope}): unavailable: {why}"
        return replace(diagnosis, now_evidence=(*diagnosis.now_evidence, line))
    lines = evidence_lines(outcome.window, diagnosis.group_version)
    return replace(diagnosis, now_evidence=(*diagnosis.now_evidence, *lines))


def with_verdict(diagnosis: AlertDiagnosis, verdict: TargetVerdict) -> AlertDiagnosis:
    """The diagnosis judged by the quick-triage verdict of its target (`judged`), and what the verdict
    rests on."""
    line = f"Verdict rests on: {'; '.join(verdict.inputs)}"
    judged_one = judged(diagnosis, verdict)
    return replace(judged_one, now_evidence=(*judged_one.now_evidence, line))


def _count(value: float) -> str:
    # increase() extrapolates to the window's edges: counts are estimates, shown as such.
    return f"{value:,.0f}" if value >= 10 or value.is_integer() else f"{value:.1f}"


def _breakdown(found: Mapping[str, float]) -> str:
    shown = [f"{reason or 'no reason'} {_count(n)}" for reason, n in list(found.items())[:TOP_REASONS]]
    more = len(found) - TOP_REASONS
    return ", ".join(shown) + (f", +{more} more" if more > 0 else "")


def _p99(window: PromWindow, histogram: str, value: float | None, what: str) -> str:
    seen = window.observations(histogram)
    if value is None or seen < MIN_OBSERVATIONS:
        return f"{what}: too few to tell ({_count(seen)})"
    return f"{what} {fmt_seconds(value)} ({_count(seen)})"
