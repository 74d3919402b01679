"""Kubernetes JSON documents: Status, discovery, lists, tables and the few object kinds the sim serves."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

Json = dict[str, Any]
# A discovery row: plural, kind, namespaced, verbs.
ResourceRow = tuple[str, str, bool, list[str]]

SERVER_VERSION: Json = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.2+vcluster.sim",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-06-01T00:00:00Z",
    "goVersion": "go1.24.4",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    501: "NotImplemented",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def timestamp(unix: float) -> str:
    return dt.datetime.fromtimestamp(unix, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def uid(*parts: str) -> str:
    digest = hashlib.sha256("/".join(parts).encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def status(code: int, message: str, details: Json | None = None) -> Json:
    doc: Json = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": _REASONS.get(code, "InternalError"),
        "code": code,
    }
    if details:
        doc["details"] = details
    return doc


def api_versions() -> Json:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:443"}],
    }


def api_group_list(group_versions: Sequence[str]) -> Json:
    by_group: dict[str, list[str]] = {}
    for gv in group_versions:
        group, version = gv.split("/")
        by_group.setdefault(group, []).append(version)
    groups = []
    for group, versions in by_group.items():
        listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        groups.append({"name": group, "versions": listed, "preferredVersion": listed[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group: str, versions: Sequence[str]) -> Json:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": listed,
        "preferredVersion": listed[0],
    }


def resource_list(group_version: str, rows: Sequence[ResourceRow]) -> Json:
    resources = [
        {
            "name": plural,
            "singularName": kind.lower(),
            "namespaced": namespaced,
            "kind": kind,
            "verbs": verbs,
        }
        for plural, kind, namespaced, verbs in rows
    ]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def metadata(
    name: str, namespace: str | None, created: float, labels: Mapping[str, str], rv: int = 1
) -> Json:
    meta: Json = {
        "name": name,
        "uid": uid(namespace or "", name),
        "resourceVersion": str(rv),
        "creationTimestamp": timestamp(created),
    }
    if namespace is not None:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    return meta


def object_list(api_version: str, kind: str, items: list[Json], cont: str, rv: str) -> Json:
    meta: Json = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    return {"kind": f"{kind}List", "apiVersion": api_version, "metadata": meta, "items": items}


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def table(
    items: Sequence[Json], columns: Sequence[tuple[str, str]], cells: list[list[Any]], cont: str
) -> Json:
    """A meta.k8s.io/v1 Table, as `kubectl get` asks for; rows carry partial object metadata."""
    definitions = [
        {"name": name, "type": kind, "format": "name" if i == 0 else "", "description": name, "priority": 0}
        for i, (name, kind) in enumerate(columns)
    ]
    rows = [
        {
            "cells": row,
            "object": {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": item["metadata"],
            },
        }
        for item, row in zip(items, cells, strict=True)
    ]
    meta: Json = {"resourceVersion": "1"}
    if cont:
        meta["continue"] = cont
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": definitions,
        "rows": rows,
    }


def age(created: str, now_unix: float) -> str:
    """Kubernetes' short human duration (`45s`, `12m`, `3h`, `2d`)."""
    then = dt.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()
    seconds = max(0, int(now_unix - then))
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size * 2 or (unit == "m" and seconds >= 60):
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
