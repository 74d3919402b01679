"""The client control-plane pods in the control plane cluster, and their logs (`pods/NAME/log`).

Each client replica is a pod `<replica>` in `vcluster-<client>`, labelled `app=vcluster` and
`release=<client>`, with one container, `syncer`. Its log is the log its proxy process wrote
(`sim.syncer_log`), rendered as the kubelet serves a container log: vCluster's console format, one
entry a line, and with `timestamps=true` each line prefixed by its RFC 3339 time. `tailLines`,
`sinceSeconds`, `sinceTime` and `limitBytes` select as the API server does; `follow` answers what
there is and ends (the simulator keeps no stream open).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping

from sim.fleet import ClientCluster, Replica
from sim.kube import objects
from sim.kube.api import LocalResource, Query, Reply, ResourcePath
from sim.kube.objects import Json
from sim.syncer_log import LogRecord
from sim.world import World

CONTAINER = "syncer"
IMAGE = "ghcr.io/loft-sh/vcluster-pro:0.37.0"


def _pod_json(world: World, client: ClientCluster, replica: Replica) -> Json:
    proxy = world.proxies.get((client.name, replica.pod))
    started = world.wall_time(proxy.journal.booted_at if proxy else 0.0)
    labels = {"app": "vcluster", "release": client.name}
    meta = objects.metadata(replica.pod, client.namespace, world.wall_time(-86_400.0), labels)
    spec = {"containers": [{"name": CONTAINER, "image": IMAGE}]}
    state = {"running": {"startedAt": objects.timestamp(started)}}
    status = {
        "phase": "Running",
        "containerStatuses": [{"name": CONTAINER, "image": IMAGE, "ready": True, "state": state}],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def client_pods(world: World) -> LocalResource:
    """Every client replica's control-plane pod (the minimal shape `kubectl logs -l` needs)."""

    def items() -> list[Json]:
        clients = world.platform.clients.values()
        return [_pod_json(world, c, r) for c in clients for r in c.replicas]

    return LocalResource("v1", "pods", "Pod", True, items)


def render_record(record: LogRecord, wall: float) -> str:
    """One entry in vCluster's console format: date, level, caller, message, fields as JSON."""
    when = dt.datetime.fromtimestamp(wall, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    fields = json.dumps(dict(record.fields))
    return f"{when}\t{record.level}\t{record.caller}\t{record.message}\t{fields}"


def kubelet_time(wall: float) -> str:
    """RFC 3339 with nanoseconds, as the kubelet prefixes each line with `timestamps=true`."""
    moment = dt.datetime.fromtimestamp(wall, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{moment.microsecond * 1000:09d}Z"


class _BadRequest(ValueError):
    """A log option the API server would refuse (400)."""


def _whole(params: Mapping[str, str], name: str, low: int) -> int | None:
    text = params.get(name)
    if text is None:
        return None
    if not text.lstrip("-").isdigit() or int(text) < low:
        raise _BadRequest(f"{name}: Invalid value: {text!r}: must be greater than or equal to {low}")
    return int(text)


def _flag(params: Mapping[str, str], name: str) -> bool:
    text = params.get(name, "false")
    if text not in ("true", "false", "1", "0"):
        raise _BadRequest(f"{name}: Invalid value: {text!r}: must be a boolean")
    return text in ("true", "1")


def _since(params: Mapping[str, str], now_wall: float) -> float | None:
    """The earliest wall time wanted: `sinceSeconds` or `sinceTime` (not both), else None."""
    seconds = _whole(params, "sinceSeconds", 1)
    since_time = params.get("sinceTime")
    if seconds is not None and since_time is not None:
        raise _BadRequest("at most one of sinceTime or sinceSeconds may be specified")
    if seconds is not None:
        return now_wall - seconds
    if since_time is None:
        return None
    try:
        return dt.datetime.fromisoformat(since_time).timestamp()
    except ValueError:
        raise _BadRequest(f"sinceTime: Invalid value: {since_time!r}: not RFC 3339") from None


def _lines(world: World, records: list[LogRecord], params: Mapping[str, str]) -> str:
    tail = _whole(params, "tailLines", 0)
    limit = _whole(params, "limitBytes", 1)
    stamps = _flag(params, "timestamps")
    _flag(params, "follow")
    since = _since(params, world.wall_time(world.now()))
    walls = [(world.wall_time(r.at), r) for r in records]
    if since is not None:
        walls = [(w, r) for w, r in walls if w >= since]
    if tail is not None:
        walls = walls[len(walls) - tail :] if tail else []
    text = "".join((f"{kubelet_time(w)} " if stamps else "") + render_record(r, w) + "\n" for w, r in walls)
    return text if limit is None else text.encode()[:limit].decode(errors="ignore")


def serve_log(world: World, rp: ResourcePath, q: Query) -> Reply:
    """`GET /api/v1/namespaces/<ns>/pods/<name>/log`: the replica's log as text, or the API's refusal."""
    if q.method != "GET":
        return Reply(405, objects.status(405, "the simulator serves read-only verbs here"))
    client = next((c for c in world.platform.clients.values() if c.namespace == rp.namespace), None)
    proxy = None if client is None else world.proxies.get((client.name, rp.name or ""))
    if proxy is None:
        return Reply(
            404, objects.status(404, f'pods "{rp.name}" not found', {"name": rp.name, "kind": "pods"})
        )
    container = q.params.get("container", CONTAINER)
    if container != CONTAINER:
        msg = f"container {container} is not valid for pod {rp.name}"
        return Reply(400, objects.status(400, msg))
    if q.params.get("previous") in ("true", "1"):
        msg = f'previous terminated container "{CONTAINER}" in pod "{rp.name}" not found'
        return Reply(400, objects.status(400, msg))
    try:
        text = _lines(world, list(proxy.journal.log.records), q.params)
    except _BadRequest as err:
        return Reply(400, objects.status(400, str(err)))
    return Reply(200, text, {"Content-Type": "text/plain"})
