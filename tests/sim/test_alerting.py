"""The alert simulation on a fake clock: each scenario's predicted alerts, grouping, repeats, resolves."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, HTTPServer
from itertools import pairwise
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from bot.domain.alerts import parse_webhook
from sim.alerting import (
    GROUP_BY,
    AlertSimulator,
    Route,
    WebhookDeliveryError,
    fingerprint,
    group_key,
    post_webhook,
)
from sim.alerting_rules import RULES_PATH, RuleMismatchError, extrapolated_increase, load_rules
from sim.alertmanager_api import AlertmanagerApi
from sim.defaults import CLIENT, PRIMARY_GV, SECONDARY_GV, TARGET, TARGET_LABEL
from sim.scenarios import STORM_HUNG, STORM_TARGETS, build_world
from sim.scenarios import storm_group_versions as storm_gvs
from sim.world import World
from tests.bot.domain import alertmanager_samples as samples

POD_0, POD_1 = f"{CLIENT}-0", f"{CLIENT}-1"
BOTH_GVS = (PRIMARY_GV, SECONDARY_GV)
SHARD_GVS = [gv for i in range(STORM_TARGETS) for gv in storm_gvs(i)]  # each shard its own two
Fired = tuple[str, tuple[tuple[str, str], ...]]
Body = dict[str, Any]


def fired(short: str, **labels: str) -> Fired:
    if "pod" in labels:  # a replica's series carry its control plane's namespace, as its scrape does
        labels.setdefault("namespace", f"vcluster-{labels['pod'].rsplit('-', 1)[0]}")
    return (f"ResourceProxy{short}", tuple(sorted(labels.items())))


def key_of(alert: Body) -> Fired:
    labels = alert["labels"]
    shown = ("group_version", "pod", "namespace")
    return (labels["alertname"], tuple(sorted((k, labels[k]) for k in shown if k in labels)))


def run(world: World, until: float, **options: Any) -> list[Body]:
    return [json.loads(body) for body in AlertSimulator(world, **options).run_until(until)]


def ever_fired(bodies: list[Body]) -> set[Fired]:
    return {key_of(a) for body in bodies for a in body["alerts"] if a["status"] == "firing"}


def started(world: World, alert: Body) -> float:
    """Simulated second an alert started firing."""
    return (datetime.fromisoformat(alert["startsAt"]).timestamp() - world.epoch) * world.speed


PROBE = fired("ProbeFailing", namespace=f"vcluster-{CLIENT}")
NO_HEALTHY = {fired("NoHealthyPeers", pod=POD_0, group_version=gv) for gv in BOTH_GVS}
DEGRADED = {fired("DiscoveryDegraded", group_version=gv) for gv in BOTH_GVS}


def unsynced(pod: str) -> set[Fired]:
    return {fired("PeerCacheUnsynced", pod=pod, group_version=gv) for gv in BOTH_GVS}


# What each docstring predicts by t=1050 (the same table as the real-Prometheus suite).
EXPECTED: dict[str, set[Fired]] = {
    "healthy": set(),
    "relay-fallback": set(),
    "ownership-masked": set(),
    "target-down": {
        fired("TargetUnavailable", pod=POD_0),
        fired("PeerChurn", pod=POD_0),
        *NO_HEALTHY,
        *DEGRADED,
        PROBE,
    },
    "peer-watch-dropped": {*unsynced(POD_0), *DEGRADED, PROBE},
    "license-failure": {*NO_HEALTHY, *unsynced(POD_0), *DEGRADED, PROBE},
    "discovery-degraded": {fired("DiscoveryDegraded", group_version=SECONDARY_GV)},
    "probe-failing": {PROBE},
    "ha-split": {*unsynced(POD_1), *DEGRADED},
    "target-rolling-restart": {fired("TargetUnavailable", pod=POD_0)},
    "storm": {
        fired("TargetUnavailable", pod=POD_0),
        *{
            fired("NoHealthyPeers", pod=POD_0, group_version=gv)
            for i in range(STORM_HUNG)
            for gv in storm_gvs(i)
        },
        *unsynced(POD_0),
        *{fired("PeerCacheUnsynced", pod=POD_0, group_version=gv) for gv in SHARD_GVS},
        *DEGRADED,
        *{fired("DiscoveryDegraded", group_version=gv) for gv in SHARD_GVS},
        PROBE,
    },
    "fleet-grows": set(),
    "shared-target-down": {
        *{
            fired(short, pod=f"{client}-0")
            for client in ("team-a", "team-b", "team-c")
            for short in ("TargetUnavailable", "PeerChurn")
        },
        *{
            fired("NoHealthyPeers", pod=f"{client}-0", group_version=gv)
            for client in ("team-a", "team-b", "team-c")
            for gv in BOTH_GVS
        },
        *DEGRADED,
        *{fired("ProbeFailing", namespace=f"vcluster-{client}") for client in ("team-a", "team-b", "team-c")},
    },
    "config-change": {  # all of them about platform/crd-store-next
        fired("TargetUnavailable", pod=POD_0),
        fired("PeerChurn", pod=POD_0),
        fired("NoHealthyPeers", pod=POD_0, group_version=SECONDARY_GV),
        fired("DiscoveryDegraded", group_version=SECONDARY_GV),
    },
}


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_scenario_fires_what_its_docstring_predicts(scenario: str) -> None:
    assert ever_fired(run(build_world(scenario), 1050)) == EXPECTED[scenario]


def test_a_storm_is_one_group_per_target_and_alert_arriving_together() -> None:
    world = build_world("storm")
    bodies = run(world, 330)
    unsynced_groups = {
        body["groupKey"]
        for body in bodies
        for a in body["alerts"]
        if a["labels"]["alertname"] == "ResourceProxyPeerCacheUnsynced"
    }
    assert len(unsynced_groups) == 31  # crd-store and its 30 shards
    starts = [
        started(world, a)
        for body in bodies
        for a in body["alerts"]
        if a["labels"]["alertname"] == "ResourceProxyPeerCacheUnsynced"
    ]
    assert min(starts) >= 240
    assert max(starts) - min(starts) < 30


def test_watches_silent_fires_after_an_hour_without_events_and_the_hold() -> None:
    world = build_world("watches-silent")
    bodies = run(world, 6000)
    assert ever_fired(bodies) == {fired("WatchesSilent", pod=POD_0)}
    (alert,) = bodies[0]["alerts"]
    # Events stop at t=60: one hour of window, then `for: 30m`.
    assert 60 + 3600 + 1800 <= started(world, alert) <= 60 + 3600 + 1800 + 60


def test_holds_and_windows_are_full_length_on_the_fake_clock() -> None:
    world = build_world("target-down")
    bodies = run(world, 1050)
    starts = {a["labels"]["alertname"]: started(world, a) for body in bodies for a in body["alerts"]}
    # Fault at t=60; NoHealthyPeers needs healthy == 0 for 2m; DiscoveryDegraded a rate for 5m.
    assert 60 + 120 <= starts["ResourceProxyNoHealthyPeers"] <= 60 + 120 + 45
    assert 60 + 300 <= starts["ResourceProxyDiscoveryDegraded"] <= 60 + 300 + 90
    assert 900 < starts["ResourceProxyProbeFailing"] <= 900 + 30
    assert 60 < starts["ResourceProxyTargetUnavailable"] < 120


def test_no_healthy_peers_fires_per_group_version_and_pod_then_resolves_after_recovery() -> None:
    world = build_world("target-down")

    def recover(w: World) -> None:
        for pod in w.platform.targets[TARGET].pods:
            pod.answering = True

    world.at(400.0, "target answers again", recover)
    bodies = [b for b in run(world, 1500) if b["commonLabels"]["alertname"] == "ResourceProxyNoHealthyPeers"]
    first, last = bodies[0], bodies[-1]
    assert first["status"] == "firing"
    assert {(a["labels"]["group_version"], a["labels"]["pod"]) for a in first["alerts"]} == {
        (gv, POD_0) for gv in BOTH_GVS
    }
    assert all(a["endsAt"] == "0001-01-01T00:00:00Z" for a in first["alerts"])
    assert last["status"] == "resolved"
    assert {a["fingerprint"] for a in last["alerts"]} == {a["fingerprint"] for a in first["alerts"]}
    for alert in last["alerts"]:
        assert alert["status"] == "resolved"
        ended = (datetime.fromisoformat(alert["endsAt"]).timestamp() - world.epoch) * world.speed
        assert 400 < ended <= 400 + 30


def test_rolling_restart_warns_then_resolves_when_the_window_passes() -> None:
    world = build_world("target-rolling-restart")
    bodies = run(world, 1050)
    assert [b["status"] for b in bodies] == ["firing", "resolved"]
    assert bodies[0]["commonLabels"]["severity"] == "warning"
    (firing,), (resolved,) = bodies[0]["alerts"], bodies[1]["alerts"]
    # The second restart (t=240) is the first transition increase() can see; the 10m window then passes.
    assert 240 < started(world, firing) <= 240 + 30
    ended = (datetime.fromisoformat(resolved["endsAt"]).timestamp() - world.epoch) * world.speed
    assert 240 + 600 <= ended <= 240 + 600 + 30
    assert resolved["fingerprint"] == firing["fingerprint"]


def test_flapping_resolves_and_refires_peer_churn_once_a_cycle_through_alertmanagers_timers() -> None:
    world = build_world("flapping")
    bodies = run(world, 2000)
    churn = [b for b in bodies if b["alerts"][0]["labels"]["alertname"] == "ResourceProxyPeerChurn"]
    # One notification each way per cycle: fired, resolved, fired again, ... (a flapping group).
    assert [b["status"] for b in churn][:7] == ["firing", "resolved"] * 3 + ["firing"]
    refires = [started(world, b["alerts"][0]) for b in churn if b["status"] == "firing"][1:]
    assert all(b - a == pytest.approx(360, abs=30) for a, b in pairwise(refires))
    # The scenario's other alerts stay firing: PeerChurn is the one that flaps.
    others = [a for b in bodies for a in b["alerts"] if a["labels"]["alertname"] != "ResourceProxyPeerChurn"]
    assert {a["status"] for a in others} == {"firing"}


def test_healthy_sends_nothing_for_an_hour() -> None:
    assert run(build_world("healthy"), 3600) == []


def test_notifications_group_by_alertname_cluster_and_target() -> None:
    bodies = run(build_world("target-down"), 1050)
    assert GROUP_BY == ("alertname", "cluster", "target")
    for body in bodies:
        names = {a["labels"]["alertname"] for a in body["alerts"]}
        assert len(names) == 1
        expected = {k: body["alerts"][0]["labels"][k] for k in GROUP_BY if k in body["alerts"][0]["labels"]}
        assert body["groupLabels"] == expected
        assert body["groupKey"] == group_key(expected)
    by_name = {b["groupLabels"]["alertname"]: b for b in bodies}
    assert by_name["ResourceProxyNoHealthyPeers"]["groupKey"] == (
        f'{{}}:{{alertname="ResourceProxyNoHealthyPeers", cluster="{CLIENT}", target="{TARGET_LABEL}"}}'
    )
    assert len(by_name["ResourceProxyNoHealthyPeers"]["alerts"]) == 2
    # The shipped rule sums away pod and cluster: its group has only alertname and target.
    assert by_name["ResourceProxyDiscoveryDegraded"]["groupLabels"] == {
        "alertname": "ResourceProxyDiscoveryDegraded",
        "target": TARGET_LABEL,
    }


def test_an_unchanged_group_repeats_after_repeat_interval_only() -> None:
    world = build_world("probe-failing")
    route = Route(group_wait=30, group_interval=60, repeat_interval=600)
    bodies = run(world, 2000, route=route)
    times = [started(world, b["alerts"][0]) for b in bodies]
    assert len(bodies) == 2
    assert {b["groupKey"] for b in bodies} == {bodies[0]["groupKey"]}
    assert times[0] == times[1]  # the same alert, not a new one


def test_repeat_is_sent_at_the_first_flush_past_the_interval() -> None:
    world = build_world("probe-failing")
    sent: list[float] = []
    route = Route(group_wait=30, group_interval=60, repeat_interval=600)
    simulator = AlertSimulator(world, route=route, deliver=lambda body: sent.append(world.now()))
    simulator.run_until(2000)
    assert len(sent) == 2
    assert 600 <= sent[1] - sent[0] <= 600 + 60


def test_payloads_have_the_webhook_v4_shape() -> None:
    bodies = AlertSimulator(build_world("target-down")).run_until(1050)
    assert bodies
    for raw in bodies:
        body = json.loads(raw)
        assert list(body) == list(json.loads(samples.FIRING))
        assert body["version"] == "4"
        assert body["truncatedAlerts"] == 0
        assert isinstance(body["externalURL"], str)
        assert body["receiver"] == "proxybot"
        for alert in body["alerts"]:
            assert list(alert) == list(json.loads(samples.FIRING)["alerts"][0])
            assert alert["fingerprint"] == fingerprint(alert["labels"])
            assert alert["generatorURL"].startswith("http://prometheus.sim:9090/graph?g0.expr=")
            assert alert["annotations"]["summary"]
        parsed = parse_webhook(raw)
        assert parsed.alerts[0].ends_at is None
        assert parsed.common_labels == body["commonLabels"]


def test_summary_is_rendered_from_the_rule_template() -> None:
    bodies = [json.loads(b) for b in AlertSimulator(build_world("target-down")).run_until(1050)]
    by_name = {b["groupLabels"]["alertname"]: b for b in bodies}
    alerts = by_name["ResourceProxyNoHealthyPeers"]["alerts"]
    assert {a["annotations"]["summary"] for a in alerts} == {
        f"Resource proxy target {TARGET_LABEL} ({gv}): no fully healthy peers" for gv in BOTH_GVS
    }
    # Two different summaries: no common one; the shared severity is a common label.
    assert "summary" not in by_name["ResourceProxyNoHealthyPeers"]["commonAnnotations"]
    assert by_name["ResourceProxyNoHealthyPeers"]["commonLabels"]["severity"] == "critical"
    (probe,) = by_name["ResourceProxyProbeFailing"]["alerts"]
    assert probe["annotations"]["summary"].startswith("Resource proxy probe has not succeeded for ")
    assert "{{" not in json.dumps(bodies)


def test_fingerprints_match_alertmanager() -> None:
    labels = json.loads(samples.FIRING)["alerts"][0]["labels"]
    assert fingerprint(labels) == samples.FINGERPRINT_A
    assert group_key({"alertname": "ResourceProxyNoHealthyPeers", "target": "team-a/billing"}) == (
        samples.GROUP_KEY
    )


def test_time_scale_shortens_everything_alike() -> None:
    # At speed 20 the world shows wall time compressed 20x; the default scale follows it.
    world = build_world("target-down", speed=20.0)
    bodies = run(world, 1050)
    assert ever_fired(bodies) == EXPECTED["target-down"]
    no_healthy = next(b for b in bodies if b["groupLabels"]["alertname"] == "ResourceProxyNoHealthyPeers")
    wall = datetime.fromisoformat(no_healthy["alerts"][0]["startsAt"]).timestamp() - world.epoch
    assert (60 + 120) / 20 <= wall <= (60 + 120 + 45) / 20


def test_a_failed_delivery_is_retried_in_order_on_the_next_tick() -> None:
    world = build_world("target-down")
    delivered: list[bytes] = []
    failures = [True]

    def flaky(body: bytes) -> None:
        if failures:
            failures.pop()
            raise WebhookDeliveryError("503")
        delivered.append(body)

    simulator = AlertSimulator(world, deliver=flaky)
    produced = simulator.run_until(1050)
    assert delivered == produced
    assert simulator.undelivered == []


def test_increase_follows_prometheus_extrapolation() -> None:
    # 5 -> 10, then a reset to 2 (counted as +2): 7 over 30 s of samples, extrapolated to the 60 s window.
    assert extrapolated_increase([(0, 5), (15, 10), (30, 2)], -15, 45) == pytest.approx(7 * 60 / 30)
    # Fewer than two samples: no result at all.
    assert extrapolated_increase([(0, 5)], -600, 0) is None
    # A counter first scraped at its final value has not increased, as far as the window can tell:
    # this is why a single quarantine transition alone does not fire TargetUnavailable.
    assert extrapolated_increase([(0, 2), (15, 2), (30, 2)], -570, 30) == 0


def test_a_changed_rule_expression_is_refused(tmp_path: Path) -> None:
    changed = RULES_PATH.read_text().replace('{state="healthy"} == 0\n', '{state="healthy"} < 1\n', 1)
    path = tmp_path / "rules.yaml"
    path.write_text(changed)
    with pytest.raises(RuleMismatchError, match="ResourceProxyNoHealthyPeers"):
        load_rules(path)
    assert {r.alert for r in load_rules()} == {name for name, _ in EXPECTED["target-down"]} | {
        "ResourceProxyPeerCacheUnsynced",
        "ResourceProxyWatchesSilent",
    }


class _Receiver(BaseHTTPRequestHandler):
    answers: ClassVar[list[int]] = []
    seen: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        self.seen.append((self.headers.get("Authorization", ""), self.rfile.read(length)))
        self.send_response(self.answers.pop(0))
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def receiver() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/alertmanager"
    finally:
        server.shutdown()
        server.server_close()


def test_post_webhook_sends_the_body_with_the_bearer_token(receiver: str) -> None:
    _Receiver.answers, _Receiver.seen = [200, 503], []
    post_webhook(receiver, "s3cret", samples.FIRING, timeout=5)
    assert _Receiver.seen == [("Bearer s3cret", samples.FIRING)]
    with pytest.raises(WebhookDeliveryError, match="503"):
        post_webhook(receiver, None, samples.FIRING, timeout=5)
    assert _Receiver.seen[1][0] == ""


def test_silenced_alerts_are_not_notified_their_resolution_included() -> None:
    # Alertmanager's mute stage: a silenced alert leaves the notification, firing or resolved.
    def statuses(bodies: list[Body]) -> list[str]:
        return [a["status"] for b in bodies for a in b["alerts"] if a["labels"]["alertname"] == UNAVAILABLE]

    def silencing(name: str) -> Callable[[dict[str, str]], list[str]]:
        return lambda labels: ["s1"] if labels["alertname"] == name else []

    loud = run(build_world("target-rolling-restart"), 1200)
    assert statuses(loud) == ["firing", "resolved"]
    assert run(build_world("target-rolling-restart"), 1200, muted=silencing("SomethingElse")) == loud
    assert run(build_world("target-rolling-restart"), 1200, muted=silencing(UNAVAILABLE)) == []


UNAVAILABLE = "ResourceProxyTargetUnavailable"


def test_a_silenced_alert_is_listed_suppressed_until_it_ends_and_nothing_of_it_is_notified() -> None:
    # What the bot's silenced-end logic relies on: the stand-in lists the alert while it fires (silenced),
    # then no longer, and no webhook ever told of it.
    world = build_world("target-rolling-restart")
    holder: list[AlertSimulator] = []
    with AlertmanagerApi(lambda: holder[0].notifier.held()) as api:
        holder.append(AlertSimulator(world, muted=api.silenced_by))
        body = {
            "matchers": [{"name": "alertname", "value": UNAVAILABLE, "isRegex": False}],
            "startsAt": datetime.now(UTC).isoformat(),
            "endsAt": datetime.fromtimestamp(time.time() + 3600, UTC).isoformat(),
            "createdBy": "you",
            "comment": "rebuilding",
        }
        made = httpx.post(f"{api.url}/api/v2/silences", json=body, timeout=10).json()["silenceID"]
        bodies: list[bytes] = []
        seen: list[list[tuple[str, list[str]]]] = []
        for t in range(15, 1215, 15):
            bodies += holder[0].run_until(t)
            params = {"filter": f'alertname="{UNAVAILABLE}"'}
            listed = httpx.get(f"{api.url}/api/v2/alerts", params=params, timeout=10).json()
            seen.append([(a["status"]["state"], a["status"]["silencedBy"]) for a in listed])
    assert bodies == [], "neither its firing nor its end is notified"
    assert ("suppressed", [made]) in [one for listing in seen for one in listing]
    assert seen[-1] == [], "once it ended, Alertmanager lists it no more"
