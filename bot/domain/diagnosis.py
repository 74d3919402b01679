"""Diagnosis: a proxy snapshot (and optionally a window of deltas) in, neutral findings out.

`diagnose` looks at every target (or one) and returns findings worst first, with one OK finding for
each target that has nothing worse than INFO. `diagnose_alert` explains one firing guide alert: what
it means, how it stands now per the live snapshot, the likely cause, the next step and the findings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from bot.domain.alert_standing import BY_ALERT, Now, Standing
from bot.domain.alerts_catalog import AlertInfo, AlertScope, about_peer_feed, alert_info
from bot.domain.delta import ProxyDelta
from bot.domain.diagnosis_load import load_findings
from bot.domain.diagnosis_peers import age_hint, peer_findings
from bot.domain.diagnosis_readings import Readings, describe_peers, fmt_count
from bot.domain.diagnosis_traffic import traffic_findings
from bot.domain.findings import Finding, Severity, sort_worst_first, worst
from bot.domain.guide import METRICS, MONITOR
from bot.domain.snapshot import REQUESTS, ProxySnapshot, label
from bot.domain.verdict import TargetVerdict, Verdict


def diagnose(
    snapshot: ProxySnapshot, window: ProxyDelta | None = None, *, target: str | None = None
) -> list[Finding]:
    """Findings for every target of the snapshot (or only `target`), worst first.

    Without `window`, counter-based findings describe totals since the proxy started and say so.
    A target the snapshot does not mention at all gets one INFO finding saying the proxy reports nothing.
    """
    targets = [target] if target is not None else snapshot.targets()
    found: list[Finding] = []
    for t in targets:
        found.extend(_diagnose_target(Readings(snapshot, window, t)))
    return sort_worst_first(found)


def _diagnose_target(r: Readings) -> list[Finding]:
    if r.target not in r.snapshot.targets():
        return [_no_series(r)]
    found = [*peer_findings(r), *traffic_findings(r), *load_findings(r)]
    reset = _reset_finding(r)
    if reset is not None:
        found.append(reset)
    if worst(found) >= Severity.WARNING:
        hint = age_hint(r)
        if hint is not None:
            found.append(hint)
    else:
        found.append(_healthy(r))
    return found


def _healthy(r: Readings) -> Finding:
    evidence = []
    for gv in r.group_versions():
        peers = r.snapshot.peers(r.target, gv)
        synced = r.snapshot.cache_synced(r.target, gv)
        state = describe_peers(peers) if peers is not None else "no peer gauge"
        evidence.append(f"{gv}: {state}, synced {'yes' if synced else 'no' if synced is False else '?'}")
    evidence.append(f"requests {r.scope}: {fmt_count(r.counter(REQUESTS))}")
    return r.finding(
        Severity.OK,
        "healthy",
        title=f"{r.target}: healthy",
        evidence=evidence,
        cause="Every group/version has a synced cache with healthy peers, and no proxy-path failures "
        f"{r.scope}.",
        next_step="Nothing to do.",
        guide_section=MONITOR,
    )


def _no_series(r: Readings) -> Finding:
    return r.finding(
        Severity.INFO,
        "no_series",
        title=f"{r.target}: the proxy reports no series for this target",
        evidence=[f"targets the proxy reports: {', '.join(r.snapshot.targets()) or 'none'}"],
        cause="The target name is not `<project>/<name>` as the proxy labels it, this client does not proxy "
        "to it, or the proxy has not handled anything for it since it started.",
        next_step="Check the target name in the bot config against the `target` label on /metrics/syncer.",
        guide_section=METRICS,
    )


def _reset_finding(r: Readings) -> Finding | None:
    if r.window is None:
        return None
    resets = [name for name, labels in r.window.reset_series if label(labels, "target") == r.target]
    if not resets:
        return None
    return r.finding(
        Severity.INFO,
        "counter_reset",
        title=f"proxy counters restarted {r.scope}: the proxy pod restarted",
        evidence=[f"{len(resets)} series reset, e.g. {sorted(resets)[0]}"],
        cause="Counters dropped, which happens only when the process restarts; increases are counted "
        "from the restart.",
        next_step="Check the client control plane pod's restarts and its previous logs.",
        guide_section=METRICS,
    )


@dataclass(frozen=True, slots=True)
class AlertDiagnosis:
    """One alert explained: meaning, standing now per live state, likely cause, next step, findings."""

    alertname: str
    known: bool
    severity: Severity
    meaning: str
    standing: Standing
    now: str
    now_evidence: tuple[str, ...]
    cause: str
    next_step: str
    traps: tuple[str, ...]
    guide_section: str | None
    target: str | None
    group_version: str | None
    pod: str | None
    findings: tuple[Finding, ...]
    live: bool  # whether live state was read at all
    verdict: TargetVerdict | None = None  # the quick triage of the alert's target, when its pods were read


def diagnose_alert(
    alertname: str,
    labels: Mapping[str, str],
    snapshot: ProxySnapshot | None,
    window: ProxyDelta | None = None,
) -> AlertDiagnosis:
    """Explain one alert against the live state; never raises, whatever the name or labels."""
    info = alert_info(alertname)
    target = labels.get("target") or None
    gv = labels.get("group_version") or None
    findings = _alert_findings(snapshot, window, target, gv)
    now = _now(info, snapshot, window, target, gv, findings)
    cause, next_step = _cause_and_step(info, now, findings)
    return AlertDiagnosis(
        alertname=alertname,
        known=info is not None,
        severity=info.severity
        if info
        else Severity.from_label(labels.get("severity", "")) or Severity.WARNING,
        meaning=info.meaning if info else f"{alertname} is not one of the guide's resource proxy alerts.",
        standing=now.standing,
        now=now.summary,
        now_evidence=now.evidence,
        cause=cause,
        next_step=next_step,
        traps=info.traps if info else (),
        guide_section=info.guide_section if info else None,
        target=target,
        group_version=gv,
        pod=labels.get("pod") or None,
        findings=tuple(findings),
        live=snapshot is not None,
    )


# Verdicts that say where the fault is: the message's cause and next step are theirs.
PLACING = frozenset({Verdict.TARGET_DOWN, Verdict.PROXY_PATH, Verdict.NO_PEER_FEED, Verdict.SLOW_TARGET})


def judged(d: AlertDiagnosis, v: TargetVerdict) -> AlertDiagnosis:
    """The alert's diagnosis under its target's verdict, the one judgement every line follows.

    A verdict that places the fault (`PLACING`) gives the standing (still broken), the cause and the next
    step; what the alert's own reading said otherwise stays as evidence ("peers listed healthy: the proxy
    has not noticed yet"), never as a second conclusion. `check_reason` confirms a still-broken alert,
    whose own finding has read the reasons and is the more precise; on an alert that looked healed it says
    it is not, with the verdict's step. `healthy` and `unknown` leave the alert's reading as it is: the
    triage table covers less than the alerts do, and an unknown verdict knows nothing.
    """
    verdict = v.verdict
    broken = d.standing is Standing.STILL_BROKEN
    if verdict not in PLACING and verdict is not Verdict.CHECK_REASON:
        return replace(d, verdict=v)
    evidence = d.now_evidence
    if d.standing in (Standing.RECOVERING, Standing.RECOVERED):
        evidence = (_looks_healed(verdict), *evidence)
    elif not broken:
        evidence = (d.now, *evidence)
    own = d if verdict is Verdict.CHECK_REASON and broken else None
    if verdict is Verdict.TARGET_DOWN and broken and about_peer_feed(d.alertname):
        # The client's peer feed is down and the target too: two causes, each with its step.
        also = f"The target is down as well: {_lower_first(v.next_step)}"
        own = replace(d, next_step=f"{d.next_step} {also}")
    return replace(
        d,
        verdict=v,
        standing=Standing.STILL_BROKEN,
        now=d.now if broken else v.why,
        now_evidence=evidence,
        cause=_sentence(v.why) if own is None else own.cause,
        next_step=v.next_step if own is None else own.next_step,
        # A metrics-only "healthy" is not a second conclusion beside a fault the verdict placed.
        findings=tuple(f for f in d.findings if f.severity is not Severity.OK),
    )


def _looks_healed(verdict: Verdict) -> str:
    """The alert's own reading, healed, as evidence under a verdict that says otherwise."""
    if verdict is Verdict.TARGET_DOWN:
        return "the client's proxy metrics look healed: it has not noticed the target is down yet"
    return "this alert's own condition has ended, but the verdict's evidence has not"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _alert_findings(
    snapshot: ProxySnapshot | None, window: ProxyDelta | None, target: str | None, gv: str | None
) -> list[Finding]:
    if snapshot is None:
        return []
    found = diagnose(snapshot, window, target=target)
    return [f for f in found if gv is None or f.group_version in (None, gv)]


def _now(
    info: AlertInfo | None,
    snapshot: ProxySnapshot | None,
    window: ProxyDelta | None,
    target: str | None,
    gv: str | None,
    findings: list[Finding],
) -> Now:
    if snapshot is None:
        return Now(Standing.UNKNOWN, "the client cluster could not be read: no live state to compare with")
    if info is None:
        return Now(Standing.UNKNOWN, _plain_summary(findings))
    if info.scope is AlertScope.PROBE:
        return _probe_now(findings)
    if target is None:
        return Now(
            Standing.UNKNOWN,
            f"the alert carries no target label; live findings cover {_plain_summary(findings)}",
        )
    if target not in snapshot.targets():
        line = f"the proxy read reports nothing for {target}: another replica, or no longer proxied"
        return Now(Standing.UNKNOWN, line)
    return BY_ALERT[info.name](Readings(snapshot, window, target), gv)


def _plain_summary(findings: list[Finding]) -> str:
    if not findings:
        return "the proxy reports no target"
    top = findings[0]
    return f"live state: {top.severity.label}, {top.title}"


def _probe_now(findings: list[Finding]) -> Now:
    """The probe sees more than the proxy: healthy metrics cannot clear it, failing ones explain it."""
    top = findings[0] if findings else None
    evidence = tuple(f"{f.target}: {f.title}" for f in findings if f.severity >= Severity.WARNING)
    if top is not None and top.severity is Severity.CRITICAL:
        return Now(Standing.STILL_BROKEN, f"the proxy itself is failing: {top.target}: {top.title}", evidence)
    line = (
        "proxy metrics are degraded; run the probe now to see whether callers still fail"
        if evidence
        else "proxy metrics look healthy: suspect the probe or the APIService wiring; run the probe now"
    )
    return Now(Standing.UNKNOWN, line, evidence)


def _cause_and_step(info: AlertInfo | None, now: Now, findings: list[Finding]) -> tuple[str, str]:
    """The catalogue's cause and step, made specific by the worst live finding when it is still broken."""
    related = [f for f in findings if f.severity >= Severity.WARNING]
    if info is None:
        if related:
            return related[0].cause, related[0].next_step
        return "Unknown to the bot's catalogue.", "Read the alert's annotations and runbook."
    if now.standing is Standing.STILL_BROKEN and related:
        own = [f for f in related if f.alert == info.name] or related
        return own[0].cause, own[0].next_step
    if now.standing is Standing.RECOVERING:
        return info.cause, "Watch it resolve; if it fires again, " + _lower_first(info.next_step)
    if now.standing is Standing.RECOVERED:
        return info.cause, "Confirm with the probe; the alert should resolve on its next evaluations."
    return info.cause, info.next_step


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


__all__ = ["AlertDiagnosis", "Standing", "diagnose", "diagnose_alert", "judged"]
