"""Alert views for renderer tests: a firing group on `shop/orders` at a fixed time, and hostile text.

snapshot(target, gv, healthy, quarantined)   a syncer snapshot of one target's peers
alert(name, labels, ...)                     one alert as the renderers see it, diagnosed
group(*alerts, live=...)                     its alert group, read live 30 s before NOW (the peer caches
                                             read: those `snapshot()` gives for its alerts' places)
HOSTILE                                      text that must never act as Slack markup
mrkdwn_texts(msg), all_text(msg), buttons(msg)  what a rendered message shows, to assert on
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.domain.alert_summary import PeerReading, peer_readings
from bot.domain.alerts_catalog import NO_HEALTHY_PEERS
from bot.domain.diagnosis import diagnose_alert
from bot.domain.messages import AlertGroupView, AlertView, GroupStatus, LiveRead
from bot.domain.snapshot import PEER_CACHE_SYNCED, PEERS, ProxySnapshot, make_labels
from bot.render.blocks import Message

NOW = datetime(2024, 5, 1, 10, 14, tzinfo=UTC)


T = "shop/orders"


GV = "orders.example.com/v1"


HOSTILE = (
    "<!channel>",
    "<https://evil.example|click me>",
    "a & b",
    "<@U123>",
    "<!subteam^S1>",
    "x\n*Next step:* forged",
    "```",
    "#general @here",
    "\u202eevil",
)


def snapshot(target: str = T, gv: str = GV, healthy: float = 0, quarantined: float = 2) -> ProxySnapshot:
    def key(**labels: str) -> tuple[tuple[str, str], ...]:
        return make_labels({"target": target, "group_version": gv, **labels}.items())

    peers = {
        key(state="healthy"): healthy,
        key(state="quarantined"): quarantined,
        key(state="half_open"): 0.0,
    }
    return ProxySnapshot(samples={PEERS: peers, PEER_CACHE_SYNCED: {key(): 1.0}})


def alert(
    name: str = NO_HEALTHY_PEERS,
    labels: Mapping[str, str] | None = None,
    *,
    status: GroupStatus = GroupStatus.FIRING,
    minutes: float = 12,
    snap: ProxySnapshot | None = None,
    annotations: Mapping[str, str] | None = None,
) -> AlertView:
    labels = dict(labels or {"target": T, "group_version": GV, "pod": "vc-0", "severity": "critical"})
    labels["alertname"] = name
    ended = NOW if status is GroupStatus.RESOLVED else None
    diag = diagnose_alert(name, labels, snap)
    return AlertView(name, status, NOW - timedelta(minutes=minutes), labels, annotations or {}, ended, diag)


def read_peers(alerts: tuple[AlertView, ...], replica: str | None = "vc-0") -> tuple[PeerReading, ...]:
    """What the live read of `snapshot()` shows of the places the diagnosed alerts name."""
    places = {
        (a.target, a.group_version or GV) for a in alerts if a.diagnosis and a.diagnosis.live and a.target
    }
    return tuple(r for t, gv in sorted(places) for r in peer_readings(snapshot(t, gv), [t], replica))


def group(*alerts: AlertView, live: LiveRead | None = None, **kw: Any) -> AlertGroupView:
    status = kw.pop("status", GroupStatus.FIRING)
    alerts = alerts or (alert(snap=snapshot()),)
    kw.setdefault("peers", read_peers(alerts))
    return AlertGroupView(
        group_key=kw.pop("group_key", '{}:{alertname="ResourceProxyNoHealthyPeers"}'),
        status=status,
        alerts=alerts,
        started_at=NOW - timedelta(minutes=12),
        live=live or LiveRead.read(NOW - timedelta(seconds=30), "vc-0"),
        cluster=kw.pop("cluster", "prod-a"),
        resolved_at=NOW if status is GroupStatus.RESOLVED else None,
        **kw,
    )


def mrkdwn_texts(msg: Message) -> list[str]:
    """The fallback and every mrkdwn text: the places where Slack would honour `<!channel>` or links."""
    found = [msg.text]
    for block in msg.blocks:
        for obj in [block.get("text"), *block.get("fields", []), *block.get("elements", [])]:
            if isinstance(obj, dict) and obj.get("type") == "mrkdwn":
                found.append(obj["text"])
    return found


def all_text(msg: Message) -> str:
    return json.dumps(msg.as_kwargs(), ensure_ascii=False)


def buttons(msg: Message) -> list[dict[str, Any]]:
    return [e for b in msg.blocks if b["type"] == "actions" for e in b["elements"]]
