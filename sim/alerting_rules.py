"""The Prometheus half of the alert simulation: a sample history, the guide's seven rules, their alert states.

Each rule's condition is written in Python against `Query`, with Prometheus' semantics where they decide
when an alert fires: instant selectors see only the series of the latest scrape (staleness), range windows
include both ends, `increase`/`rate` extrapolate like Prometheus 2.x `extrapolatedRate` (counter resets
corrected, fewer than two samples give no result, so a counter's first appearance is not an increase).
Names, `for:` holds, labels and annotation templates come from the shipped rule file; a rule whose
expression there differs from the one its Python condition was written for is refused (`RuleMismatchError`).
Every duration (holds, windows, the probe's age threshold) is divided by `scale`, like the shortened rules.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from sim import names

RULES_PATH = Path(__file__).resolve().parents[1] / "config" / "rules" / "proxy-alerts.yaml"
# Prometheus keeps a resolved alert this long, re-sending it as resolved.
RESOLVED_RETENTION = 15 * 60.0
PROBE_MAX_AGE = 900.0
NAME = "__name__"

SeriesKey = tuple[tuple[str, str], ...]
LabelMap = dict[str, str]
Result = tuple[LabelMap, float]
Point = tuple[float, float]


class RuleMismatchError(ValueError):
    """The rule file and the Python conditions disagree (an expression changed, a rule was added)."""


def series_key(labels: LabelMap) -> SeriesKey:
    return tuple(sorted(labels.items()))


@dataclass
class SeriesStore:
    """Scraped samples per series, kept for `horizon` seconds; the latest scrape decides what is present.
    `named` indexes the series kept by metric name (a rule's selector reads only its metric's)."""

    horizon: float
    points: dict[SeriesKey, list[Point]] = field(default_factory=dict)
    present: set[SeriesKey] = field(default_factory=set)
    named: dict[str, set[SeriesKey]] = field(default_factory=dict)

    def add_scrape(self, at: float, samples: Iterable[tuple[LabelMap, float]]) -> None:
        self.present = set()
        for labels, value in samples:
            key = series_key(labels)
            if key not in self.points:
                self.points[key] = []
                self.named.setdefault(labels.get(NAME, ""), set()).add(key)
            self.points[key].append((at, value))
            self.present.add(key)
        oldest = at - self.horizon
        for key in list(self.points):
            points = self.points[key]  # in scrape order: the old ones first
            gone = bisect.bisect_left(points, oldest, key=_at)
            if gone == len(points):
                del self.points[key]
                self.named[dict(key).get(NAME, "")].discard(key)
            elif gone:
                del points[:gone]

    def of(self, name: str) -> list[SeriesKey]:
        """The series of metric `name` kept, in label order."""
        return sorted(self.named.get(name, ()))


def _at(point: Point) -> float:
    return point[0]


def _matches(key: SeriesKey, name: str, matchers: dict[str, str]) -> bool:
    labels = dict(key)
    return labels.get(NAME) == name and all(labels.get(k) == v for k, v in matchers.items())


def _without_name(key: SeriesKey) -> LabelMap:
    return {k: v for k, v in key if k != NAME}


def extrapolated_increase(points: list[Point], start: float, end: float) -> float | None:
    """Prometheus' `increase` over points in [start, end]; None below two points (no result)."""
    if len(points) < 2:
        return None
    first_t, first_v = points[0]
    last_t, last_v = points[-1]
    result, previous = last_v - first_v, 0.0
    for _, value in points:
        if value < previous:
            result += previous  # a counter reset: the process restarted
        previous = value
    sampled = last_t - first_t
    if sampled <= 0:
        return None
    to_start, to_end = first_t - start, end - last_t
    average = sampled / (len(points) - 1)
    if result > 0 and first_v >= 0:
        # A counter cannot go below zero: never extrapolate back past where it would have been zero.
        to_start = min(to_start, sampled * (first_v / result))
    threshold = average * 1.1
    span = sampled + (to_start if to_start < threshold else average / 2)
    span += to_end if to_end < threshold else average / 2
    return result * (span / sampled)


@dataclass
class Query:
    """PromQL's building blocks at one evaluation instant, with windows divided by `scale`."""

    store: SeriesStore
    now: float
    scale: float

    def instant(self, name: str, **matchers: str) -> list[Result]:
        out = []
        for key in self.store.of(name):
            if key in self.store.present and _matches(key, name, matchers):
                out.append((_without_name(key), self.store.points[key][-1][1]))
        return out

    def increase(self, name: str, window: float) -> list[Result]:
        start = self.now - window / self.scale
        out = []
        for key in self.store.of(name):
            points = self.store.points[key]
            inside = points[
                bisect.bisect_left(points, start, key=_at) : bisect.bisect_right(points, self.now, key=_at)
            ]
            value = extrapolated_increase(inside, start, self.now)
            if value is not None:
                out.append((_without_name(key), value))
        return out

    def rate(self, name: str, window: float) -> list[Result]:
        return [(labels, v / (window / self.scale)) for labels, v in self.increase(name, window)]

    def seconds(self, full: float) -> float:
        return full / self.scale


def _keep(results: list[Result], test: Callable[[float], bool]) -> list[Result]:
    return [(labels, value) for labels, value in results if test(value)]


def _aggregate(results: list[Result], keep: Callable[[LabelMap], LabelMap], pick: str) -> list[Result]:
    groups: dict[SeriesKey, list[float]] = {}
    for labels, value in results:
        groups.setdefault(series_key(keep(labels)), []).append(value)
    combine = sum if pick == "sum" else max
    return [(dict(key), float(combine(values))) for key, values in sorted(groups.items())]


def _unless(left: list[Result], right: list[Result], on: tuple[str, ...] | None = None) -> list[Result]:
    def match(labels: LabelMap) -> SeriesKey:
        return series_key({k: v for k, v in labels.items() if on is None or k in on})

    dropped = {match(labels) for labels, _ in right}
    return [(labels, value) for labels, value in left if match(labels) not in dropped]


def _and(left: list[Result], right: list[Result]) -> list[Result]:
    kept = {series_key(labels) for labels, _ in right}
    return [(labels, value) for labels, value in left if series_key(labels) in kept]


def _or(left: list[Result], right: list[Result]) -> list[Result]:
    return left + _unless(right, left)


# -- the guide's conditions, one per alert ---------------------------------------------------------


def no_healthy_peers(q: Query) -> list[Result]:
    return _keep(q.instant(names.PEERS, state="healthy"), lambda v: v == 0)


def peer_cache_unsynced(q: Query) -> list[Result]:
    return _keep(q.instant(names.PEER_CACHE_SYNCED), lambda v: v == 0)


def target_unavailable(q: Query) -> list[Result]:
    return _keep(q.increase(names.ALL_QUARANTINED, 600), lambda v: v > 0)


def peer_churn(q: Query) -> list[Result]:
    churn = _keep(q.increase(names.QUARANTINES, 1800), lambda v: v > 5)
    healthy = q.instant(names.PEERS, state="healthy")

    def without(labels: LabelMap) -> LabelMap:
        return {k: v for k, v in labels.items() if k not in ("group_version", "state")}

    return _and(churn, _keep(_aggregate(healthy, without, "max"), lambda v: v == 0))


def discovery_degraded(q: Query) -> list[Result]:
    def by(labels: LabelMap) -> LabelMap:
        return {k: v for k, v in labels.items() if k in ("target", "group_version")}

    return _keep(_aggregate(q.rate(names.DISCOVERY_FALLBACKS, 300), by, "sum"), lambda v: v > 0)


def watches_silent(q: Query) -> list[Result]:
    open_watches = _keep(q.instant(names.ACTIVE_WATCHES), lambda v: v > 0)
    return _unless(open_watches, _keep(q.increase(names.WATCH_EVENTS, 3600), lambda v: v > 0))


def _probe_series(q: Query, name: str) -> list[Result]:
    # `namespace=~"vcluster-.*"`: PromQL regexes are anchored, so a prefix test is the same match.
    found = q.instant(name, cronjob="proxy-probe")
    return [(labels, v) for labels, v in found if labels.get("namespace", "").startswith("vcluster-")]


def probe_failing(q: Query) -> list[Result]:
    limit = q.seconds(PROBE_MAX_AGE)
    successes = _probe_series(q, "kube_cronjob_status_last_successful_time")
    stale = _keep([(labels, q.now - v) for labels, v in successes], lambda age: age > limit)
    created = _probe_series(q, "kube_cronjob_created")
    never = _keep([(labels, q.now - v) for labels, v in created], lambda age: age > limit)
    return _or(stale, _unless(never, successes, on=("namespace", "cronjob")))


Condition = Callable[[Query], list[Result]]

# The shipped expression (whitespace collapsed) each condition implements.
CONDITIONS: dict[str, tuple[str, Condition]] = {
    "ResourceProxyNoHealthyPeers": ('vcluster_proxy_peers{state="healthy"} == 0', no_healthy_peers),
    "ResourceProxyPeerCacheUnsynced": ("vcluster_proxy_peer_cache_synced == 0", peer_cache_unsynced),
    "ResourceProxyTargetUnavailable": (
        "increase(vcluster_proxy_target_all_peers_quarantined_total[10m]) > 0",
        target_unavailable,
    ),
    "ResourceProxyPeerChurn": (
        "increase(vcluster_proxy_peer_quarantines_total[30m]) > 5 and max without (group_version, state) "
        '(vcluster_proxy_peers{state="healthy"}) == 0',
        peer_churn,
    ),
    "ResourceProxyDiscoveryDegraded": (
        "sum by (target, group_version) (rate(vcluster_proxy_discovery_fallbacks_total[5m])) > 0",
        discovery_degraded,
    ),
    "ResourceProxyWatchesSilent": (
        "vcluster_proxy_active_watches > 0 unless increase(vcluster_proxy_watch_events_total[1h]) > 0",
        watches_silent,
    ),
    "ResourceProxyProbeFailing": (
        'time() - kube_cronjob_status_last_successful_time{namespace=~"vcluster-.*",cronjob="proxy-probe"} '
        '> 900 or ( time() - kube_cronjob_created{namespace=~"vcluster-.*",cronjob="proxy-probe"} > 900 '
        'unless on(namespace, cronjob) kube_cronjob_status_last_successful_time{namespace=~"vcluster-.*",'
        'cronjob="proxy-probe"} )',
        probe_failing,
    ),
}


# -- rules as shipped, and Prometheus' alert states ------------------------------------------------

_DURATION = re.compile(r"^(\d+)(s|m|h)$")
_UNIT = {"s": 1.0, "m": 60.0, "h": 3600.0}
_LABEL_REF = re.compile(r"\{\{\s*\$labels\.(\w+)\s*\}\}")
_VALUE_REF = re.compile(r"\{\{\s*\$value\s*\}\}")


@dataclass(frozen=True)
class RuleSpec:
    """One alerting rule: the shipped name, hold, labels and templates, and its Python condition."""

    alert: str
    expr: str
    hold: float
    labels: dict[str, str]
    annotations: dict[str, str]
    condition: Condition


def _seconds(text: str) -> float:
    match = _DURATION.match(text)
    if match is None:
        raise RuleMismatchError(f"unsupported duration {text!r}")
    return int(match[1]) * _UNIT[match[2]]


def _spec(rule: dict[str, Any]) -> RuleSpec:
    name = str(rule["alert"])
    expr = " ".join(str(rule["expr"]).split())
    expected = CONDITIONS.get(name)
    if expected is None:
        raise RuleMismatchError(f"no Python condition for rule {name}")
    if expected[0] != expr:
        raise RuleMismatchError(f"{name}: the rule file's expression changed; update sim/alerting_rules.py")
    hold = _seconds(str(rule["for"])) if "for" in rule else 0.0
    labels = {str(k): str(v) for k, v in (rule.get("labels") or {}).items()}
    annotations = {str(k): str(v) for k, v in (rule.get("annotations") or {}).items()}
    return RuleSpec(name, expr, hold, labels, annotations, expected[1])


def load_rules(path: Path = RULES_PATH) -> list[RuleSpec]:
    """The shipped alerting rules, each paired with its condition; every condition must have a rule."""
    document = yaml.safe_load(path.read_text())
    specs = [_spec(rule) for group in document["groups"] for rule in group["rules"] if "alert" in rule]
    missing = set(CONDITIONS) - {spec.alert for spec in specs}
    if missing:
        raise RuleMismatchError(f"rules missing from {path.name}: {', '.join(sorted(missing))}")
    return specs


def format_value(value: float) -> str:
    """A sample value as Go's `%v` prints a float64 in a template (whole numbers without `.0`)."""
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def render_template(template: str, labels: LabelMap, value: float) -> str:
    """The `$labels.name` and `$value` parts of a Prometheus annotation template."""
    text = _LABEL_REF.sub(lambda m: labels.get(m[1], "<no value>"), template)
    return _VALUE_REF.sub(lambda m: format_value(value), text)


class AlertState(StrEnum):
    """Prometheus' states of one alert of a rule."""

    PENDING = "pending"
    FIRING = "firing"
    INACTIVE = "inactive"


@dataclass
class RuleAlert:
    """One alert instance of a rule, as Prometheus tracks it between evaluations."""

    rule: RuleSpec
    labels: LabelMap
    annotations: LabelMap
    value: float
    active_at: float
    state: AlertState = AlertState.PENDING
    fired_at: float | None = None
    resolved_at: float | None = None


class RuleEvaluator:
    """Prometheus' rule manager for the given rules: pending, firing after the hold, resolved, retained."""

    def __init__(self, rules: list[RuleSpec], scale: float) -> None:
        self.rules = rules
        self.scale = scale
        self.active: dict[tuple[str, SeriesKey], RuleAlert] = {}

    def evaluate(self, store: SeriesStore, now: float) -> list[RuleAlert]:
        """Evaluate every rule at `now`; returns what Prometheus sends: firing and just-resolved alerts."""
        query = Query(store, now, self.scale)
        sent: list[RuleAlert] = []
        for rule in self.rules:
            sent += self._evaluate_rule(rule, query)
        return sent

    def _evaluate_rule(self, rule: RuleSpec, query: Query) -> list[RuleAlert]:
        now, seen = query.now, set()
        for sample_labels, value in rule.condition(query):
            labels = {**sample_labels, **rule.labels, "alertname": rule.alert}
            key = (rule.alert, series_key(labels))
            seen.add(key)
            annotations = {k: render_template(t, sample_labels, value) for k, t in rule.annotations.items()}
            alert = self.active.get(key)
            if alert is None or alert.state is AlertState.INACTIVE:
                alert = self.active[key] = RuleAlert(rule, labels, annotations, value, active_at=now)
            alert.value, alert.annotations = value, annotations
        return self._transition(rule, seen, now)

    def _transition(self, rule: RuleSpec, seen: set[tuple[str, SeriesKey]], now: float) -> list[RuleAlert]:
        sent = []
        for key, alert in list(self.active.items()):
            if key[0] != rule.alert:
                continue
            if key not in seen:
                if alert.state is AlertState.FIRING:
                    alert.state, alert.resolved_at = AlertState.INACTIVE, now
                    sent.append(alert)
                elif _forgotten(alert, now):
                    del self.active[key]
                continue
            if alert.state is AlertState.PENDING and now - alert.active_at >= rule.hold / self.scale:
                alert.state, alert.fired_at = AlertState.FIRING, now
            if alert.state is AlertState.FIRING:
                sent.append(alert)
        return sent


def _forgotten(alert: RuleAlert, now: float) -> bool:
    """A pending alert that stopped matching, or a resolved one past Prometheus' retention."""
    if alert.state is AlertState.PENDING:
        return True
    return alert.resolved_at is not None and now - alert.resolved_at > RESOLVED_RETENTION
