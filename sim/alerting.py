"""What a Prometheus + Alertmanager pair would send for the shipped rules while a scenario runs.

`AlertSimulator(world).tick()` scrapes every client replica (the proxy's series with the `pod` and
`cluster` labels a scrape adds) and kube-state-metrics' CronJob series, evaluates the rules
(`sim.alerting_rules`) and returns the Alertmanager webhook v4 bodies due now, in order.

Clock: `tick(now)` takes the rules' clock, unix seconds as `world.wall_time` shows them (the clock real
Prometheus compares `time()` against); `tick()` reads it from the world. `time_scale` divides every hold,
window, the probe age threshold, the scrape interval and the Alertmanager timers, like the shortened rule
files; it defaults to the world's speed, which keeps each rule's meaning in simulated seconds.

Alertmanager model: one route, grouped by `GROUP_BY` = (alertname, cluster, target) (the receiver snippet's
grouping). A new group waits `group_wait`, then is flushed every `group_interval`; a flush notifies when a
new alert fires, when an alert resolves (with `send_resolved`), or when `repeat_interval` has passed since
the last notification; resolved alerts leave the group after each flush. Fingerprints are Alertmanager's
(FNV-1a 64 of the sorted label set), `groupKey` is `{}:{name="value", ...}`, firing alerts end at Go's
zero time. A rule that aggregates a label away (DiscoveryDegraded keeps only target and group_version)
yields alerts without it, exactly as the shipped rule does. Given `muted` (the active silences' ids for
an alert, `sim.alertmanager_api.AlertmanagerApi.silenced_by`), silenced alerts are left out of every
notification, their resolution included, and a group with only silenced alerts sends nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import quote_plus

import httpx

from sim.alerting_rules import NAME, LabelMap, RuleAlert, RuleEvaluator, RuleSpec, SeriesStore, load_rules
from sim.exposition import Family
from sim.kube.resources import PROBE_NAME
from sim.world import World

GROUP_BY = ("alertname", "cluster", "target")
GO_ZERO_TIME = "0001-01-01T00:00:00Z"
PROMETHEUS_URL = "http://prometheus.sim:9090"
ALERTMANAGER_URL = "http://alertmanager.sim:9093"
_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211
_MASK = (1 << 64) - 1
Deliver = Callable[[bytes], None]
# The active silences' ids that silence an alert with these labels (`sim.alertmanager_api`'s silenced_by).
Muted = Callable[[LabelMap], object]


class WebhookDeliveryError(RuntimeError):
    """A webhook POST failed (transport error or non-2xx); the body stays queued for the next tick."""


def fingerprint(labels: LabelMap) -> str:
    """Alertmanager's alert fingerprint: FNV-1a 64 over sorted names and values, 0xff-separated."""
    digest = _FNV_OFFSET
    for name in sorted(labels):
        for part in (name.encode(), b"\xff", labels[name].encode(), b"\xff"):
            for byte in part:
                digest = ((digest ^ byte) * _FNV_PRIME) & _MASK
    return f"{digest:016x}"


def group_key(group_labels: LabelMap) -> str:
    """The root route's group key, as Alertmanager writes it: `{}:{a="x", b="y"}`."""
    pairs = ", ".join(f"{name}={json.dumps(group_labels[name])}" for name in sorted(group_labels))
    return "{}:{" + pairs + "}"


def rfc3339(unix: float) -> str:
    """Go's RFC3339Nano in UTC: fractional seconds without trailing zeros."""
    moment = datetime.fromtimestamp(unix, UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{moment.microsecond:06d}".rstrip("0")
    return text + (f".{fraction}" if fraction else "") + "Z"


# -- the scrape ------------------------------------------------------------------------------------


def scrape(world: World) -> list[tuple[LabelMap, float]]:
    """Every series Prometheus would hold after scraping each replica and kube-state-metrics now."""
    samples: list[tuple[LabelMap, float]] = []
    # The control plane's namespace, as a scrape of its pod carries it (a discovered client's `match`).
    namespaces = {name: client.namespace for name, client in world.platform.clients.items()}
    for (client, pod), proxy in sorted(world.proxies.items()):
        proxy.render()  # the gauges are computed at scrape time
        families = [f for f in vars(proxy.metrics).values() if isinstance(f, Family)]
        for family in families:
            for values, value in family.values.items():
                labels = dict(zip(family.label_names, values, strict=True))
                scraped = {NAME: family.name, "pod": pod, "cluster": client, "namespace": namespaces[client]}
                samples.append(({**labels, **scraped}, value))
    return samples + _cronjob_series(world)


def _cronjob_series(world: World) -> list[tuple[LabelMap, float]]:
    # The operator's relabeling maps the probe's `vcluster-<name>` namespace to the client's `cluster`.
    samples: list[tuple[LabelMap, float]] = []
    for record in world.probes.values():
        if record.created_at > world.now():
            continue
        namespace = world.platform.clients[record.client].namespace
        labels = {"namespace": namespace, "cronjob": PROBE_NAME, "cluster": record.client}
        samples.append(({**labels, NAME: "kube_cronjob_created"}, world.wall_time(record.created_at)))
        if record.last_success is not None:
            success = world.wall_time(record.last_success)
            samples.append(({**labels, NAME: "kube_cronjob_status_last_successful_time"}, success))
    return samples


# -- Alertmanager ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """The receiver's route: grouping and timers in full-length seconds (divided by the time scale)."""

    receiver: str = "proxybot"
    group_by: tuple[str, ...] = GROUP_BY
    group_wait: float = 30.0
    group_interval: float = 300.0
    repeat_interval: float = 4 * 3600.0
    send_resolved: bool = True
    external_url: str = ALERTMANAGER_URL


@dataclass
class ManagedAlert:
    """One alert as Alertmanager holds it."""

    labels: LabelMap
    annotations: LabelMap
    starts_at: float
    ends_at: float | None
    generator_url: str

    def to_json(self) -> dict[str, object]:
        return {
            "status": "firing" if self.ends_at is None else "resolved",
            "labels": dict(sorted(self.labels.items())),
            "annotations": dict(sorted(self.annotations.items())),
            "startsAt": rfc3339(self.starts_at),
            "endsAt": GO_ZERO_TIME if self.ends_at is None else rfc3339(self.ends_at),
            "generatorURL": self.generator_url,
            "fingerprint": fingerprint(self.labels),
        }


@dataclass
class AlertGroup:
    """An aggregation group and its notification log entry (what was last sent, and when)."""

    labels: LabelMap
    next_flush: float
    alerts: dict[str, ManagedAlert] = field(default_factory=dict)
    sent_firing: frozenset[str] | None = None
    sent_resolved: frozenset[str] = frozenset()
    sent_at: float = 0.0


class Notifier:
    """Alertmanager's dispatcher, dedup stage and webhook integration for one route."""

    def __init__(self, route: Route, scale: float, muted: Muted | None = None) -> None:
        self.route = route
        self.scale = scale
        self.muted = muted
        self.groups: dict[tuple[tuple[str, str], ...], AlertGroup] = {}

    def receive(self, alert: RuleAlert, generator_url: str, now: float) -> None:
        labels = alert.labels
        group_labels = {name: labels[name] for name in self.route.group_by if name in labels}
        key = tuple(sorted(group_labels.items()))
        group = self.groups.get(key)
        if group is None:
            if alert.resolved_at is not None:
                return  # nothing to resolve: Alertmanager already forgot it
            group = AlertGroup(group_labels, now + self.route.group_wait / self.scale)
            self.groups[key] = group
        fp = fingerprint(labels)
        held = group.alerts.get(fp)
        if alert.resolved_at is not None:
            if held is not None:
                held.ends_at = alert.resolved_at
            return
        if held is None or held.ends_at is not None:
            group.alerts[fp] = ManagedAlert(
                labels, alert.annotations, alert.fired_at or now, None, generator_url
            )
        else:
            held.annotations = alert.annotations

    def held(self) -> list[ManagedAlert]:
        """Every alert the groups hold now (resolved ones until their group's next flush)."""
        return [alert for group in self.groups.values() for alert in group.alerts.values()]

    def next_due(self) -> float | None:
        return min((g.next_flush for g in self.groups.values()), default=None)

    def flush(self, now: float) -> list[bytes]:
        """The notifications every due group sends at `now`, oldest group first."""
        bodies = []
        for key, group in sorted(self.groups.items(), key=lambda item: item[1].next_flush):
            if group.next_flush > now:
                continue
            body = self._flush_group(group, now)
            if body is not None:
                bodies.append(body)
            group.next_flush = now + self.route.group_interval / self.scale
            # Resolved alerts leave the group once flushed; an empty group is gone.
            group.alerts = {fp: a for fp, a in group.alerts.items() if a.ends_at is None}
            if not group.alerts:
                del self.groups[key]
        return bodies

    def _flush_group(self, group: AlertGroup, now: float) -> bytes | None:
        # The mute stage: silenced alerts (resolved ones too) leave the notification; with none left the
        # pipeline stops before the dedup stage, so nothing is sent and the log is not written.
        alerts = {fp: a for fp, a in group.alerts.items() if self.muted is None or not self.muted(a.labels)}
        if not alerts:
            return None
        firing = frozenset(fp for fp, a in alerts.items() if a.ends_at is None)
        resolved = frozenset(alerts) - firing
        if not self._needs_update(group, firing, resolved, now):
            return None
        group.sent_firing, group.sent_resolved, group.sent_at = firing, resolved, now
        shown = [a for a in alerts.values() if a.ends_at is None or self.route.send_resolved]
        return self._payload(group, shown) if shown else None

    def _needs_update(
        self, group: AlertGroup, firing: frozenset[str], resolved: frozenset[str], now: float
    ) -> bool:
        # Alertmanager's DedupStage.needsUpdate, with the group's last log entry.
        if group.sent_firing is None:
            return bool(firing)
        if not firing <= group.sent_firing:
            return True
        if not firing:
            return bool(group.sent_firing)
        if self.route.send_resolved and not resolved <= group.sent_resolved:
            return True
        return group.sent_at < now - self.route.repeat_interval / self.scale

    def _payload(self, group: AlertGroup, alerts: list[ManagedAlert]) -> bytes:
        alerts = sorted(alerts, key=lambda a: sorted(a.labels.items()))
        body = {
            "receiver": self.route.receiver,
            "status": "firing" if any(a.ends_at is None for a in alerts) else "resolved",
            "alerts": [a.to_json() for a in alerts],
            "groupLabels": dict(sorted(group.labels.items())),
            "commonLabels": _common([a.labels for a in alerts]),
            "commonAnnotations": _common([a.annotations for a in alerts]),
            "externalURL": self.route.external_url,
            "version": "4",
            "groupKey": group_key(group.labels),
            "truncatedAlerts": 0,
        }
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
        # Go's encoder escapes these inside strings; so do we, to be byte-for-byte alike.
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def _common(label_sets: list[LabelMap]) -> LabelMap:
    first, rest = label_sets[0], label_sets[1:]
    return {k: v for k, v in sorted(first.items()) if all(other.get(k) == v for other in rest)}


# -- the whole pipeline ----------------------------------------------------------------------------


class AlertSimulator:
    """Scrape, evaluate, notify: the webhook bodies a Prometheus + Alertmanager pair would send."""

    def __init__(
        self,
        world: World,
        time_scale: float | None = None,
        *,
        interval: float = 15.0,
        route: Route | None = None,
        deliver: Deliver | None = None,
        rules: list[RuleSpec] | None = None,
        prometheus_url: str = PROMETHEUS_URL,
        muted: Muted | None = None,
    ) -> None:
        self.world = world
        self.scale = world.speed if time_scale is None else time_scale
        if self.scale <= 0 or interval <= 0:
            raise ValueError("time_scale and interval must be positive")
        self.interval = interval / self.scale
        self.store = SeriesStore(horizon=3600.0 / self.scale + 2 * self.interval)
        self.evaluator = RuleEvaluator(rules if rules is not None else load_rules(), self.scale)
        self.notifier = Notifier(route or Route(), self.scale, muted)
        self.deliver = deliver
        self.prometheus_url = prometheus_url
        self.next_scrape: float | None = None
        self.undelivered: list[bytes] = []

    def tick(self, now: float | None = None) -> list[bytes]:
        """Scrape and evaluate when an interval is due, then return (and deliver) the notifications due."""
        now = self.world.wall_time(self.world.now()) if now is None else now
        if self.next_scrape is None or now >= self.next_scrape:
            self.store.add_scrape(now, scrape(self.world))
            for alert in self.evaluator.evaluate(self.store, now):
                self.notifier.receive(alert, self._generator_url(alert), now)
            self.next_scrape = now + self.interval
        bodies = self.notifier.flush(now)
        self._deliver(bodies)
        return bodies

    def run_until(self, t: float) -> list[bytes]:
        """On a fake clock: advance the world to simulated second `t`, ticking whenever one is due."""
        bodies: list[bytes] = []
        while True:
            due = [d for d in (self.next_scrape, self.notifier.next_due()) if d is not None]
            at = min(due) if due else self.world.wall_time(self.world.now())
            sim_at = max(self.world.now(), (at - self.world.epoch) * self.world.speed)
            if sim_at > t:
                break
            self.world.advance_to(sim_at)
            bodies += self.tick(at)
        self.world.advance_to(t)
        return bodies

    def _generator_url(self, alert: RuleAlert) -> str:
        return f"{self.prometheus_url}/graph?g0.expr={quote_plus(alert.rule.expr)}&g0.tab=1"

    def _deliver(self, bodies: list[bytes]) -> None:
        if self.deliver is None:
            return
        queue, self.undelivered = [*self.undelivered, *bodies], []
        for index, body in enumerate(queue):
            try:
                self.deliver(body)
            except WebhookDeliveryError:
                # Alertmanager retries; keep order by holding this one and everything after it.
                self.undelivered = queue[index:]
                return


def post_webhook(url: str, token: str | None, body: bytes, timeout: float) -> None:
    """POST one webhook body as Alertmanager does; raises WebhookDeliveryError unless the answer is 2xx."""
    headers = {"Content-Type": "application/json", "User-Agent": "proxybot-sim-alertmanager"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        response = httpx.post(url, content=body, headers=headers, timeout=timeout)
    except httpx.HTTPError as error:
        raise WebhookDeliveryError(f"POST {url} failed: {type(error).__name__}") from None
    if not response.is_success:
        raise WebhookDeliveryError(f"POST {url} answered {response.status_code}")
