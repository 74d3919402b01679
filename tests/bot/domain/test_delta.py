"""Deltas between two snapshots: increases, resets (pod restarts), absent counters, histogram buckets."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from bot.domain.delta import ProxyDelta, counter_increase, delta, histogram_increase
from bot.domain.snapshot import (
    DIAL_DURATION,
    INFLIGHT,
    PEERS,
    QUARANTINES,
    REQUEST_DURATION,
    REQUESTS,
    Bucket,
    Histogram,
    Labels,
    ProxySnapshot,
    make_labels,
)

INF = math.inf
T = "team/target"


def req(reason: str, code: str = "503", target: str = T) -> Labels:
    return make_labels(
        [
            ("target", target),
            ("group_version", "example.com/v1"),
            ("verb", "get"),
            ("code", code),
            ("reason", reason),
        ]
    )


def tgt(target: str = T) -> Labels:
    return make_labels([("target", target)])


def hist(*cumulative: tuple[float, float], total: float = 0.0) -> Histogram:
    return Histogram(tuple(Bucket(le, c) for le, c in cumulative), cumulative[-1][1], total)


def snap(
    samples: dict[str, dict[Labels, float]] | None = None,
    histograms: dict[str, dict[Labels, Histogram]] | None = None,
) -> ProxySnapshot:
    return ProxySnapshot(samples=samples or {}, histograms=histograms or {})


# -- single values --------------------------------------------------------------------------------


def test_counter_increase_cases() -> None:
    assert counter_increase(10.0, 15.0) == (5.0, False)
    assert counter_increase(10.0, 10.0) == (0.0, False)
    assert counter_increase(None, 4.0) == (4.0, False)
    # Dropped: the pod restarted and counted 3 since.
    assert counter_increase(10.0, 3.0) == (3.0, True)


def test_histogram_increase_per_bucket() -> None:
    before = hist((0.1, 2), (1, 5), (INF, 6), total=2.5)
    after = hist((0.1, 3), (1, 9), (INF, 12), total=4.0)
    got, reset = histogram_increase(before, after)
    assert not reset
    assert got == Histogram((Bucket(0.1, 1), Bucket(1, 4), Bucket(INF, 6)), 6.0, 1.5)


def test_histogram_increase_reset_keeps_the_new_histogram() -> None:
    before = hist((0.1, 2), (1, 5), (INF, 6))
    after = hist((0.1, 1), (1, 1), (INF, 1))
    assert histogram_increase(before, after) == (after, True)


def test_histogram_increase_reset_seen_in_one_bucket_only() -> None:
    # Same total, but a bucket went down: only a restart can do that to cumulative counts.
    before = hist((0.1, 5), (1, 5), (INF, 6))
    after = hist((0.1, 0), (1, 6), (INF, 6))
    assert histogram_increase(before, after) == (after, True)


# -- whole snapshots -------------------------------------------------------------------------------


def test_counter_increase_over_a_window() -> None:
    d = delta(snap({REQUESTS: {req("no_peer"): 10}}), snap({REQUESTS: {req("no_peer"): 25}}), 60)
    assert d.increase.value(REQUESTS, reason="no_peer") == 15
    assert not d.had_reset
    assert d.per_second(REQUESTS, target=T) == 0.25


def test_counter_reset_counts_the_new_value_and_is_recorded() -> None:
    d = delta(snap({REQUESTS: {req("timeout"): 40}}), snap({REQUESTS: {req("timeout"): 7}}), 60)
    assert d.increase.value(REQUESTS, reason="timeout") == 7
    assert d.had_reset
    assert d.reset_series == {(REQUESTS, req("timeout"))}


def test_counter_that_appears_later_counts_from_zero() -> None:
    before = snap({REQUESTS: {req("upstream", "200"): 100}})
    after = snap(
        {REQUESTS: {req("upstream", "200"): 130, req("all_quarantined"): 9}, QUARANTINES: {tgt(): 2}}
    )
    d = delta(before, after, 300)
    assert d.increase.value(REQUESTS, reason="all_quarantined") == 9
    assert d.increase.value(QUARANTINES, target=T) == 2
    assert d.increase.value(REQUESTS, reason="upstream") == 30
    assert not d.had_reset


def test_counter_that_vanished_is_a_reset_with_no_increase() -> None:
    before = snap({REQUESTS: {req("upstream", "200"): 100, req("stale_peers"): 5}})
    after = snap({REQUESTS: {req("upstream", "200"): 2}})
    d = delta(before, after, 60)
    assert d.reset_series == {(REQUESTS, req("stale_peers")), (REQUESTS, req("upstream", "200"))}
    assert d.increase.value(REQUESTS, reason="stale_peers") == 0
    assert d.increase.value(REQUESTS, reason="upstream") == 2


def test_gauges_are_left_out() -> None:
    peers = make_labels([("target", T), ("group_version", "example.com/v1"), ("state", "healthy")])
    before = snap({PEERS: {peers: 3}, INFLIGHT: {tgt(): 5}})
    after = snap({PEERS: {peers: 1}, INFLIGHT: {tgt(): 9}})
    d = delta(before, after, 60)
    assert PEERS not in d.increase.samples
    assert INFLIGHT not in d.increase.samples
    # A gauge going down is not a counter reset.
    assert not d.had_reset


def test_histogram_deltas_and_resets_per_series() -> None:
    get, lst = make_labels([("target", T), ("verb", "get")]), make_labels([("target", T), ("verb", "list")])
    before = snap(histograms={REQUEST_DURATION: {get: hist((1, 4), (INF, 5)), lst: hist((1, 8), (INF, 9))}})
    after = snap(histograms={REQUEST_DURATION: {get: hist((1, 6), (INF, 9)), lst: hist((1, 1), (INF, 1))}})
    d = delta(before, after, 60)
    assert d.increase.histograms[REQUEST_DURATION][get] == hist((1, 2), (INF, 4))
    assert d.increase.histograms[REQUEST_DURATION][lst] == hist((1, 1), (INF, 1))
    assert d.reset_series == {(REQUEST_DURATION, lst)}
    merged = d.increase.histogram(REQUEST_DURATION, target=T)
    assert merged is not None
    assert merged.buckets == (Bucket(1, 3), Bucket(INF, 5))


def test_histogram_that_appears_or_vanishes() -> None:
    before = snap(histograms={DIAL_DURATION: {tgt("a/gone"): hist((1, 4), (INF, 4))}})
    after = snap(histograms={DIAL_DURATION: {tgt("a/new"): hist((1, 2), (INF, 3))}})
    d = delta(before, after, 60)
    assert d.increase.histogram(DIAL_DURATION, target="a/new") == hist((1, 2), (INF, 3))
    assert d.increase.histogram(DIAL_DURATION, target="a/gone") is None
    assert d.reset_series == {(DIAL_DURATION, tgt("a/gone"))}


def test_reason_breakdown_over_the_window() -> None:
    before = snap(
        {
            REQUESTS: {
                req("no_peer"): 5,
                req("timeout"): 1,
                req("upstream", "200"): 50,
                req("no_peer", target="other/x"): 0,
            }
        }
    )
    after = snap(
        {
            REQUESTS: {
                req("no_peer"): 35,
                req("timeout"): 9,
                req("upstream", "200"): 52,
                req("deadline", "504"): 3,
                req("no_peer", target="other/x"): 400,
            }
        }
    )
    d = delta(before, after, 300)
    got = d.increase.breakdown(REQUESTS, "reason", target=T)
    assert got == {"no_peer": 30, "timeout": 8, "deadline": 3, "upstream": 2}
    assert list(got) == ["no_peer", "timeout", "deadline", "upstream"]


def test_per_second_of_an_empty_window_is_zero() -> None:
    d = delta(snap(), snap({REQUESTS: {req("no_peer"): 3}}), 0)
    assert d.per_second(REQUESTS) == 0.0


# -- properties -----------------------------------------------------------------------------------

SERIES = [req("no_peer"), req("timeout"), req("upstream", "200"), req("no_peer", target="other/x")]
# Integral counts below 2**40: differences are exact, so additivity can be asserted with ==.
step = st.integers(min_value=0, max_value=2**40)


@st.composite
def three_readings(draw: st.DrawFn) -> tuple[ProxySnapshot, ProxySnapshot, ProxySnapshot]:
    """Snapshots a, b, c of monotone counters and histograms; a series may first appear in b or c."""
    readings: list[dict[Labels, float]] = [{}, {}, {}]
    hists: list[dict[Labels, Histogram]] = [{}, {}, {}]
    for labels in SERIES:
        first = draw(st.integers(min_value=0, max_value=2))
        value = 0
        low = high = 0
        for i in range(first, 3):
            value += draw(step)
            readings[i][labels] = float(value)
            low += draw(step)
            high += draw(step)
            hists[i][labels] = hist((0.5, float(low)), (INF, float(low + high)))
    a, b, c = (snap({REQUESTS: r}, {REQUEST_DURATION: h}) for r, h in zip(readings, hists, strict=True))
    return a, b, c


def _bucket_counts(d: ProxyDelta, labels: Labels) -> dict[float, float]:
    h = d.increase.histograms.get(REQUEST_DURATION, {}).get(labels)
    return {} if h is None else {b.le: b.count for b in h.buckets}


@given(three_readings())
def test_delta_is_additive_for_monotone_counters(readings: tuple[ProxySnapshot, ...]) -> None:
    a, b, c = readings
    whole, first, second = delta(a, c, 2), delta(a, b, 1), delta(b, c, 1)
    assert not whole.reset_series | first.reset_series | second.reset_series
    for labels in SERIES:
        match = dict(labels)
        parts = first.increase.value(REQUESTS, **match) + second.increase.value(REQUESTS, **match)
        assert whole.increase.value(REQUESTS, **match) == parts
        early, late = _bucket_counts(first, labels), _bucket_counts(second, labels)
        added = {le: early.get(le, 0.0) + late.get(le, 0.0) for le in early | late}
        assert _bucket_counts(whole, labels) == added
