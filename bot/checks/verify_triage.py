"""`verify`'s lines about the proxy's own objects and versions, per client cluster:

- `apiservices`: every configured group/version's APIService exists and is Available, the Service its
  `spec.service` names exists, and no protected APIService is left over for a group/version the config
  does not name (an orphan: its removal steps are the fix).
- `versions`: the client runs vCluster v0.37 or later (else /metrics/syncer does not exist) and the same
  minor version as each target; tenants behind the newest version seen are named, without failing.
"""

from __future__ import annotations

from bot.checks.triage import ClusterTriage
from bot.checks.verify_lines import Outcome, VerifyLine
from bot.domain.apiservices import apiservice_findings
from bot.domain.findings import Severity, sort_worst_first
from bot.domain.versions import VClusterVersion, version_findings

# Version flags that fail the line: a client blind to monitoring, or ends apart. Lagging is named only.
FAILING_VERSIONS = frozenset({"client_too_old", "version_skew"})


def apiservices_line(triage: ClusterTriage) -> VerifyLine:
    """Pass when every configured APIService is Available with its Service, and none is orphaned."""
    reads = triage.apiservices
    problems = sort_worst_first([f for f in apiservice_findings(reads) if f.severity >= Severity.WARNING])
    evidence = tuple(reads.lines()) + tuple(f"orphan: {o.name}" for o in reads.orphans())
    if not problems:
        summary = f"{len(reads.configured)} APIService(s) Available with their Service, no orphan"
        return VerifyLine("apiservices", triage.cluster, Outcome.PASS, summary, evidence)
    summary = "; ".join(f.title for f in problems[:3]) + (
        f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
    )
    return VerifyLine("apiservices", triage.cluster, Outcome.FAIL, summary, evidence, problems[0].next_step)


def versions_line(triage: ClusterTriage, fleet_newest: VClusterVersion | None) -> VerifyLine:
    """Pass when the client can publish proxy metrics and runs its targets' minor version."""
    client = triage.client_version
    targets = [t.version for t in triage.targets.values()]
    evidence = tuple(f"{v.role.value} {v.name}: {v.shown()}" for v in (client, *targets))
    if client.version is None or any(t.version is None for t in targets):
        fix = (
            "configure `control_plane` for the client and each target, and grant `get` on statefulsets there"
        )
        summary = "not every vCluster version could be read"
        return VerifyLine("versions", triage.cluster, Outcome.NOT_CHECKED, summary, evidence, fix)
    flags = version_findings(client, targets, fleet_newest)
    failing = [f for f in flags if f.kind in FAILING_VERSIONS]
    lagging = tuple(f"lags: {f.title}" for f in flags if f.kind not in FAILING_VERSIONS)
    if failing:
        summary = "; ".join(f.title for f in failing)
        return VerifyLine(
            "versions", triage.cluster, Outcome.FAIL, summary, evidence + lagging, failing[0].next_step
        )
    summary = f"client {client.version} serves proxy metrics (v0.37+) and matches its targets' minor version"
    return VerifyLine("versions", triage.cluster, Outcome.PASS, summary, evidence + lagging)
