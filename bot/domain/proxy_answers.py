"""What a proxied answer means, from the vendor's troubleshooting playbook (pure: no I/O).

- the client's identity on the target and on the platform: `loft:vcluster:<client-project-namespace>:<name>`;
- the four causes of a 404 through the proxy, the likely one first for the access mode and the request;
- the user a 403 names, and the target and group/version a proxy 503 names;
- the latency rule: a failure near the 5 s dial timeout is a peer dial, near the 60 s request deadline a
  slow target response path; a fast failure is not classified by its latency.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

DIAL_TIMEOUT = 5.0
REQUEST_DEADLINE = 60.0
PROJECT_NAMESPACE_PREFIX = "p-"  # the platform's default project namespace prefix
IDENTITY_PREFIX = "loft:vcluster:"

_USER = re.compile(r'User "([^"]+)"')
_UNAVAILABLE = re.compile(r'target tenant cluster "([^"]+)" for (\S+) is unavailable')


def client_identity(project_namespace: str, client: str) -> str:
    """The client tenant cluster's identity on its target and on the platform."""
    return f"{IDENTITY_PREFIX}{project_namespace}:{client}"


def project_namespace(project: str) -> str:
    """A project's namespace with the platform's default prefix (a customised prefix differs)."""
    return f"{PROJECT_NAMESPACE_PREFIX}{project}"


def refused_user(message: str) -> str | None:
    """The user a Kubernetes 403 message names (`User "..." cannot list ...`), if any."""
    found = _USER.search(message)
    return found.group(1) if found else None


def is_client_identity(user: str) -> bool:
    return user.startswith(IDENTITY_PREFIX)


def unavailable_subject(message: str) -> tuple[str, str] | None:
    """(target, group/version) that the proxy's generic 503 text names, if it is that text."""
    found = _UNAVAILABLE.search(message)
    return (found.group(1), found.group(2)) if found else None


def is_auth_failed(message: str) -> bool:
    """The target's rejection of the client's platform access key (a 401 with `auth failed`)."""
    return "auth failed" in message.lower()


class RequestKind(StrEnum):
    """What the caller asked, as far as the 404 causes care."""

    LIST = "list"  # a list or watch
    NAMED_GET = "get"
    NAMED_UPDATE = "named update"  # PUT or PATCH of one object
    NAMED_DELETE = "named delete"  # DELETE of one object: never told its namespace is missing
    CREATE = "create"  # POST


_NAMED_WRITES = (RequestKind.NAMED_UPDATE, RequestKind.NAMED_DELETE)


class NotFoundCause(StrEnum):
    MASKED = "ownership masking"
    OWNERSHIP_GET_DENIED = "ownership GET denied"
    NAMESPACE_MISSING = "namespace missing on the client"
    GENUINE = "genuine 404 from the target"


@dataclass(frozen=True, slots=True)
class CauseLine:
    """One 404 cause: whether it can apply to this request, and why or what to do."""

    cause: NotFoundCause
    applies: bool
    words: str


def not_found_causes(access: str, kind: RequestKind) -> tuple[CauseLine, ...]:
    """The four causes, those that can apply to `kind` under `access` (owned|all) first, likely first."""
    owned = access == "owned"
    lines = [
        CauseLine(
            NotFoundCause.MASKED,
            owned and kind in (RequestKind.NAMED_GET, *_NAMED_WRITES),
            "with accessResources: owned a named request for an object without both ownership labels "
            "answers 404 by design: label it on the target (vcluster.com/owner-vcluster, "
            "vcluster.com/owner-project) to adopt it, or use accessResources: all (every tenant's objects)",
        ),
        CauseLine(
            NotFoundCause.OWNERSHIP_GET_DENIED,
            owned and kind in _NAMED_WRITES,
            "in owned mode the proxy GETs the object before a named PUT, PATCH or DELETE, and a 401/403 "
            "there becomes 404: grant the client `get` together with the mutation verbs on the target",
        ),
        CauseLine(
            NotFoundCause.NAMESPACE_MISSING,
            # The troubleshooting page names POST, PUT and PATCH only: a DELETE is not refused for it.
            kind in (RequestKind.CREATE, RequestKind.NAMED_UPDATE),
            "namespaced POST, PUT and PATCH need the namespace on the client first: create it there "
            "(the proxy then creates it on the target)",
        ),
        CauseLine(
            NotFoundCause.GENUINE,
            True,
            "the object or the CRD is absent on the target: check `kubectl get crd <resource>.<group>` there",
        ),
    ]
    likely = [line for line in lines if line.applies]
    # Lists are never masked: for them the only cause is the target's own 404.
    return (*likely, *(line for line in lines if not line.applies))


def latency_rule(seconds: float | None) -> str | None:
    """What a failed request's duration says: near the dial timeout, near the deadline, or nothing."""
    if seconds is None:
        return None
    if DIAL_TIMEOUT - 0.5 <= seconds <= DIAL_TIMEOUT + 1.5:
        return (
            f"failed after {seconds:.1f} s, near the {DIAL_TIMEOUT:g} s dial timeout: a peer dial failure "
            "(the peer path, not the target's API)"
        )
    if seconds >= REQUEST_DEADLINE - 5:
        return (
            f"failed after {seconds:.1f} s, near the {REQUEST_DEADLINE:g} s request deadline: the target "
            "accepted the connection but answered too slowly (its API server, backing store, webhooks)"
        )
    return None
