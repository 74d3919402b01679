"""parse_syncer reads exactly what prometheus_client's own parsers read, on pages its own registry renders."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

from bot.domain.parser import parse_syncer
from bot.domain.snapshot import PREFIX, ProxySnapshot

REASONS = (
    *("upstream", "no_peer", "stale_peers", "all_quarantined", "timeout", "deadline", "canceled"),
    *("peer_departed", "ts_server_unavailable", "error", "ownership_masked", "ownership_check_failed"),
    *("namespace_missing", "upgrade_rejected", "upstream_error"),
)
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")
CODES = ("200", "201", "404", "409", "499", "501", "503", "504")
STATES = ("healthy", "quarantined", "half_open")
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
DIAL_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5)

# Label values with the characters that need escaping, unicode, and the proxy prefix itself.
tricky = st.text(
    alphabet=st.one_of(st.characters(exclude_categories=["Cs"]), st.sampled_from('"\\\n{},=# ')), max_size=8
)
label_value = st.one_of(tricky, st.just(f"{PREFIX}peers 1"), st.sampled_from(("default", "a.io/v1", "")))
target = st.builds(lambda p, n: f"{p}/{n}", st.one_of(st.sampled_from(("team", "ml")), tricky), tricky)
group_version = st.one_of(st.sampled_from(("example.com/v1", "db.acme.io/v1beta1")), tricky)
amount = st.one_of(st.integers(0, 10**6).map(float), st.floats(0, 1e15), st.just(math.inf))
gauge_value = st.floats()  # NaN, infinities, negatives and subnormals included
observations = st.lists(st.floats(0, 120), max_size=6)
keyed = st.dictionaries


@dataclass(frozen=True)
class PageSpec:
    """What to record in a registry: proxy series of the guide's families, plus noise."""

    requests: Mapping[tuple[str, str, str, str, str], float]
    peers: Mapping[tuple[str, str, str], float]
    synced: Mapping[tuple[str, str], float]
    dial_failures: Mapping[tuple[str, str], float]
    inflight: Mapping[str, float]
    durations: Mapping[tuple[str, str], list[float]]
    dials: Mapping[str, list[float]]
    noise: Mapping[str, float]
    noise_observations: list[float]


page_specs = st.builds(
    PageSpec,
    requests=keyed(
        st.tuples(
            target, group_version, st.sampled_from(VERBS), st.sampled_from(CODES), st.sampled_from(REASONS)
        ),
        amount,
        max_size=5,
    ),
    peers=keyed(st.tuples(target, group_version, st.sampled_from(STATES)), gauge_value, max_size=4),
    synced=keyed(st.tuples(target, group_version), st.sampled_from((0.0, 1.0)), max_size=3),
    dial_failures=keyed(st.tuples(target, st.sampled_from(REASONS)), amount, max_size=3),
    inflight=keyed(target, gauge_value, max_size=2),
    durations=keyed(st.tuples(target, st.sampled_from(VERBS)), observations, max_size=3),
    dials=keyed(target, observations, max_size=2),
    noise=keyed(label_value, gauge_value, max_size=4),
    noise_observations=observations,
)


def registry_for(spec: PageSpec) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=True)
    _record_proxy(reg, spec)
    _record_noise(reg, spec)
    return reg


def _record_proxy(reg: CollectorRegistry, spec: PageSpec) -> None:
    request_labels = ("target", "group_version", "verb", "code", "reason")
    requests = Counter("vcluster_proxy_request_total", "Requests.", request_labels, registry=reg)
    for request, n in spec.requests.items():
        requests.labels(*request).inc(n)
    peers = Gauge("vcluster_proxy_peers", "Peers.", ("target", "group_version", "state"), registry=reg)
    for peer, v in spec.peers.items():
        peers.labels(*peer).set(v)
    synced = Gauge("vcluster_proxy_peer_cache_synced", "Synced.", ("target", "group_version"), registry=reg)
    for key, v in spec.synced.items():
        synced.labels(*key).set(v)
    failures = Counter(
        "vcluster_proxy_peer_dial_failures", "Dial failures.", ("target", "reason"), registry=reg
    )
    for key, n in spec.dial_failures.items():
        failures.labels(*key).inc(n)
    inflight = Gauge("vcluster_proxy_inflight_requests", "In flight.", ("target",), registry=reg)
    for t, v in spec.inflight.items():
        inflight.labels(t).set(v)
    durations = Histogram(
        "vcluster_proxy_request_duration_seconds",
        "Latency.",
        ("target", "verb"),
        registry=reg,
        buckets=REQUEST_BUCKETS,
    )
    for series, seen in spec.durations.items():
        _observe(durations.labels(*series), seen)
    dials = Histogram(
        "vcluster_proxy_peer_dial_duration_seconds", "Dials.", ("target",), registry=reg, buckets=DIAL_BUCKETS
    )
    for t, seen in spec.dials.items():
        _observe(dials.labels(t), seen)
    # A proxy histogram the guide does not name: only its TYPE line says it is one.
    extra = Histogram("vcluster_proxy_extra_seconds", "Extra.", ("target",), registry=reg, buckets=(0.5, 2))
    for t, seen in spec.dials.items():
        _observe(extra.labels(t), seen)


def _record_noise(reg: CollectorRegistry, spec: PageSpec) -> None:
    reconciles = Counter(
        "controller_runtime_reconcile_total", "Reconciles.", ("controller", "result"), registry=reg
    )
    depth = Gauge("workqueue_depth", "Depth mentioning vcluster_proxy_peers.", ("name",), registry=reg)
    for name, v in spec.noise.items():
        reconciles.labels(name, "success").inc(abs(v) if not math.isnan(v) else 0)
        depth.labels(name).set(v)
    Gauge("go_goroutines", "Goroutines.", registry=reg).set(len(spec.noise))
    Counter("process_cpu_seconds", "CPU.", registry=reg).inc(len(spec.noise_observations))
    waits = Histogram(
        "workqueue_queue_duration_seconds", "Waits.", ("name",), registry=reg, buckets=(1e-8, 1e-4, 1, 10)
    )
    _observe(waits.labels(f"{PREFIX}peers"), spec.noise_observations)


def _observe(histogram: Histogram, seen: Iterable[float]) -> None:
    for value in seen:
        histogram.observe(value)


# A sample comparable across parsers: name and sorted labels, with `le` as the repr of its float.
Key = tuple[str, tuple[tuple[str, str], ...]]


def _key(name: str, labels: Mapping[str, str]) -> Key:
    if name.endswith("_bucket") and "le" in labels:
        labels = {**labels, "le": repr(float(labels["le"]))}
    return name, tuple(sorted(labels.items()))


def flatten(snapshot: ProxySnapshot) -> dict[Key, float]:
    """Our snapshot back as page samples."""
    out = {
        _key(name, dict(labels)): v
        for name, series in snapshot.samples.items()
        for labels, v in series.items()
    }
    for family, hists in snapshot.histograms.items():
        for labels, h in hists.items():
            for b in h.buckets:
                out[_key(f"{family}_bucket", {**dict(labels), "le": repr(b.le)})] = b.count
            out[_key(f"{family}_sum", dict(labels))] = h.sum
            out[_key(f"{family}_count", dict(labels))] = h.count
    return out


def reference(families: Iterable[object]) -> dict[Key, float]:
    """The proxy samples prometheus_client's parser read."""
    out: dict[Key, float] = {}
    for family in families:
        for s in family.samples:  # type: ignore[attr-defined]
            if s.name.startswith(PREFIX):
                key = _key(s.name, s.labels)
                assert key not in out, f"reference read {key} twice"
                out[key] = float(s.value)
    return out


def assert_histograms_kept_whole(snapshot: ProxySnapshot) -> None:
    assert not [name for name in snapshot.samples if name.endswith(("_bucket", "_count", "_sum"))]


def assert_same(ours: dict[Key, float], theirs: dict[Key, float]) -> None:
    assert ours.keys() == theirs.keys()
    for key, value in ours.items():
        other = theirs[key]
        assert value == other or (math.isnan(value) and math.isnan(other)), key


@settings(max_examples=100, deadline=None)
@given(page_specs)
def test_text_pages_read_like_prometheus_client(spec: PageSpec) -> None:
    page = generate_latest(registry_for(spec)).decode()
    snapshot = parse_syncer(page)
    assert_histograms_kept_whole(snapshot)
    assert_same(flatten(snapshot), reference(parse_text(page)))


@settings(max_examples=50, deadline=None)
@given(page_specs)
def test_openmetrics_pages_read_like_the_openmetrics_parser(spec: PageSpec) -> None:
    page = generate_openmetrics(registry_for(spec)).decode()  # type: ignore[no-untyped-call]
    assert page.endswith("# EOF\n")
    snapshot = parse_syncer(page)
    assert_histograms_kept_whole(snapshot)
    assert_same(flatten(snapshot), reference(parse_openmetrics(page)))  # type: ignore[no-untyped-call]


noise_line = st.one_of(
    st.builds(lambda s: f"junk_{s}", tricky.filter(lambda s: "\n" not in s)),
    st.builds(lambda s: f"}} {s} {PREFIX}peers 1", tricky.filter(lambda s: "\n" not in s)),
    st.builds(lambda s: f'workqueue_depth{{name="{s}"}} NaN', st.sampled_from((f"{PREFIX}x", "\\t", '"'))),
    st.just(""),
)


@settings(max_examples=50, deadline=None)
@given(page_specs, st.lists(st.tuples(st.integers(0, 10**6), noise_line), max_size=8))
def test_noise_lines_anywhere_change_nothing(spec: PageSpec, inserts: list[tuple[int, str]]) -> None:
    lines = generate_latest(registry_for(spec)).decode().split("\n")
    expected = parse_syncer("\n".join(lines))
    for at, line in inserts:
        lines.insert(at % (len(lines) + 1), line)
    assert_same(flatten(parse_syncer("\n".join(lines))), flatten(expected))
