"""histogram_quantile against hand-computed values of Prometheus 2.42's algorithm, plus properties."""

from __future__ import annotations

import math
from random import Random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.domain.delta import delta
from bot.domain.quantile import (
    P99,
    delta_quantile,
    histogram_quantile,
    quantile_of,
)
from bot.domain.snapshot import (
    DIAL_DURATION,
    REQUEST_DURATION,
    Bucket,
    Histogram,
    ProxySnapshot,
    make_labels,
)

INF = math.inf


def buckets(*pairs: tuple[float, float]) -> list[Bucket]:
    return [Bucket(le, count) for le, count in pairs]


TYPICAL = buckets((0.1, 2), (0.5, 6), (1, 8), (INF, 10))

TABLE = [
    # (id, q, buckets, expected)
    ("typical-p50", 0.5, TYPICAL, 0.1 + 0.4 * (3 / 4)),
    ("typical-p20-first-bucket-from-zero", 0.2, TYPICAL, 0.1),
    ("typical-p10", 0.1, TYPICAL, 0.1 * (1 / 2)),
    ("typical-p80-exact-bound", 0.8, TYPICAL, 1.0),
    ("typical-p90-in-inf-bucket", 0.9, TYPICAL, 1.0),
    ("typical-q1-in-inf-bucket", 1.0, TYPICAL, 1.0),
    ("q0-first-bucket-not-empty", 0.0, TYPICAL, 0.0),
    # 0/0 in the first bucket: Prometheus really answers NaN here.
    ("q0-first-bucket-empty", 0.0, buckets((1, 0), (2, 4), (INF, 4)), math.nan),
    ("all-in-inf", 0.5, buckets((0.1, 0), (1, 0), (INF, 7)), 1.0),
    ("all-in-inf-low-q", 0.01, buckets((0.1, 0), (1, 0), (INF, 7)), 1.0),
    ("zero-observations", 0.5, buckets((0.1, 0), (1, 0), (INF, 0)), math.nan),
    ("no-buckets", 0.5, [], math.nan),
    ("only-inf-bucket", 0.5, buckets((INF, 5)), math.nan),
    ("missing-inf", 0.5, buckets((0.1, 1), (1, 5)), math.nan),
    ("single-finite-plus-inf", 0.5, buckets((5, 4), (INF, 4)), 5 * (2 / 4)),
    ("single-finite-plus-inf-rank-in-inf", 0.9, buckets((5, 4), (INF, 5)), 5.0),
    ("unsorted-input", 0.5, list(reversed(TYPICAL)), 0.1 + 0.4 * (3 / 4)),
    # Envelope: (1, 3) is raised to 5, so rank 6 lands in (1, 2] between 5 and 8.
    ("non-monotonic", 0.6, buckets((0.5, 5), (1, 3), (2, 8), (INF, 10)), 1 + 1 * (1 / 3)),
    # Non-monotonic +Inf: raised to 9, the highest finite count, so rank = 4.5, not 2.
    ("non-monotonic-inf", 0.5, buckets((1, 6), (2, 9), (INF, 4)), 1 * (4.5 / 6)),
    ("duplicate-bounds-coalesce", 0.5, buckets((1, 2), (1, 2), (INF, 8)), 1.0),
    # Two +Inf series add up to 12 observations: rank 6 lands in (1, 2].
    ("duplicate-inf-coalesce", 0.5, buckets((1, 4), (2, 10), (INF, 6), (INF, 6)), 1 + 1 * (2 / 6)),
    ("negative-first-bound", 0.1, buckets((-1, 2), (1, 6), (INF, 10)), -1.0),
    ("zero-first-bound", 0.1, buckets((0, 2), (1, 6), (INF, 10)), 0.0),
    ("negative-first-bound-next-bucket", 0.5, buckets((-1, 2), (1, 6), (INF, 10)), -1 + 2 * (3 / 4)),
    ("q-below-zero", -0.1, TYPICAL, -INF),
    ("q-above-one", 1.1, TYPICAL, INF),
    ("q-nan", math.nan, TYPICAL, math.nan),
    # The q checks come before the bucket checks.
    ("q-below-zero-missing-inf", -1.0, buckets((1, 1)), -INF),
    ("q-above-one-empty", 2.0, [], INF),
    ("fractional-counts", 0.5, buckets((1, 0.5), (2, 1.5), (INF, 2.0)), 1 + 1 * (0.5 / 1.0)),
    # A NaN count in the first bucket poisons the envelope, as in 2.42: nothing after it is raised,
    # so (3, 4) stays below (2, 6) and the search lands in (3, 4].
    ("nan-first-count", 0.625, buckets((1, math.nan), (2, 6), (3, 4), (4, 7), (INF, 8)), 3 + 1 / 3),
]


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize(
    ("q", "given_buckets", "expected"), [c[1:] for c in TABLE], ids=[c[0] for c in TABLE]
)
def test_table(q: float, given_buckets: list[Bucket], expected: float) -> None:
    got = histogram_quantile(q, given_buckets)
    assert same(got, expected) or math.isclose(got, expected, rel_tol=1e-12), (got, expected)


def test_input_is_not_modified() -> None:
    given_buckets = buckets((1, 5), (0.5, 6), (INF, 4))
    before = list(given_buckets)
    histogram_quantile(0.5, given_buckets)
    assert given_buckets == before


def test_quantile_of_uses_inf_bucket_not_count() -> None:
    # `count` disagreeing with the +Inf bucket (a torn scrape) must not change the answer.
    h = Histogram(tuple(TYPICAL), count=999.0, sum=1.0)
    assert quantile_of(h, 0.5) == histogram_quantile(0.5, TYPICAL)
    assert quantile_of(h, P99) == 1.0


def _snapshot(
    request: dict[str, list[tuple[float, float]]], dial: list[tuple[float, float]]
) -> ProxySnapshot:
    hists = {
        make_labels([("target", "p/t"), ("verb", verb)]): Histogram(tuple(buckets(*pairs)), pairs[-1][1], 0.0)
        for verb, pairs in request.items()
    }
    dial_h = {make_labels([("target", "p/t")]): Histogram(tuple(buckets(*dial)), dial[-1][1], 0.0)}
    return ProxySnapshot(histograms={REQUEST_DURATION: hists, DIAL_DURATION: dial_h})


def test_delta_quantile_sums_series_over_the_window() -> None:
    before = _snapshot({"get": [(1, 10), (INF, 10)], "list": [(1, 0), (INF, 0)]}, [(1, 3), (INF, 3)])
    after = _snapshot({"get": [(1, 12), (INF, 14)], "list": [(1, 2), (INF, 4)]}, [(1, 3), (INF, 3)])
    d = delta(before, after, 60)
    # Over the window: le=1 gained 4, +Inf gained 8; p25 -> rank 2 of 4 in (0, 1].
    assert delta_quantile(d, REQUEST_DURATION, 0.25, target="p/t") == 0.5
    assert delta_quantile(d, REQUEST_DURATION, 0.75, target="p/t") == 1.0
    assert delta_quantile(d, REQUEST_DURATION, 0.5, target="p/t", verb="get") == 1.0
    # Nothing observed in the window, and no such series: no number to report.
    assert delta_quantile(d, DIAL_DURATION, 0.5, target="p/t") is None
    assert delta_quantile(d, REQUEST_DURATION, 0.5, target="other/x") is None


# -- properties ---------------------------------------------------------------------------------------

finite_bounds = st.lists(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=12, unique=True
)
increments = st.lists(st.integers(min_value=0, max_value=1000), min_size=13, max_size=13)
quantile_q = st.floats(min_value=0.0, max_value=1.0)


def _cumulative(bounds: list[float], incs: list[int]) -> list[Bucket]:
    """A well-formed histogram: sorted bounds, cumulative counts, a +Inf bucket."""
    out: list[Bucket] = []
    total = 0
    for le, inc in zip([*sorted(bounds), INF], incs, strict=False):
        total += inc
        out.append(Bucket(le, float(total)))
    return out


def _tol(x: float) -> float:
    return 1e-9 * max(1.0, abs(x))


@given(finite_bounds, increments, quantile_q)
def test_result_within_the_bucket_bounds(bounds: list[float], incs: list[int], q: float) -> None:
    bs = _cumulative(bounds, incs)
    got = histogram_quantile(q, bs)
    if bs[-1].count == 0:
        assert math.isnan(got)
        return
    if math.isnan(got):
        # Only the 0/0 corner: q == 0 with an empty first bucket of positive bound.
        assert q == 0
        assert bs[0].count == 0
        assert bs[0].le > 0
        return
    finite = [b.le for b in bs[:-1]]
    low = min(0.0, finite[0])
    assert low - _tol(low) <= got <= finite[-1] + _tol(finite[-1])
    # And inside the very bucket that holds the rank.
    rank = q * bs[-1].count
    holder = next((i for i, b in enumerate(bs) if b.count >= rank), len(bs) - 1)
    if holder < len(bs) - 1:
        start = bs[holder - 1].le if holder > 0 else min(0.0, bs[0].le)
        assert start - _tol(start) <= got <= bs[holder].le + _tol(bs[holder].le)


@given(finite_bounds, increments, quantile_q, quantile_q)
def test_monotone_in_q(bounds: list[float], incs: list[int], q1: float, q2: float) -> None:
    bs = _cumulative(bounds, incs)
    low, high = sorted((q1, q2))
    a, b = histogram_quantile(low, bs), histogram_quantile(high, bs)
    if math.isnan(a) or math.isnan(b):
        return
    assert a <= b + _tol(b)


@given(finite_bounds, increments, quantile_q, st.randoms(use_true_random=False))
def test_bucket_order_does_not_matter(bounds: list[float], incs: list[int], q: float, rnd: Random) -> None:
    bs = _cumulative(bounds, incs)
    shuffled = list(bs)
    rnd.shuffle(shuffled)
    assert same(histogram_quantile(q, shuffled), histogram_quantile(q, bs))


@given(finite_bounds, increments, quantile_q)
def test_envelope_repairs_a_lowered_bucket(bounds: list[float], incs: list[int], q: float) -> None:
    # A bucket counted lower than the one before it (a torn scrape) reads as if equal to it.
    bs = _cumulative(bounds, incs)
    if len(bs) < 3 or bs[-3].count == 0:
        return
    lowered = [*bs[:-2], Bucket(bs[-2].le, 0.0), bs[-1]]
    repaired = [*bs[:-2], Bucket(bs[-2].le, bs[-3].count), bs[-1]]
    assert same(histogram_quantile(q, lowered), histogram_quantile(q, repaired))
