"""A watch on the platform stand-in's VirtualClusterInstances, as the Kubernetes API streams one.

`?watch=1` on a list path: one JSON event a line (`ADDED`, `MODIFIED`, `DELETED`, each with the whole
object; `ERROR` with a Status). Without `resourceVersion` (or `0`) the current instances come first as
`ADDED`; from the current resource version only changes follow; from an older one, which the stand-in keeps
no history for, an `ERROR` 410 Gone (what a compacted API server answers: the client lists again). The
stream ends after `timeoutSeconds` (at most `MAX_WATCH`), or when the simulator stops.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass

from sim.kube import objects
from sim.kube.objects import Json

MAX_WATCH = 300.0
POLL = 0.2
# Documents of the instances and the fleet's resource version, read under the simulator's lock.
Read = Callable[[], tuple[list[Json], int]]


def is_watch(params: Mapping[str, str]) -> bool:
    return params.get("watch", "").lower() in {"1", "true"}


@dataclass(frozen=True)
class WatchPlan:
    """What one watch request asks: which instances, from which version, for how long."""

    namespace: str | None
    name: str | None
    since: int | None
    seconds: float

    def matches(self, item: Json) -> bool:
        meta = item["metadata"]
        return (self.namespace is None or meta.get("namespace") == self.namespace) and (
            self.name is None or meta["name"] == self.name
        )


def plan(namespace: str | None, params: Mapping[str, str]) -> WatchPlan | str:
    """The watch a request asks for, or why it is refused (a 400's message)."""
    name = None
    for term in filter(None, params.get("fieldSelector", "").split(",")):
        field, _, value = term.partition("=")
        if field == "metadata.name" and value:
            name = value
        elif field == "metadata.namespace" and value:
            namespace = value
        else:
            return f"field label not supported: {term}"
    raw_since, raw_seconds = params.get("resourceVersion", ""), params.get("timeoutSeconds", "")
    if not all(v.isdigit() for v in (raw_since, raw_seconds) if v):
        return "resourceVersion and timeoutSeconds must be non-negative integers"
    since = int(raw_since) if raw_since and raw_since != "0" else None
    seconds = min(float(raw_seconds), MAX_WATCH) if raw_seconds else MAX_WATCH
    return WatchPlan(namespace, name, since, seconds)


def _event(kind: str, obj: Json) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


async def stream(watch: WatchPlan, read: Read, stopped: Callable[[], bool]) -> AsyncIterator[bytes]:
    """The events of one watch, polling the fleet every `POLL` wall seconds."""
    items, version = await asyncio.to_thread(read)
    if watch.since is not None and watch.since < version:
        gone = objects.status(410, f"too old resource version: {watch.since} ({version})")
        gone["reason"] = "Expired"
        yield _event("ERROR", gone)
        return
    seen: dict[str, Json] = {}
    for item in filter(watch.matches, items):
        seen[item["metadata"]["uid"]] = item
        if watch.since is None:
            yield _event("ADDED", item)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + watch.seconds
    while loop.time() < deadline and not stopped():
        await asyncio.sleep(POLL)
        items, _ = await asyncio.to_thread(read)
        now = {i["metadata"]["uid"]: i for i in items if watch.matches(i)}
        for uid, item in now.items():
            before = seen.get(uid)
            if before is None or before["metadata"]["resourceVersion"] != item["metadata"]["resourceVersion"]:
                yield _event("ADDED" if before is None else "MODIFIED", item)
        for uid in seen.keys() - now.keys():
            yield _event("DELETED", seen[uid])
        seen = now
