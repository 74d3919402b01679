"""Reads from the client tenant cluster: the proxy's APIServices, the Services they name, the protected ones.

For every configured group/version: GET the APIService `<version>.<group>`, then GET the Service its
`spec.service` names (read from the APIService, never built). Then one LIST of the APIServices labelled
`vcluster.loft.sh/protected=resource-proxy`, to find orphans, and the Service of each orphan. Least
privilege in the client cluster: `get`/`list` on apiservices, `get` on services in kube-system
(config/deploy/tenant-cluster/rbac.yaml). Judging is `bot.domain.apiservices`; nothing here raises.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bot.domain.apiservices import (
    PROTECTED_SELECTOR,
    ApiService,
    ApiServiceRead,
    ClientApiServices,
    ServiceLookup,
    ServiceRef,
    parse_apiservice,
)
from bot.domain.paths import apiservice_path, labelled_apiservices_path, service_path
from bot.errors import ClusterError, InputError
from bot.reads.context import CheckContext
from config.clusters import ClusterSettings, TargetSettings

if TYPE_CHECKING:  # kubernetes' client is imported by whoever opens a reader
    from bot.clients.kube import KubeReader


async def read_apiservices(
    ctx: CheckContext, cluster: ClusterSettings, targets: tuple[TargetSettings, ...] | None = None
) -> ClientApiServices:
    """The APIServices of `targets`' group/versions (default: all the cluster's) and the orphans."""
    chosen = cluster.targets if targets is None else targets
    wanted = [(gv, t.name) for t in chosen for gv in t.group_versions]
    # Orphans are judged against every group/version of the cluster, whichever targets were asked for.
    named = frozenset(gv for t in cluster.targets for gv in t.group_versions)
    try:
        reader = await ctx.client(cluster)
    except ClusterError as err:
        reads = tuple(ApiServiceRead(gv, target, None, unavailable=str(err)) for gv, target in wanted)
        return ClientApiServices(cluster.name, reads, named, protected_unavailable=str(err))
    configured, (protected, unlisted) = await asyncio.gather(
        asyncio.gather(*(_configured(reader, gv, target, ctx.timeout) for gv, target in wanted)),
        _protected(reader, ctx.timeout),
    )
    found = ClientApiServices(cluster.name, tuple(configured), named, protected, unlisted)
    orphans = found.orphans()
    lookups = await asyncio.gather(*(_service(reader, o.service, ctx.timeout) for o in orphans))
    services = {o.name: s for o, s in zip(orphans, lookups, strict=True) if s is not None}
    return dataclasses.replace(found, orphan_services=services)


async def _configured(reader: KubeReader, gv: str, target: str, timeout: float) -> ApiServiceRead:
    try:
        response = await reader.get(apiservice_path(gv), timeout=timeout)
    except (ClusterError, InputError) as err:
        return ApiServiceRead(gv, target, None, unavailable=str(err))
    if response.status == 404:
        return ApiServiceRead(gv, target, None)
    doc = _object(response.body) if response.status == 200 else None
    if doc is None:
        why = f"GET {apiservice_path(gv).path} answered {response.status}"
        return ApiServiceRead(
            gv, target, None, unavailable=why + (", not JSON" if response.status == 200 else "")
        )
    found = parse_apiservice(doc)
    return ApiServiceRead(gv, target, found, await _service(reader, found.service, timeout))


async def _service(reader: KubeReader, ref: ServiceRef | None, timeout: float) -> ServiceLookup | None:
    if ref is None:
        return None
    try:
        response = await reader.get(service_path(ref.namespace, ref.name), timeout=timeout)
    except (ClusterError, InputError) as err:
        return ServiceLookup(ref, None, str(err))
    if response.status in (200, 404):
        return ServiceLookup(ref, response.status == 200)
    return ServiceLookup(ref, None, f"GET answered {response.status}")


async def _protected(reader: KubeReader, timeout: float) -> tuple[tuple[ApiService, ...], str | None]:
    path = labelled_apiservices_path(PROTECTED_SELECTOR)
    try:
        response = await reader.get_ok(path, timeout=timeout)
    except ClusterError as err:
        return (), str(err)
    doc = _object(response.body)
    items = None if doc is None else doc.get("items")
    if not isinstance(items, list):
        return (), "the APIService list is not a JSON list"
    return tuple(parse_apiservice(item) for item in items if isinstance(item, Mapping)), None


def _object(body: bytes) -> Mapping[str, Any] | None:
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    return doc if isinstance(doc, Mapping) else None
