"""Webhook bodies exactly as Debian's Alertmanager 0.25 sent them to a loopback receiver.

Captured from `prometheus-alertmanager` 0.25.0 (User-Agent `Alertmanager/0.25.0`, Content-Type
`application/json`) with group_by [alertname, target]: two group/versions of one target fire; one
resolves (the group stays firing); then the other resolves (only it is sent, the group is resolved).
Note the nanosecond `startsAt`, the Go zero time as `endsAt` of firing alerts, and the compact encoding.
"""

from __future__ import annotations

import json
from typing import Any

GROUP_KEY = '{}:{alertname="ResourceProxyNoHealthyPeers", target="team-a/billing"}'
FINGERPRINT_A = "01860d0a6f7a4edc"
FINGERPRINT_B = "233791ffda41e8df"

FIRING = (
    b'{"receiver":"proxybot","status":"firing","alerts":[{"status":"firing","labels":{"alertname":'
    b'"ResourceProxyNoHealthyPeers","group_version":"a.example.com/v1","pod":"vc-0","severity":"critical",'
    b'"target":"team-a/billing"},"annotations":{"summary":"Resource proxy target team-a/billing '
    b'(a.example.com/v1): no fully healthy peers"},"startsAt":"2026-11-30T09:10:41.042956449Z","endsAt":'
    b'"0001-01-01T00:00:00Z","generatorURL":"http://prom:9090/graph?g0.expr=x","fingerprint":'
    b'"01860d0a6f7a4edc"},{"status":"firing","labels":{"alertname":"ResourceProxyNoHealthyPeers",'
    b'"group_version":"b.example.com/v1","pod":"vc-0","severity":"critical","target":"team-a/billing"},'
    b'"annotations":{"summary":"Resource proxy target team-a/billing (b.example.com/v1): no fully healthy '
    b'peers"},"startsAt":"2026-11-30T09:10:41.042956449Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":'
    b'"http://prom:9090/graph?g0.expr=x","fingerprint":"233791ffda41e8df"}],"groupLabels":{"alertname":'
    b'"ResourceProxyNoHealthyPeers","target":"team-a/billing"},"commonLabels":{"alertname":'
    b'"ResourceProxyNoHealthyPeers","pod":"vc-0","severity":"critical","target":"team-a/billing"},'
    b'"commonAnnotations":{},"externalURL":"http://vm:38095","version":"4","groupKey":"{}:{alertname=\\"'
    b'ResourceProxyNoHealthyPeers\\", target=\\"team-a/billing\\"}","truncatedAlerts":0}'
)

ONE_RESOLVED = (
    b'{"receiver":"proxybot","status":"firing","alerts":[{"status":"resolved","labels":{"alertname":'
    b'"ResourceProxyNoHealthyPeers","group_version":"a.example.com/v1","pod":"vc-0","severity":"critical",'
    b'"target":"team-a/billing"},"annotations":{"summary":"Resource proxy target team-a/billing '
    b'(a.example.com/v1): no fully healthy peers"},"startsAt":"2026-11-30T09:10:41.042956449Z","endsAt":'
    b'"2026-11-30T09:10:43.045217Z","generatorURL":"http://prom:9090/graph?g0.expr=x","fingerprint":'
    b'"01860d0a6f7a4edc"},{"status":"firing","labels":{"alertname":"ResourceProxyNoHealthyPeers",'
    b'"group_version":"b.example.com/v1","pod":"vc-0","severity":"critical","target":"team-a/billing"},'
    b'"annotations":{"summary":"Resource proxy target team-a/billing (b.example.com/v1): no fully healthy '
    b'peers"},"startsAt":"2026-11-30T09:10:41.042956449Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":'
    b'"http://prom:9090/graph?g0.expr=x","fingerprint":"233791ffda41e8df"}],"groupLabels":{"alertname":'
    b'"ResourceProxyNoHealthyPeers","target":"team-a/billing"},"commonLabels":{"alertname":'
    b'"ResourceProxyNoHealthyPeers","pod":"vc-0","severity":"critical","target":"team-a/billing"},'
    b'"commonAnnotations":{},"externalURL":"http://vm:38095","version":"4","groupKey":"{}:{alertname=\\"'
    b'ResourceProxyNoHealthyPeers\\", target=\\"team-a/billing\\"}","truncatedAlerts":0}'
)

ALL_RESOLVED = (
    b'{"receiver":"proxybot","status":"resolved","alerts":[{"status":"resolved","labels":{"alertname":'
    b'"ResourceProxyNoHealthyPeers","group_version":"b.example.com/v1","pod":"vc-0","severity":"critical",'
    b'"target":"team-a/billing"},"annotations":{"summary":"Resource proxy target team-a/billing '
    b'(b.example.com/v1): no fully healthy peers"},"startsAt":"2026-11-30T09:10:41.042956449Z","endsAt":'
    b'"2026-11-30T09:10:43.045217Z","generatorURL":"http://prom:9090/graph?g0.expr=x","fingerprint":'
    b'"233791ffda41e8df"}],"groupLabels":{"alertname":"ResourceProxyNoHealthyPeers","target":'
    b'"team-a/billing"},"commonLabels":{"alertname":"ResourceProxyNoHealthyPeers","group_version":'
    b'"b.example.com/v1","pod":"vc-0","severity":"critical","target":"team-a/billing"},"commonAnnotations":'
    b'{"summary":"Resource proxy target team-a/billing (b.example.com/v1): no fully healthy peers"},'
    b'"externalURL":"http://vm:38095","version":"4","groupKey":"{}:{alertname=\\"'
    b'ResourceProxyNoHealthyPeers\\", target=\\"team-a/billing\\"}","truncatedAlerts":0}'
)


def as_dict(body: bytes) -> dict[str, Any]:
    """A fresh, mutable copy of a sample body."""
    decoded: dict[str, Any] = json.loads(body)
    return decoded


def encode(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def ha_peer_copy(body: bytes) -> bytes:
    """The same notification as the other Alertmanager of an HA pair would send it.

    Same groupKey, alerts and fingerprints; its own receiver name and external URL, alerts in another
    order, and a different JSON layout, so the bytes differ everywhere.
    """
    payload = as_dict(body)
    payload["receiver"] = "proxybot-peer-b"
    payload["externalURL"] = "http://alertmanager-1.monitoring:9093"
    payload["alerts"] = list(reversed(payload["alerts"]))
    return json.dumps(payload, indent=2, sort_keys=True).encode()
