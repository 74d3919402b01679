"""The alert pipeline's test bench: settings of two clusters, a fake live source, webhooks, and a harness
that runs the real pipeline over a real SQLite store and the real delivery outbox API (Slack never called).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from bot.alerts.pipeline import AlertPipeline
from bot.alerts.storm import StormPolicy
from bot.app import Arrivals, CountingSink
from bot.clients.slack import Posted
from bot.delivery.worker import Delivery
from bot.domain.alerts import AlertmanagerWebhook
from bot.domain.parser import parse_syncer
from bot.domain.silences import Matcher
from bot.errors import UpstreamError
from bot.live import ClusterRead
from bot.metrics import BotMetrics
from bot.render.blocks import Message
from bot.store import OutboxItem, OutboxKind, Store
from config.settings import Settings

FIRING_END = "0001-01-01T00:00:00Z"
PAGE = """# TYPE vcluster_proxy_peers gauge
vcluster_proxy_peers{target="team-a/db",group_version="example.com/v1",state="healthy"} 0
vcluster_proxy_peers{target="team-a/db",group_version="example.com/v1",state="quarantined"} 2
vcluster_proxy_peers{target="team-a/db",group_version="example.com/v1",state="half_open"} 0
vcluster_proxy_peer_cache_synced{target="team-a/db",group_version="example.com/v1"} 1
"""


def cluster_config(name: str, channel: str | None) -> dict[str, Any]:
    """One client cluster of the test fleet, alerting into `channel` (else `#<name>-alerts`)."""
    target = {
        "name": f"{name}/db",
        "group_versions": ["example.com/v1"],
        "probe": {"group_version": "example.com/v1", "resource": "widgets"},
    }
    return {
        "name": name,
        "kubeconfig": "/etc/proxybot/kubeconfig",
        "match": {"cluster": name},
        "channel": channel or f"#{name}-alerts",
        "targets": [target],
    }


def settings(timeout: float = 5.0, channel: str | None = None) -> Settings:
    return Settings.model_validate(
        {
            "slack": {"default_channel": "#proxy-alerts"},
            "clusters": [cluster_config("alpha", channel), cluster_config("beta", channel)],
            "enrichment": {"timeout_seconds": timeout},
        }
    )


class Clock:
    """Wall clock moved by the test."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class FakeLive:
    """Answers every read with one parsed page; can be held at a gate to look slow."""

    def __init__(self) -> None:
        self.reads: list[str] = []
        self.gate: asyncio.Event | None = None
        self.snapshot = parse_syncer(PAGE)

    async def read(self, cluster: str) -> ClusterRead:
        self.reads.append(cluster)
        if self.gate is not None:
            await self.gate.wait()
        return ClusterRead(cluster, 1_700_000_000.0, self.snapshot, None, None)

    def ready(self, cluster: str) -> ClusterRead | None:
        """Never in hand: every read here runs (and is counted, and may be gated)."""
        return None

    async def cancel_pending(self) -> None:
        """Nothing outlives a caller here: each read runs in its caller's task."""


class FakeAlertmanager:
    """The alerts an Alertmanager lists active, for the stale-copy check: it selects them by equality
    matchers as the real one does, refuses (HTTP 400) a label name it would refuse, and can be down."""

    def __init__(self) -> None:
        self.active: dict[str, tuple[Mapping[str, str], datetime]] = {}
        self.down: str | None = None  # why every call fails, e.g. "timed out"
        self.asked: list[tuple[Matcher, ...]] = []

    def fire(self, fingerprint: str, labels: Mapping[str, str], starts_at: datetime) -> None:
        self.active[fingerprint] = (dict(labels), starts_at)

    async def active_alerts(self, matchers: Sequence[Matcher]) -> list[tuple[str, datetime]]:
        self.asked.append(tuple(matchers))
        if self.down is not None:
            raise UpstreamError(
                f"Alertmanager at http://alertmanager failed listing active alerts: {self.down}"
            )
        for m in matchers:
            if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", m.name) or m.is_regex or not m.is_equal:
                raise UpstreamError(
                    f"Alertmanager at http://alertmanager refused filter {m.as_filter()}: HTTP 400"
                )
        return [
            (fp, starts_at)
            for fp, (labels, starts_at) in self.active.items()
            if all(labels.get(m.name, "") == m.value for m in matchers)
        ]


class NoSlack:
    """The delivery worker is never run in these tests: any Slack call is a test bug."""

    async def post(self, channel: str, message: Message, thread_ts: str | None = None) -> Posted:
        raise AssertionError("Slack called")

    async def update(self, channel_id: str, ts: str, message: Message) -> None:
        raise AssertionError("Slack called")

    async def upload_png(
        self, channel_id: str, thread_ts: str, png: bytes, filename: str, title: str
    ) -> None:
        raise AssertionError("Slack called")

    async def upload_file(
        self, channel_id: str, thread_ts: str, content: bytes, filename: str, title: str
    ) -> tuple[str, ...]:
        raise AssertionError("Slack called")

    async def delete_file(self, file_id: str) -> None:
        raise AssertionError("Slack called")


def alert(
    fingerprint: str,
    name: str = "ResourceProxyNoHealthyPeers",
    *,
    cluster: str | None = "alpha",
    target: str = "team-a/db",
    resolved: bool = False,
) -> dict[str, Any]:
    labels = {"alertname": name, "target": target, "group_version": "example.com/v1", "severity": "critical"}
    if cluster is not None:
        labels["cluster"] = cluster
    return {
        "status": "resolved" if resolved else "firing",
        "labels": labels,
        "annotations": {"summary": f"{name} on {target}"},
        "startsAt": "2023-11-14T22:00:00Z",
        "endsAt": "2023-11-14T22:12:00Z" if resolved else FIRING_END,
        "generatorURL": "http://prometheus/graph",
        "fingerprint": fingerprint,
    }


def webhook(
    alerts: list[dict[str, Any]], group: str = '{}:{alertname="ResourceProxyNoHealthyPeers"}'
) -> bytes:
    status = "firing" if any(a["status"] == "firing" for a in alerts) else "resolved"
    body = {
        "version": "4",
        "groupKey": group,
        "status": status,
        "receiver": "proxybot",
        "alerts": alerts,
        "groupLabels": {},
        "commonLabels": {},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager",
        "truncatedAlerts": 0,
    }
    return json.dumps(body).encode()


class Harness:
    """A store, the outbox API over it, the pipeline, and helpers to feed and inspect them."""

    def __init__(self, store: Store, clock: Clock, live: FakeLive, config: Settings) -> None:
        self.store = store
        self.clock = clock
        self.live = live
        self.outbox = Delivery(store, NoSlack(), clock=clock)
        self.alertmanager = FakeAlertmanager()  # lists nothing active until a test fires an alert there
        self.arrivals = Arrivals()  # as the intake notes them in serve on one replica
        self.intake = CountingSink(store, BotMetrics(), self.arrivals)
        self.pipeline = self.make_pipeline(config)

    def make_pipeline(
        self,
        config: Settings,
        policy: StormPolicy | None = None,
        *,
        alertmanager: bool = True,
        shared_store: bool = False,
    ) -> AlertPipeline:
        """`shared_store`: as on replicas sharing a store, the pipeline cannot know the newest arrival."""
        return AlertPipeline(
            config,
            self.store,
            self.outbox,
            self.live,
            storm=policy,
            clock=self.clock,
            alertmanager=self.alertmanager if alertmanager else None,
            arrivals=None if shared_store else (lambda: self.arrivals.last_at),
        )

    async def accept(self, raw: bytes) -> None:
        """As serve's intake takes it in (`CountingSink`: noted as an arrival, then stored)."""
        await self.intake.accept(raw, AlertmanagerWebhook.model_validate_json(raw), self.clock())

    async def run(self, raw: bytes | None = None) -> None:
        if raw is not None:
            await self.accept(raw)
        pending = await self.store.pending()
        for notification in pending:
            # As the worker does: the notification that empties the queue settles the storm summaries.
            await self.pipeline.process(notification, settle=notification is pending[-1])

    async def settle(self, seconds: float = StormPolicy().refresh_seconds) -> None:
        """What the worker's deadline loop does once `seconds` have passed: summaries that are due go out."""
        self.clock.now += seconds
        await self.pipeline.expire_storms()

    async def items(self) -> list[OutboxItem]:
        """Every outbox row, in enqueue order (`due` orders by due time: a deferred reply sorts late)."""
        rows = await self.store.due(self.clock() + 10 * 86400, limit=10_000)
        return sorted(rows, key=lambda item: item.id)

    async def kinds(self) -> list[tuple[OutboxKind, str]]:
        return [(i.kind, i.channel) for i in await self.items()]


def text_of(item: OutboxItem) -> str:
    return json.dumps(item.payload)


def details_of(items: list[OutboxItem], group_key: str | None = None) -> OutboxItem:
    """The newest content of a group's own details reply (not a member's in its thread): its last edit,
    else the reply itself."""
    found = [
        i
        for i in items
        if (
            (i.kind is OutboxKind.REPLY_EDIT and i.payload["reply"] == "details")
            or (i.kind is OutboxKind.REPLY and i.key.endswith(":details"))
        )
        and (group_key is None or i.payload["group_key"] == group_key)
    ]
    assert found, "no details reply"
    return found[-1]
