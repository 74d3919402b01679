"""The guide's synthetic probe, run on demand: one LIST through the client tenant cluster, classified.

`GET /apis/<gv>/namespaces/<ns>/<resource>?limit=1` with a 15 s timeout, as the guide's CronJob does.
The request is built only from validated parts, and the group/version must be one the target's config
proxies, so no argument can reach another API path. After the series, one outcome is explained with
evidence read at that moment:

- 200: latency (min/p50/max over a series).
- 503: the proxy's live peer state for the target and group/version, what it points at, and
  `Retry-After` (the proxy sets it on every 503, a target's own 5xx included: the answer never tells the
  cause, the `reason` label and the logs do).
- 404: on a LIST, ownership masking cannot be the cause — lists get the owner selector injected and
  answer 200 with only the client's objects; masking turns only *named* requests into 404. So a 404
  here means the path is not served, and discovery (`/apis/<gv>`) says where: the group/version is not
  served at all (APIService missing), the resource is not listed (wrong plural, CRD absent on the
  target), or it is listed but cluster-scoped (the probe names a namespace).
- 401/403: whose credentials — discovery on the same cluster with the same identity tells the bot's
  own rejection (client side) apart from a refusal passed through from the target.
- timeout: no answer within 15 s, a degraded path; 501: a connection upgrade was rejected.

What each outcome means and the next step: `bot.checks.probe_explain`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from bot.checks.probe import PROBE_TIMEOUT, ProbeRequest, check_repeat
from bot.checks.probe_explain import explained
from bot.domain.diagnosis_readings import describe_peers
from bot.domain.paths import ApiPath, discovery_path
from bot.domain.probe_result import ProbeAttempt, ProbeOutcome, ProbeResult, live_pointer
from bot.errors import ClusterError
from bot.live import ClusterRead
from bot.reads.context import CheckContext

if TYPE_CHECKING:  # kubernetes' client is imported by whoever opens a reader
    from bot.clients.kube import RawResponse

DISCOVERY_TIMEOUT = 5.0

_BY_STATUS = {
    200: ProbeOutcome.OK,
    503: ProbeOutcome.UNAVAILABLE,
    404: ProbeOutcome.NOT_SERVED,
    401: ProbeOutcome.UNAUTHORIZED,
    403: ProbeOutcome.FORBIDDEN,
    501: ProbeOutcome.UPGRADE_REJECTED,
    409: ProbeOutcome.CONFLICT,
}


class ApiReader(Protocol):
    """What the probe needs of a cluster client (`bot.clients.kube.KubeReader` is one)."""

    async def get(self, path: ApiPath, *, timeout: float) -> RawResponse: ...


LiveReader = Callable[[], Awaitable[ClusterRead]]


async def run_probe(
    ctx: CheckContext, request: ProbeRequest, *, repeat: int = 1, timeout: float = PROBE_TIMEOUT
) -> ProbeResult:
    """Probe through the client cluster `repeat` times and explain the outcome with live evidence."""
    check_repeat(repeat)
    try:
        reader = await ctx.client(request.ref.cluster)
    except ClusterError as err:
        attempt = ProbeAttempt(ProbeOutcome.UNREACHABLE, None, None, message=str(err))
        return explained(request, (attempt,), [str(err)])

    async def read_live() -> ClusterRead:
        return await (await ctx.live()).read(request.cluster)

    return await probe_with(reader, request, read_live, repeat=repeat, timeout=timeout)


async def probe_with(
    reader: ApiReader,
    request: ProbeRequest,
    read_live: LiveReader,
    *,
    repeat: int = 1,
    timeout: float = PROBE_TIMEOUT,
) -> ProbeResult:
    """The probe series against one reader, then the evidence for its outcome."""
    attempts = []
    for _ in range(check_repeat(repeat)):
        attempts.append(await _attempt(reader, request.path, timeout))
    failed = next((a for a in attempts if a.outcome is not ProbeOutcome.OK), None)
    evidence = [] if failed is None else await _evidence(failed, reader, request, read_live)
    return explained(request, tuple(attempts), evidence)


async def _attempt(reader: ApiReader, path: ApiPath, timeout: float) -> ProbeAttempt:
    try:
        response = await reader.get(path, timeout=timeout)
    except ClusterError as err:
        kind = ProbeOutcome.TIMEOUT if err.kind == "timeout" else ProbeOutcome.UNREACHABLE
        return ProbeAttempt(kind, None, None, message=str(err))
    outcome = _BY_STATUS.get(response.status, ProbeOutcome.HTTP_ERROR)
    body = _json_body(response)
    return ProbeAttempt(
        outcome,
        response.status,
        response.seconds,
        retry_after=_header(response, "Retry-After"),
        message=None if outcome is ProbeOutcome.OK else _status_message(body, response),
        items=_item_count(body) if outcome is ProbeOutcome.OK else None,
    )


def _json_body(response: RawResponse) -> Any:
    try:
        return json.loads(response.body)
    except ValueError:
        return None


def _header(response: RawResponse, name: str) -> str | None:
    wanted = name.lower()
    return next((v for k, v in response.headers.items() if k.lower() == wanted), None)


def _status_message(body: Any, response: RawResponse) -> str:
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return _short(body["message"])
    return _short(response.text) or f"HTTP {response.status}"


def _item_count(body: Any) -> int | None:
    items = body.get("items") if isinstance(body, dict) else None
    return len(items) if isinstance(items, list) else None


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


# -- evidence per outcome -----------------------------------------------------------------------------


async def _evidence(
    failed: ProbeAttempt, reader: ApiReader, request: ProbeRequest, read_live: LiveReader
) -> list[str]:
    if failed.outcome in (ProbeOutcome.UNAVAILABLE, ProbeOutcome.TIMEOUT):
        return await _peer_evidence(request, read_live)
    if failed.outcome in (ProbeOutcome.NOT_SERVED, ProbeOutcome.UNAUTHORIZED, ProbeOutcome.FORBIDDEN):
        return [await _discovery_evidence(reader, request)]
    return []


async def _peer_evidence(request: ProbeRequest, read_live: LiveReader) -> list[str]:
    try:
        read = await asyncio.wait_for(read_live(), DISCOVERY_TIMEOUT * 2)
    except TimeoutError:
        return ["live proxy state: no answer from /metrics/syncer in time"]
    if read.snapshot is None:
        return [f"live proxy state unavailable: {read.unavailable}"]
    gvs = [
        request.group_version,
        *(g for g in request.ref.target.group_versions if g != request.group_version),
    ]
    lines = []
    for gv in gvs:
        peers = read.snapshot.peers(request.target, gv)
        synced = read.snapshot.cache_synced(request.target, gv)
        state = describe_peers(peers) if peers is not None else "no peer gauge for this group/version"
        cache = {True: "cache synced", False: "cache NOT synced", None: "cache state not reported"}[synced]
        lines.append(f"live {gv}: {state}; {cache}")
        if gv == request.group_version:
            pointer = live_pointer(peers, synced)
            lines.extend([pointer] if pointer else [])
    return lines


@dataclass(frozen=True, slots=True)
class _Discovered:
    status: int | None
    resources: dict[str, dict[str, Any]]
    error: str | None = None


async def _discover(reader: ApiReader, gv: str) -> _Discovered:
    try:
        response = await reader.get(discovery_path(gv), timeout=DISCOVERY_TIMEOUT)
    except ClusterError as err:
        return _Discovered(None, {}, str(err))
    body = _json_body(response) if response.status == 200 else None
    rows = body.get("resources") if isinstance(body, dict) else None
    found = {str(r["name"]): r for r in rows or [] if isinstance(r, dict) and isinstance(r.get("name"), str)}
    return _Discovered(response.status, found)


async def _discovery_evidence(reader: ApiReader, request: ProbeRequest) -> str:
    """What `/apis/<gv>` says about the probed resource, with the same identity as the probe."""
    gv, resource = request.group_version, request.resource
    found = await _discover(reader, gv)
    if found.status is None:
        return f"discovery of {gv} could not be read: {found.error}"
    if found.status != 200:
        return f"discovery GET /apis/{gv} answered {found.status}"
    row = found.resources.get(resource)
    if row is None:
        listed = ", ".join(sorted(n for n in found.resources if "/" not in n)) or "none"
        return f"discovery of {gv} answered 200 but does not list {resource!r} (listed: {listed})"
    verbs = [str(v) for v in row.get("verbs") or []]
    shown = f"verbs {', '.join(verbs) or 'none'}, namespaced {bool(row.get('namespaced'))}"
    if verbs == ["get"]:
        return f"discovery lists {resource!r} with only `get` ({shown}): the local fallback document"
    return f"discovery lists {resource!r} ({shown})"
