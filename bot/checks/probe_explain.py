"""The probe's outcome in the vendor's terms: what the answer means and the next step, per class.

401 `auth failed` is platform trust (not RBAC); 403 is the target's RBAC for the client's identity
`loft:vcluster:<client-project-namespace>:<name>` (the `can-i` check filled in) or the platform's `use` on
the target VirtualClusterInstance; 404 lists the four causes, the likely one first for the target's
`accessResources` and the request; 409 on create is a name collision; 501 a connection upgrade; 503 names
the target and group/version. A failed attempt's duration is read by the 5 s / 60 s rule.

A 503's cause is never read from the answer: the proxy gives its prechecks and a target's own 5xx the same
generic text and `Retry-After: 1` (the vendor's troubleshooting page, "Target tenant cluster returns 503
unavailable"); the `reason` label and the client's logs tell them apart, and the live peer state may point
at one.

A next step names the commands as Slack offers them, `/proxy NAME ...`: the answer is read in Slack (a
`/proxy probe` or *Probe now*); the console prints it with the console's own (`bot.render.terminal.show`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from bot.checks.probe import PROBE_TIMEOUT, ProbeRequest
from bot.domain.probe_result import (
    LatencySummary,
    LivePointer,
    ProbeAttempt,
    ProbeOutcome,
    ProbeResult,
    pointer_in,
)
from bot.domain.proxy_answers import (
    DIAL_TIMEOUT,
    REQUEST_DEADLINE,
    RequestKind,
    client_identity,
    is_auth_failed,
    is_client_identity,
    latency_rule,
    not_found_causes,
    project_namespace,
    refused_user,
    unavailable_subject,
)

Explanation = tuple[str, str, list[str]]  # summary, next step, evidence lines of the failed answer
AGAIN = 3  # a few answers more: one 503 of a restart among answered ones, or every one failing


def explained(request: ProbeRequest, attempts: tuple[ProbeAttempt, ...], evidence: list[str]) -> ProbeResult:
    """The result of a probe series: outcome of the first failed attempt (else OK), explained."""
    failed = next((a for a in attempts if a.outcome is not ProbeOutcome.OK), None)
    outcome = ProbeOutcome.OK if failed is None else failed.outcome
    summary, step, extra = _explain(request, attempts, failed, evidence)
    lines = [_tally(attempts), *extra, *evidence]
    return ProbeResult(request, attempts, outcome, summary, tuple(lines), step, _latency(attempts))


def _tally(attempts: tuple[ProbeAttempt, ...]) -> str:
    counts: dict[str, int] = {}
    for a in attempts:
        key = str(a.status) if a.status is not None else a.outcome.value
        counts[key] = counts.get(key, 0) + 1
    return "answers: " + ", ".join(f"{key} x{n}" for key, n in counts.items())


def _latency(attempts: tuple[ProbeAttempt, ...]) -> LatencySummary | None:
    seconds = sorted(a.seconds for a in attempts if a.seconds is not None)
    if not seconds:
        return None
    return LatencySummary(len(seconds), seconds[0], statistics.median(seconds), seconds[-1])


def _explain(
    request: ProbeRequest,
    attempts: tuple[ProbeAttempt, ...],
    failed: ProbeAttempt | None,
    evidence: list[str],
) -> Explanation:
    if failed is None:
        return _ok(request, attempts)
    explain = _EXPLAIN.get(failed.outcome, _plain)
    summary, step, extra = explain(request, failed, evidence)
    timing = latency_rule(failed.seconds)
    extra = [*([f"answer: {failed.message}"] if failed.message else []), *extra]
    return summary, step, [*extra, *([timing] if timing else [])]


def _ok(request: ProbeRequest, attempts: tuple[ProbeAttempt, ...]) -> Explanation:
    summary = f"callers reach {request.target}: the list answered 200 through {request.cluster}"
    if any(a.items == 0 for a in attempts):
        # An empty list is still success; with `accessResources: owned` it may just mean nothing is ours.
        note = "the list came back empty (with accessResources: owned a list shows only the client's objects)"
        return summary, "Nothing to do.", [note]
    return summary, "Nothing to do.", []


# -- who the client is on the target and the platform -------------------------------------------------


def _project(request: ProbeRequest) -> str:
    return request.target.partition("/")[0]


def _identity(request: ProbeRequest, failed: ProbeAttempt) -> tuple[str, str | None]:
    """The client's identity (from the answer when it names one) and, if inferred, the assumption made."""
    named = refused_user(failed.message or "")
    if named is not None and is_client_identity(named):
        return named, None
    inferred = client_identity(project_namespace(_project(request)), request.cluster)
    assumption = (
        f"identity inferred as {inferred}: the client in the target's project {_project(request)} with "
        "the default p- prefix (a client in another project uses its own project namespace)"
    )
    return inferred, assumption


def _can_i(request: ProbeRequest, identity: str, verb: str = "list") -> str:
    group = request.group_version.split("/")[0]
    target = request.ref.target.tenant_name
    return (
        f"vcluster connect {target} --driver platform --project {_project(request)} -- "
        f'kubectl auth can-i {verb} {request.resource}.{group} -n {request.namespace} --as="{identity}"'
    )


def _use_check(request: ProbeRequest, identity: str) -> str:
    return (
        f"kubectl auth can-i use virtualclusterinstances.management.loft.sh/{request.ref.target.tenant_name} "
        f'--as="{identity}" -n {project_namespace(_project(request))} --context <platform-context>'
    )


# -- per class ----------------------------------------------------------------------------------------


def _unauthorized(request: ProbeRequest, failed: ProbeAttempt, evidence: list[str]) -> Explanation:
    if any("answered 401" in line for line in evidence):
        summary = f"401: the client cluster {request.cluster} rejects the bot's own credentials"
        step = "Renew the token or client certificate in the bot's kubeconfig for this cluster."
        return summary, step, []
    cluster = request.ref.cluster
    release = (cluster.control_plane.release if cluster.control_plane else None) or cluster.name
    restart = (
        f"kubectl -n {cluster.control_plane_namespace} rollout restart statefulset/{release} "
        "(on the control plane cluster; replica by replica)"
    )
    trusted = "discovery with the same identity was accepted, so the bot's credentials are valid"
    if is_auth_failed(failed.message or ""):
        summary = (
            f"401 auth failed: {request.target} rejected {request.cluster}'s platform access key "
            "(platform trust, not Kubernetes RBAC)"
        )
    else:
        summary = f"401 on the probe only: {request.target} refused the proxy's credentials (passed through)"
    step = (
        f"Confirm {request.cluster} and {request.target} are connected to the same platform and the project "
        "pairing is right (targetVirtualCluster.project defaults to the client's own project). If the "
        f"access key was rotated, restart the client's control plane pods to refresh it: {restart}."
    )
    return summary, step, [trusted, "RBAC does not answer 401: granting verbs will not fix this"]


def _forbidden(request: ProbeRequest, failed: ProbeAttempt, evidence: list[str]) -> Explanation:
    named = refused_user(failed.message or "")
    if any("answered 403" in line for line in evidence) or (named and not is_client_identity(named)):
        who = f" ({named})" if named else ""
        summary = f"403: the bot's identity{who} may not list {request.resource} on {request.cluster}"
        group = request.group_version.split("/")[0]
        step = (
            f"Grant the bot `list` on {request.resource}.{group} in namespace {request.namespace} of the "
            f"client cluster {request.cluster}: the Role `proxybot-tenant-probe` in "
            "config/deploy/tenant-cluster/rbac.yaml, edited to this probe."
        )
        return summary, step, []
    identity, assumption = _identity(request, failed)
    summary = (
        f"403: the target's RBAC refuses {identity} to list {request.resource} ({request.group_version})"
    )
    step = (
        f"Bind {identity} on {request.target} to a role with get, list and watch (keep `get` beside "
        f"update/patch/delete: owned mode GETs before those). Check with admin credentials: "
        f"`{_can_i(request, identity)}`. If the platform refused the target at client create or "
        f"registration instead, check `use` on the VirtualClusterInstance: `{_use_check(request, identity)}`."
    )
    extra = [assumption] if assumption else [f"the answer names the client's identity {identity}"]
    return summary, step, extra


def _not_served(request: ProbeRequest, failed: ProbeAttempt, evidence: list[str]) -> Explanation:
    access = request.ref.target.access_resources
    causes = not_found_causes(access, RequestKind.LIST)
    summary = (
        f"404 on a list: {request.resource} in {request.group_version} is not served at this path "
        "(ownership masking never applies to lists)"
    )
    lines = [
        f"404 cause {i}: {line.cause.value}"
        + ("" if line.applies else f" (does not apply to a list with accessResources: {access})")
        + f": {line.words}"
        for i, line in enumerate(causes, 1)
    ]
    step = (
        f"Likely a {causes[0].cause.value}: compare the discovery line with the probe config. A missing "
        "group/version means the APIService is not on the client; a missing resource a wrong plural or a "
        "CRD absent on the target; a cluster-scoped resource must not be probed with a namespace."
    )
    return summary, step, lines


def _conflict(request: ProbeRequest, failed: ProbeAttempt, evidence: list[str]) -> Explanation:
    summary = f"409: a name collision on {request.target} (owned isolates visibility, not names)"
    step = (
        "An object of that name exists on the target, perhaps another tenant's that this client cannot "
        "see: create it under another name, or adopt the existing one by labelling it on the target."
    )
    return summary, step, []


def _upgrade(request: ProbeRequest, failed: ProbeAttempt, evidence: list[str]) -> Explanation:
    summary = "501: the resource proxy does not support connection upgrades"
    step = (
        f"exec, attach and port-forward go to {request.target} directly (vcluster connect), never "
        "through the proxy; a plain list should not be an upgrade: check proxies in front of the client."
    )
    return summary, step, []


def _unavailable(request: ProbeRequest, failed: ProbeAttempt, evidence: list[str]) -> Explanation:
    named = unavailable_subject(failed.message or "")
    subject = f"{named[0]} ({named[1]})" if named else f"{request.target} ({request.group_version})"
    summary = f"503 from the proxy: the target {subject} is unavailable to {request.cluster}"
    pointed = _pointed_step(request.target, evidence)
    restart = (
        "A single 503 during a target rolling restart is expected and self-heals: probe again a few times "
        f"({_again(request)})."
    )
    unpointed = (
        "The answer cannot say why: a down target, no peer, every peer quarantined, a stale peer list and "
        "the target's own 5xx all reach callers as this 503. The `reason` label on "
        f"vcluster_proxy_request_total tells them apart (`/proxy reasons {request.target}`), or the "
        f"client's logs (`/proxy logs {request.target}`); `upstream` usually means the target answered "
        f"5xx, but read the client proxy's logs before blaming it. {restart}"
    )
    confirm = (
        f"The `reason` label (`/proxy reasons {request.target}`) and the client's logs (`/proxy logs "
        f"{request.target}`) confirm it."
    )
    step = f"{pointed} {confirm} {restart}" if pointed else unpointed
    if failed.retry_after is None:
        header = (
            "no Retry-After header: the proxy sets it on every 503 it answers, so this one may come from a "
            "layer in front of it (the aggregation layer); it does not show the target answered"
        )
    else:
        header = (
            f"Retry-After: {failed.retry_after} (the proxy sets it on every 503, a target's 5xx included)"
        )
    return summary, step, [header]


def _again(request: ProbeRequest) -> str:
    """The same probe as a series: its options where they are not the target's own probe's."""
    own = request.ref.target.probe
    asked = (
        ("--gv", request.group_version, own.group_version),
        ("--resource", request.resource, own.resource),
        ("--namespace", request.namespace, own.namespace),
    )
    options = "".join(f" {flag} {value}" for flag, value, default in asked if value != default)
    return f"`/proxy probe {request.target}{options} --repeat {AGAIN}`"


def _pointed_step(target: str, evidence: list[str]) -> str | None:
    """The next step of a 503 when the live peer state (its line in `evidence`) points somewhere."""
    pointer = pointer_in(evidence)
    if pointer is LivePointer.PEERS:
        return (
            f"No healthy peer now: check the target's control plane first (`/proxy status {target}` reads "
            f"its pods), then the path (`/proxy path {target}`)."
        )
    if pointer is LivePointer.FEED:
        return (
            "No trusted peer list now: restore the client's peer feed first (its control plane's connection "
            f"to the platform, the licence); `/proxy status {target}` shows it."
        )
    return None


def _timeout(request: ProbeRequest, failed: ProbeAttempt, evidence: list[str]) -> Explanation:
    summary = f"no answer within {PROBE_TIMEOUT:g} s: the path to {request.target} is degraded"
    step = (
        f"A failed dial gives up at {DIAL_TIMEOUT:g} s and answers 503, so silence past it points at the "
        f"target's response path (the proxy cuts at {REQUEST_DEADLINE:g} s): check the target's API "
        "server, backing store and webhooks; run the path check for a relayed path."
    )
    return summary, step, []


# Outcomes whose explanation needs no evidence: (summary, next step), formatted with the request.
_PLAIN: dict[ProbeOutcome, tuple[str, str]] = {
    ProbeOutcome.UNREACHABLE: (
        "the client cluster {r.cluster} could not be reached: nothing is known about the proxy",
        "Check the bot's kubeconfig for this cluster and the network between the bot and its API server.",
    ),
    ProbeOutcome.HTTP_ERROR: (
        "unexpected answer {a.status} from the probe",
        "Read the answer's message: the proxy turns the target's 5xx into 503, so another 5xx comes from "
        "a layer in front of it (the aggregation layer) or, near 60 s, the proxy's own deadline.",
    ),
}


def _plain(request: ProbeRequest, failed: ProbeAttempt, evidence: list[str]) -> Explanation:
    summary, step = _PLAIN[failed.outcome]
    return summary.format(r=request, a=failed), step, []


_EXPLAIN: dict[ProbeOutcome, Callable[[ProbeRequest, ProbeAttempt, list[str]], Explanation]] = {
    ProbeOutcome.UNAVAILABLE: _unavailable,
    ProbeOutcome.NOT_SERVED: _not_served,
    ProbeOutcome.UNAUTHORIZED: _unauthorized,
    ProbeOutcome.FORBIDDEN: _forbidden,
    ProbeOutcome.CONFLICT: _conflict,
    ProbeOutcome.UPGRADE_REJECTED: _upgrade,
    ProbeOutcome.TIMEOUT: _timeout,
}
