"""An alert storm: 1 000 alerts over 500 targets, as webhooks on a schedule or as alerts for Alertmanager.

The webhooks go out from a separate load generator process, so what is measured is the server.
Each target's group gets two notifications, as Alertmanager sends them: first with one alert (group_wait),
then with both group/versions (group_interval). The first notifications are spread over the first half of
the storm, the second ones over the second half, so a group's update never overtakes its first post.

`storm_alerts` are the same 1 000 alerts for a real Alertmanager to group and deliver. `SlackCoverage`
watches the fake Slack for the moment every target is named in what Slack shows (a message or the
content of a shared file), and `posting_calls` counts the calls that post, edit, upload or delete.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

from bench.loadgen import Outcome, Plan, Planned, run
from sim.slack_api import UPLOAD_CALL, FakeSlack, Message, SlackCall
from tests.e2e.stack import (
    CLIENT,
    alert_entry,
    auth,
    notification,
    now,
    proxy_alert,
    rfc3339,
    summary_of,
    text_of,
)

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


def storm_alerts(targets: int = 500) -> list[dict[str, Any]]:
    """The storm's 1 000 alerts as Prometheus pushes them to Alertmanager's API when they start firing (2
    per target). Started now: Alertmanager flushes a new group at once, without its group_wait, when its
    first alert started longer ago than that."""
    started = rfc3339(now())
    alerts = []
    for i in range(targets):
        for gv in ("example.com/v1", SECONDARY_GV):
            labels = proxy_alert(target=storm_target(i), cluster=CLIENT, group_version=gv)
            alerts.append(
                {"labels": labels, "annotations": {"summary": summary_of(labels)}, "startsAt": started}
            )
    return alerts


# The calls that put something in front of people: posts, edits, the three upload steps, deletes.
POSTING = frozenset(
    {
        "chat.postMessage",
        "chat.update",
        "chat.delete",
        "files.getUploadURLExternal",
        UPLOAD_CALL,
        "files.completeUploadExternal",
        "files.delete",
    }
)


def posting_calls(calls: Iterable[SlackCall], until: float | None = None) -> list[SlackCall]:
    """The posting calls made (refused ones too: each is a call), up to `until` (monotonic) if given."""
    return [c for c in calls if c.method in POSTING and (until is None or c.at <= until)]


def by_method(calls: Sequence[SlackCall]) -> str:
    """`method=count`, most frequent first (chat.postMessage split into posts and replies)."""
    counted = Counter(
        "reply" if c.method == "chat.postMessage" and c.params.get("thread_ts") else c.method for c in calls
    )
    return " ".join(f"{method}={n}" for method, n in counted.most_common())


class SlackCoverage:
    """The moment every one of `names` had been named in what the fake Slack shows: a message posted or
    edited, or the content of a file shared (time.monotonic, as the fake's calls are timed)."""

    def __init__(self, slack: FakeSlack, names: Iterable[str]) -> None:
        self._left = set(names)
        self._lock = threading.Lock()
        self.covered_at: float | None = None
        self._latest = 0.0
        slack.on_message = self._message
        slack.on_upload = self._upload

    def _message(self, message: Message, kind: str) -> None:
        self._named(text_of(message))

    def _upload(self, upload: dict[str, Any]) -> None:
        self._named(bytes(upload.get("content") or b"").decode(errors="replace"))

    def _named(self, text: str) -> None:
        # Stamped as the text is shown, before the search: in a file of 10 000 rows, looking for 5 000
        # names takes a third of a second, the bench's time, not the bot's.
        shown_at = time.monotonic()
        with self._lock:
            # The latest text searched so far: coverage completed by this one needed those before it.
            self._latest = max(self._latest, shown_at)
            self._left = {name for name in self._left if name not in text}
            if not self._left and self.covered_at is None:
                self.covered_at = self._latest

    @property
    def left(self) -> int:
        with self._lock:
            return len(self._left)


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
