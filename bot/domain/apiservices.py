"""The proxy's objects in the client tenant cluster: an APIService per proxied group/version, and its Service.

Per configured group/version the APIService `<version>.<group>` must exist and be `Available`, and the
Service its `spec.service` names must exist; the Service is looked up through that field, never by a
name built here (vCluster shortens long names with a hash). Both objects carry the protection label
`vcluster.loft.sh/protected=resource-proxy`; a protected APIService whose group/version the bot's
configuration no longer names is an orphan: it is not garbage-collected and keeps that group/version
unavailable, and removing it takes the vendor's steps (the label first: deletes of labelled objects are
denied). What is read is `bot.reads.apiservices`; what it means is decided here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.domain.findings import Finding, Severity, finding_key
from bot.domain.guide import APISERVICE_DELETE_DENIED, PROXY_DOES_NOT_START

PROTECTED_LABEL = "vcluster.loft.sh/protected"
PROTECTED_VALUE = "resource-proxy"
PROTECTED_SELECTOR = f"{PROTECTED_LABEL}={PROTECTED_VALUE}"


def apiservice_name(group_version: str) -> str:
    """The APIService vCluster registers for a group/version: `example.com/v1` -> `v1.example.com`."""
    group, _, version = group_version.partition("/")
    return f"{version}.{group}"


@dataclass(frozen=True, slots=True)
class ServiceRef:
    """Where an APIService sends its requests: `spec.service`."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ApiService:
    """The fields of one APIService the checks judge."""

    name: str
    group_version: str | None  # spec.group/spec.version
    available: bool | None  # the Available condition; None when it reports none
    condition: str  # the condition in words
    service: ServiceRef | None
    protected: bool


def parse_apiservice(doc: Mapping[str, Any]) -> ApiService:
    """An APIService document (as the API returns it) in the shape the checks judge."""
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    labels = meta.get("labels") or {}
    group, version = spec.get("group"), spec.get("version")
    gv = f"{group}/{version}" if group and version else None
    raw = spec.get("service")
    service = None
    if isinstance(raw, Mapping) and raw.get("name") and raw.get("namespace"):
        service = ServiceRef(str(raw["namespace"]), str(raw["name"]))
    available, condition = _available(doc)
    protected = labels.get(PROTECTED_LABEL) == PROTECTED_VALUE
    return ApiService(str(meta.get("name", "")), gv, available, condition, service, protected)


def _available(doc: Mapping[str, Any]) -> tuple[bool | None, str]:
    conditions = (doc.get("status") or {}).get("conditions") or []
    for c in conditions:
        if isinstance(c, Mapping) and c.get("type") == "Available":
            status = c.get("status")
            words = f"Available {status}"
            if status != "True" and (c.get("reason") or c.get("message")):
                words += f" ({c.get('reason', '')}: {c.get('message', '')})"
            return status == "True", words
    return None, "no Available condition"


@dataclass(frozen=True, slots=True)
class ServiceLookup:
    """Whether the Service an APIService names exists (None: it could not be read, `detail` says why)."""

    ref: ServiceRef
    found: bool | None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ApiServiceRead:
    """One configured group/version's APIService and its Service, as read from the client cluster."""

    group_version: str
    target: str  # the target this group/version is proxied to
    apiservice: ApiService | None  # None: it does not exist (or could not be read: `unavailable`)
    service: ServiceLookup | None = None
    unavailable: str | None = None


@dataclass(frozen=True, slots=True)
class ClientApiServices:
    """Configured APIServices of one client cluster, and the protected ones for orphan hunting."""

    cluster: str
    configured: tuple[ApiServiceRead, ...]  # those asked about (one target's, or all)
    named: frozenset[str] = frozenset()  # every group/version the configuration names for the cluster
    protected: tuple[ApiService, ...] = ()
    protected_unavailable: str | None = None  # the protected list could not be read
    orphan_services: Mapping[str, ServiceLookup] | None = None  # orphan APIService name -> its Service

    def orphans(self) -> tuple[ApiService, ...]:
        """Protected APIServices for group/versions the configuration does not name."""
        names = {apiservice_name(gv) for gv in self.named}
        return tuple(a for a in self.protected if a.group_version not in self.named and a.name not in names)

    def as_dict(self) -> dict[str, Any]:
        return {
            "configured": [_read_dict(r) for r in self.configured],
            "orphans": [
                {
                    "name": o.name,
                    "group_version": o.group_version,
                    "service": None if o.service is None else str(o.service),
                    "removal": removal_steps(o, (self.orphan_services or {}).get(o.name)),
                }
                for o in self.orphans()
            ],
            "protected_unavailable": self.protected_unavailable,
        }

    def lines(self) -> list[str]:
        """One line per configured APIService, for the status notes."""
        return [_line(r) for r in self.configured]


def _read_dict(r: ApiServiceRead) -> dict[str, Any]:
    a, svc = r.apiservice, r.service
    return {
        "group_version": r.group_version,
        "target": r.target,
        "name": apiservice_name(r.group_version),
        "exists": None if r.unavailable is not None else a is not None,
        "available": None if a is None else a.available,
        "condition": None if a is None else a.condition,
        "service": None if svc is None else str(svc.ref),
        "service_exists": None if svc is None else svc.found,
        "unavailable": r.unavailable,
    }


def _line(r: ApiServiceRead) -> str:
    name = apiservice_name(r.group_version)
    if r.unavailable is not None:
        return f"APIService {name}: not read ({r.unavailable})"
    if r.apiservice is None:
        return f"APIService {name}: missing"
    service = "no spec.service"
    if r.service is not None:
        state = {True: "exists", False: "MISSING", None: f"not read ({r.service.detail})"}[r.service.found]
        service = f"Service {r.service.ref} {state}"
    return f"APIService {name}: {r.apiservice.condition}, {service}"


# -- findings --------------------------------------------------------------------------------------------


def apiservice_findings(reads: ClientApiServices) -> list[Finding]:
    """What is wrong with the client's proxy objects: per configured group/version, then the orphans."""
    found = [f for r in reads.configured for f in _configured(r)]
    if reads.protected_unavailable is not None:
        found.append(_orphans_unread(reads))
    for orphan in reads.orphans():
        lookup = (reads.orphan_services or {}).get(orphan.name)
        found.append(_orphan(reads.cluster, orphan, lookup))
    return found


def _finding(
    r: ApiServiceRead,
    severity: Severity,
    kind: str,
    title: str,
    evidence: Sequence[str],
    cause: str,
    step: str,
    section: str = PROXY_DOES_NOT_START,
) -> Finding:
    return Finding(
        severity=severity,
        kind=kind,
        key=finding_key(kind, r.target, r.group_version),
        title=title,
        evidence=tuple(evidence),
        cause=cause,
        next_step=step,
        guide_section=section,
        target=r.target,
        group_version=r.group_version,
    )


def _configured(r: ApiServiceRead) -> list[Finding]:
    name = apiservice_name(r.group_version)
    if r.unavailable is not None:
        return [_unread(r, name)]
    if r.apiservice is None:
        return [_missing(r, name)]
    found = []
    if r.apiservice.available is not True:
        found.append(_not_available(r, name, r.apiservice))
    if r.apiservice.service is None:
        found.append(_no_service(r, name))
    elif r.service is not None and r.service.found is not True:
        found.append(_service(r, name, r.service))
    return found


def _unread(r: ApiServiceRead, name: str) -> Finding:
    return _finding(
        r,
        Severity.WARNING,
        "apiservice_unread",
        f"{r.group_version}: the APIService {name} could not be read",
        [r.unavailable or ""],
        "The bot's identity in the client cluster could not read the APIService.",
        "Grant `get` and `list` on apiservices (apiregistration.k8s.io) to the bot in the client tenant "
        "cluster (config/deploy/tenant-cluster/rbac.yaml).",
    )


def _missing(r: ApiServiceRead, name: str) -> Finding:
    return _finding(
        r,
        Severity.CRITICAL,
        "apiservice_missing",
        f"{r.group_version}: no APIService {name}: requests for it do not reach the proxy",
        [f"GET apiservices/{name} answered 404"],
        "The elected leader registers the APIService when the proxy starts: the proxy did not start for "
        "this group/version (license, configuration rejected, every entry disabled) or no replica leads.",
        "Read the client's control-plane logs from startup: each group/version logs `Starting proxy "
        "server` and `Starting target transport`; a license or validation error names the cause.",
    )


def _not_available(r: ApiServiceRead, name: str, a: ApiService) -> Finding:
    return _finding(
        r,
        Severity.CRITICAL,
        "apiservice_unavailable",
        f"{r.group_version}: the APIService {name} is not Available",
        [a.condition],
        "Discovery falls back locally while the target is down, so the APIService stays Available then: "
        "not Available means the proxy in the client's control plane does not answer at all.",
        "Check the client's control-plane pods (Ready, restarts) and their logs for the proxy's startup "
        "lines.",
    )


def _no_service(r: ApiServiceRead, name: str) -> Finding:
    return _finding(
        r,
        Severity.WARNING,
        "apiservice_no_service",
        f"{r.group_version}: the APIService {name} names no Service",
        ["spec.service is empty: the API server serves it locally, not through the proxy"],
        "The APIService was changed by hand or by another tool.",
        "Restore the vCluster configuration and restart the client's control plane so that the leader "
        "registers the APIService again.",
    )


def _service(r: ApiServiceRead, name: str, lookup: ServiceLookup) -> Finding:
    if lookup.found is None:
        return _finding(
            r,
            Severity.WARNING,
            "apiservice_service_unread",
            f"{r.group_version}: the Service {lookup.ref} of APIService {name} could not be read",
            [lookup.detail],
            "The bot's identity may not read Services in that namespace of the client cluster.",
            f"Grant `get` on services in {lookup.ref.namespace} to the bot in the client tenant cluster.",
        )
    return _finding(
        r,
        Severity.CRITICAL,
        "apiservice_service_missing",
        f"{r.group_version}: the Service {lookup.ref} that APIService {name} routes to does not exist",
        [f"spec.service: {lookup.ref}", "GET answered 404"],
        "Without its Service the API server cannot reach the proxy for this group/version.",
        "Restart the client's control plane so that it re-creates the Service; do not create it by hand.",
    )


def _orphans_unread(reads: ClientApiServices) -> Finding:
    return Finding(
        severity=Severity.WARNING,
        kind="apiservice_orphans_unread",
        key=finding_key("apiservice_orphans_unread", reads.cluster),
        title=f"{reads.cluster}: protected APIServices could not be listed: orphans not checked",
        evidence=(reads.protected_unavailable or "",),
        cause="The bot's identity in the client cluster may not list apiservices.",
        next_step="Grant `list` on apiservices (apiregistration.k8s.io) to the bot in the client cluster.",
        guide_section=APISERVICE_DELETE_DENIED,
        target=reads.cluster,
    )


def removal_steps(orphan: ApiService, lookup: ServiceLookup | None) -> str:
    """The vendor's steps to remove an orphan, with the names read from the cluster filled in."""
    a = orphan.name
    steps = [f"kubectl label apiservice {a} {PROTECTED_LABEL}-", f"kubectl delete apiservice {a}"]
    first = ""
    if lookup is not None and lookup.found:
        ns, svc = lookup.ref.namespace, lookup.ref.name
        steps += [
            f"kubectl label -n {ns} service {svc} {PROTECTED_LABEL}-",
            f"kubectl delete -n {ns} service {svc}",
        ]
    elif lookup is None or lookup.found is None:
        first = (
            f"look its Service up first (`kubectl get apiservice {a} -o "
            "jsonpath='{.spec.service.namespace}/{.spec.service.name}'`: never guess the name), then "
        )
    uses = orphan.group_version or a
    listed = "; ".join(f"`{step}`" for step in steps)
    return (
        f"If no enabled entry of the client's vcluster.yaml still uses {uses}, {first}remove the label "
        f"(updates are allowed, deletes are denied) and delete: {listed}"
    )


def _orphan(cluster: str, orphan: ApiService, lookup: ServiceLookup | None) -> Finding:
    evidence = [f"labelled {PROTECTED_SELECTOR}", orphan.condition]
    if lookup is not None:
        state = {True: "exists", False: "does not exist", None: f"not read ({lookup.detail})"}[lookup.found]
        evidence.append(f"spec.service {lookup.ref}: {state}")
    return Finding(
        severity=Severity.WARNING,
        kind="apiservice_orphan",
        key=finding_key("apiservice_orphan", cluster, orphan.group_version, orphan.name),
        title=f"{cluster}: APIService {orphan.name} is left over: "
        f"{orphan.group_version or 'its group/version'} is not configured here",
        evidence=tuple(evidence),
        cause="An APIService whose group/version left the proxy configuration is not garbage-collected, "
        "and it keeps that group/version unavailable in the client cluster. (If it is still proxied, the "
        "bot's configuration lacks it: add it to a target's group_versions.)",
        next_step=removal_steps(orphan, lookup),
        guide_section=APISERVICE_DELETE_DENIED,
        target=cluster,
        group_version=orphan.group_version,
    )
