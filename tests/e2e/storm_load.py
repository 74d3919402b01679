"""An alert storm as webhooks: 1 000 alerts over 500 targets, sent concurrently on a schedule.

Each target's group gets two notifications, as Alertmanager sends them: first with one alert (group_wait),
then with both group/versions (group_interval). The first notifications are spread over the first half of
the storm, the second ones over the second half, so a group's update never overtakes its first post.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import httpx

from tests.e2e.stack import CLIENT, alert_entry, auth, notification, now, proxy_alert

SECONDARY_GV = "data.example.com/v1alpha1"


def storm_target(i: int) -> str:
    return f"platform/storm-{i:03d}"


def storm_bodies(targets: int = 500) -> list[bytes]:
    """2 notifications per target, 2 alerts per target: firsts for every target, then the updates."""
    started = now() - timedelta(minutes=2)
    firsts, updates = [], []
    for i in range(targets):
        one = alert_entry(proxy_alert(target=storm_target(i), cluster=CLIENT), started)
        two = alert_entry(
            proxy_alert(target=storm_target(i), cluster=CLIENT, group_version=SECONDARY_GV), started
        )
        firsts.append(json.dumps(notification([one])).encode())
        updates.append(json.dumps(notification([one, two])).encode())
    return firsts + updates


@dataclass(frozen=True)
class Sent:
    """One request of the storm: when it was scheduled (s after the start), its status, how long it took."""

    offset: float
    status: int
    seconds: float
    error: str = ""


async def _timed(client: httpx.AsyncClient, request: httpx.Request, offset: float) -> Sent:
    started = time.perf_counter()
    try:
        response = await client.send(request)
    except httpx.HTTPError as error:
        # Never answered: status 0, a failure for every caller.
        return Sent(offset, 0, time.perf_counter() - started, f"{type(error).__name__}: {error}")
    return Sent(offset, response.status_code, time.perf_counter() - started)


async def fire(
    url: str,
    bodies: Sequence[bytes],
    *,
    seconds: float = 2.0,
    probe_path: str | None = None,
    timeout: float = 60.0,
) -> tuple[list[Sent], list[Sent]]:
    """POST every body to `url` + `/alertmanager`, evenly over `seconds`, concurrently.

    With `probe_path`, a GET of it goes out alongside every webhook (the baseline under the same load).
    Returns (webhooks, probes).
    """
    headers = {**auth(), "Content-Type": "application/json"}
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits) as client:
        webhooks: list[asyncio.Task[Sent]] = []
        probes: list[asyncio.Task[Sent]] = []
        start = time.perf_counter()
        for i, body in enumerate(bodies):
            offset = seconds * i / len(bodies)
            await asyncio.sleep(max(0.0, start + offset - time.perf_counter()))
            post = client.build_request("POST", "/alertmanager", content=body, headers=headers)
            webhooks.append(asyncio.create_task(_timed(client, post, offset)))
            if probe_path is not None:
                probe = client.build_request("GET", probe_path)
                probes.append(asyncio.create_task(_timed(client, probe, offset)))
        return list(await asyncio.gather(*webhooks)), list(await asyncio.gather(*probes))


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..100) of a non-empty sample."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]
