"""Findings about traffic: request reasons, terminations, discovery fallbacks and dial failures."""

from __future__ import annotations

from bot.domain.alerts_catalog import DISCOVERY_DEGRADED
from bot.domain.diagnosis_readings import Readings, fmt_count, fmt_times
from bot.domain.findings import Finding, Severity
from bot.domain.guide import OUTCOME_REASONS, REQUEST_METRICS
from bot.domain.reasons import (
    DIAL_FAILURE_REASONS,
    PEER_AVAILABILITY,
    TERMINATION_REASONS,
    OutcomeReason,
    ReasonKind,
    reason_info,
)
from bot.domain.snapshot import DIAL_FAILURES, DISCOVERY_FALLBACKS, REQUESTS, TERMINATIONS

DEADLINE_SECONDS = 60

_KIND_NOTE = {
    ReasonKind.ISOLATION: "isolation working, usually not a fault",
    ReasonKind.CALLER_SIDE: "caller-side, not a proxy fault",
    ReasonKind.TARGET_SIDE: "answered by the target",
    ReasonKind.PROXY_FAULT: "proxy path",
    ReasonKind.UNKNOWN: "unknown reason",
}


def traffic_findings(r: Readings) -> list[Finding]:
    return [
        *discovery_findings(r),
        *request_reason_findings(r),
        *termination_findings(r),
        *dial_failure_findings(r),
    ]


def _reason_severity(info: OutcomeReason) -> Severity:
    return Severity.WARNING if info.kind is ReasonKind.PROXY_FAULT else Severity.INFO


def _codes(r: Readings, gv: str, reason: str) -> str:
    by_code = r.counter_breakdown(REQUESTS, "code", group_version=gv, reason=reason)
    return "codes: " + ", ".join(f"{code or '?'}: {fmt_count(n)}" for code, n in by_code.items())


def discovery_findings(r: Readings) -> list[Finding]:
    """Discovery served from the local fallback: a 200 for callers while real requests fail."""
    out: list[Finding] = []
    by_gv = r.counter_breakdown(DISCOVERY_FALLBACKS, "group_version")
    for gv, total in by_gv.items():
        reasons = r.counter_breakdown(DISCOVERY_FALLBACKS, "reason", group_version=gv)
        peer_side = any(k in PEER_AVAILABILITY for k in reasons)
        cause, step = _fallback_cause(r, gv, peer_side)
        out.append(
            r.finding(
                r.for_counters(Severity.WARNING),
                "discovery_fallback",
                title=f"{gv}: discovery served from the local fallback {fmt_times(total)} {r.scope}; "
                "callers see 200 and an Available APIService while real requests fail",
                evidence=[
                    "fallback reasons: " + ", ".join(f"{k} {fmt_count(v)}" for k, v in reasons.items()),
                    "fallback lists explicit resources with only `get` (wildcard: empty list)",
                ],
                cause=cause,
                next_step=step,
                guide_section=REQUEST_METRICS,
                group_version=gv,
                alert=DISCOVERY_DEGRADED,
            )
        )
    return out


def _fallback_cause(r: Readings, gv: str, peer_side: bool) -> tuple[str, str]:
    """Why discovery fell back: the peer check, a dial after it (reason on the requests), or the target."""
    if peer_side:
        return (
            "The peer check failed, so the proxy path is down.",
            "Do not trust the APIService status; run the probe and follow the peer findings.",
        )
    requests = r.counter_breakdown(REQUESTS, "reason", group_version=gv)
    dials = sorted(k for k, n in requests.items() if k in DIAL_FAILURE_REASONS and n > 0)
    if dials:
        return (
            f"The discovery dial failed after the peer check ({', '.join(dials)} on the requests), and the "
            "proxy turned it into a 5xx (upstream_error): the path, not the target.",
            f"Follow the {dials[0]} reason: {reason_info(dials[0]).next_step}",
        )
    return (
        "Discovery got 401, 404 or 5xx after the peer check (upstream_error): the target's answer, or a "
        "transport failure the proxy turned into a 5xx.",
        "Read the client proxy's logs first; then check that the target serves this group/version (CRD "
        "installed) and accepts the proxy.",
    )


def _reported(r: Readings, gv: str, reason: str, count: float) -> float:
    """How many requests of one reason deserve a finding here (0: none, or reported elsewhere)."""
    if reason in TERMINATION_REASONS and r.counter(TERMINATIONS, reason=reason) > 0:
        return 0.0  # reported once, by the termination finding
    if reason == "upstream_error" and r.counter(DISCOVERY_FALLBACKS, group_version=gv, reason=reason) > 0:
        return 0.0  # reported by the discovery finding
    if reason == "upstream":
        # The target's own answers: only its 5xx are worth a line.
        codes = r.counter_breakdown(REQUESTS, "code", group_version=gv, reason=reason)
        return sum(n for code, n in codes.items() if code.startswith("5"))
    return count


def request_reason_findings(r: Readings) -> list[Finding]:
    """One finding per group/version and reason that moved, framed by the reason catalogue."""
    out: list[Finding] = []
    for (gv, reason), count in sorted(r.counter_by(REQUESTS, "group_version", "reason").items()):
        reported = _reported(r, gv, reason, count)
        if reported > 0:
            out.append(_request_reason(r, gv, reason, reported))
    return out


def _request_reason(r: Readings, gv: str, reason: str, count: float) -> Finding:
    info = reason_info(reason)
    total = r.counter(REQUESTS, group_version=gv)
    share = f" ({100 * count / total:.1f} %)" if total > 0 else ""
    what = "answered 5xx, upstream" if reason == "upstream" else reason
    return r.finding(
        r.for_counters(_reason_severity(info)),
        "request_reason",
        title=f"{gv}: {fmt_count(count)} requests {what} {r.scope} ({_KIND_NOTE[info.kind]})",
        evidence=[
            f"{reason}: {fmt_count(count)} of {fmt_count(total)} requests{share} {r.scope}",
            _codes(r, gv, reason),
            info.meaning,
        ],
        cause=info.cause,
        next_step=info.next_step,
        guide_section=info.guide_section,
        group_version=gv,
        reason=reason,
    )


def termination_findings(r: Readings) -> list[Finding]:
    """Requests the proxy itself cut: the 60 s deadline, and rejected connection upgrades (501)."""
    out: list[Finding] = []
    for reason, count in r.counter_breakdown(TERMINATIONS, "reason").items():
        info = reason_info(reason)
        if reason == "deadline":
            title = f"{fmt_count(count)} requests cut at the {DEADLINE_SECONDS} s request deadline {r.scope}"
        elif reason == "upgrade_rejected":
            title = f"{fmt_count(count)} connection upgrades rejected with 501 {r.scope} (caller-side)"
        else:
            title = f"{fmt_count(count)} requests terminated by the proxy, reason {reason} {r.scope}"
        out.append(
            r.finding(
                r.for_counters(_reason_severity(info)),
                "termination",
                title=title,
                evidence=[f"terminations {reason}: {fmt_count(count)} {r.scope}", info.meaning],
                cause=info.cause,
                next_step=info.next_step,
                guide_section=REQUEST_METRICS,
                reason=reason,
            )
        )
    return out


def dial_failure_findings(r: Readings) -> list[Finding]:
    """All dial failures of the target in one finding, explained by its worst proxy-side reason."""
    by_reason = r.counter_breakdown(DIAL_FAILURES, "reason")
    if not by_reason:
        return []
    infos = [reason_info(k) for k in by_reason]
    faults = [i for i in infos if i.is_proxy_fault or not i.known]
    lead = faults[0] if faults else infos[0]
    severity = Severity.WARNING if faults else Severity.INFO
    total = sum(by_reason.values())
    listing = ", ".join(f"{k} {fmt_count(v)}" for k, v in by_reason.items())
    return [
        r.finding(
            r.for_counters(severity),
            "dial_failures",
            title=f"{fmt_count(total)} peer dial failures {r.scope}, mostly {lead.name}"
            + ("" if faults else " (caller-side, not a proxy fault)"),
            evidence=[f"dial failures by reason: {listing}", f"{lead.name}: {lead.meaning}"],
            cause=lead.cause,
            next_step=lead.next_step,
            guide_section=OUTCOME_REASONS,
        )
    ]
