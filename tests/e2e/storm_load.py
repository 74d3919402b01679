"""An alert storm as webhooks: 1 000 alerts over 500 targets, sent concurrently on a schedule.

The requests go out from a separate load generator process, so what is measured is the server.

Each target's group gets two notifications, as Alertmanager sends them: first with one alert (group_wait),
then with both group/versions (group_interval). The first notifications are spread over the first half of
the storm, the second ones over the second half, so a group's update never overtakes its first post.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import timedelta

from bench.loadgen import Outcome, Plan, Planned, run
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


WEBHOOKS = "webhooks"
PROBES = "probes"
# Enough that a webhook waits for a free connection only when the server is slow to answer (the lag
# shows it), few enough that the generator stays lean.
LANES = {WEBHOOKS: 64, PROBES: 16}


def storm_plan(
    url: str, bodies: Sequence[bytes], *, seconds: float, probe_path: str | None, timeout: float
) -> Plan:
    """Each body POSTed to `/alertmanager` evenly over `seconds`; with `probe_path`, a GET alongside each."""
    headers = {**auth(), "Content-Type": "application/json"}
    requests: list[Planned] = []
    for i, body in enumerate(bodies):
        offset = seconds * i / len(bodies)
        requests.append(Planned(offset, "POST", "/alertmanager", headers, body, WEBHOOKS))
        if probe_path is not None:
            requests.append(Planned(offset, "GET", probe_path, lane=PROBES))
    return Plan(url, requests, LANES, timeout)


def split(outcomes: Sequence[Outcome]) -> tuple[list[Outcome], list[Outcome]]:
    """(webhooks, probes) of one storm's outcomes."""
    return [o for o in outcomes if o.lane == WEBHOOKS], [o for o in outcomes if o.lane == PROBES]


async def fire(
    url: str,
    bodies: Sequence[bytes],
    *,
    seconds: float = 2.0,
    probe_path: str | None = None,
    timeout: float = 60.0,
) -> tuple[list[Outcome], list[Outcome]]:
    """Send the storm from a load generator process of its own (see bench/loadgen.py).

    The generator runs apart so that its work never queues behind this process's (the fake Slack, the
    simulator, the test). Returns (webhooks, probes).
    """
    plan = storm_plan(url, bodies, seconds=seconds, probe_path=probe_path, timeout=timeout)
    return split(await asyncio.to_thread(run, plan))


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..100) of a non-empty sample."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]
