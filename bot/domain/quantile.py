"""Quantiles of classic (bucketed) histograms, computed exactly as Prometheus 2.42 computes them.

The on-call engineer compares the bot's p99 with the one on their Prometheus dashboard, so the two must
be the same number, bit for bit, on the same buckets. That rules out any "nicer" estimator: this follows
`histogram_quantile` for classic histograms step by step, including its odd corners:

- q < 0 gives -Inf, q > 1 gives +Inf, a NaN q gives NaN (checked before the buckets are looked at);
- the highest bucket must be `+Inf`, there must be at least two distinct bounds, and the `+Inf` bucket
  (not `_count`) is the number of observations; no observations gives NaN;
- buckets with the same bound are added together; a count lower than an earlier bucket's is raised to
  it (the "monotonic envelope"), which repairs scrapes taken while buckets were being updated;
- a rank in the `+Inf` bucket gives the highest finite bound; a rank in a first bucket whose bound is
  <= 0 gives that bound; otherwise linear interpolation, from 0 in the first bucket.

Prometheus 2.42 has no float-precision correction of bucket counts (later versions do): neither do we.
Every tie-break, including how a NaN count steers the search, matches 2.42; promtool checks it in the tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from bot.domain.delta import ProxyDelta
from bot.domain.snapshot import Bucket, Histogram

P50 = 0.5
P99 = 0.99


def histogram_quantile(q: float, buckets: Sequence[Bucket]) -> float:
    """The q-quantile of cumulative `buckets` (any order), as PromQL's `histogram_quantile` returns it."""
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    ordered = sorted(buckets, key=lambda b: b.le)
    if not ordered or ordered[-1].le != math.inf:
        return math.nan
    bounds, counts = _coalesce(ordered)
    _raise_to_envelope(counts)
    if len(bounds) < 2:
        return math.nan
    observations = counts[-1]
    if observations == 0:
        return math.nan
    return _interpolate(q * observations, bounds, counts)


def _coalesce(ordered: Sequence[Bucket]) -> tuple[list[float], list[float]]:
    """Bounds and counts with buckets of equal bound added together (e.g. `le="1"` and `le="1.0"`)."""
    bounds = [ordered[0].le]
    counts = [ordered[0].count]
    for b in ordered[1:]:
        if b.le == bounds[-1]:
            counts[-1] += b.count
        else:
            bounds.append(b.le)
            counts.append(b.count)
    return bounds, counts


def _raise_to_envelope(counts: list[float]) -> None:
    """Raise every count to the highest seen so far (2.42 starts from the first count, even a NaN one)."""
    highest = counts[0]
    for i in range(1, len(counts)):
        if counts[i] > highest:
            highest = counts[i]
        elif counts[i] < highest:
            counts[i] = highest


def _first_reaching(rank: float, counts: Sequence[float], end: int) -> int:
    """The first index below `end` whose count reaches `rank`, else `end`.

    A binary search shaped like Go's `sort.Search`: the test is "count >= rank", so a NaN count (which
    fails every comparison) steers the search the same way it does in Prometheus.
    """
    low, high = 0, end
    while low < high:
        mid = (low + high) // 2
        if counts[mid] >= rank:
            high = mid
        else:
            low = mid + 1
    return low


def _interpolate(rank: float, bounds: Sequence[float], counts: Sequence[float]) -> float:
    """Linear interpolation of `rank` inside the bucket that holds it."""
    last = len(bounds) - 1
    b = _first_reaching(rank, counts, last)
    if b == last:
        return bounds[last - 1]
    if b == 0 and bounds[0] <= 0:
        return bounds[0]
    start = 0.0
    end = bounds[b]
    in_bucket = counts[b]
    if b > 0:
        start = bounds[b - 1]
        in_bucket -= counts[b - 1]
        rank -= counts[b - 1]
    # Same operations in the same order as Prometheus, so the result is the same float.
    return start + (end - start) * _divide(rank, in_bucket)


def _divide(dividend: float, divisor: float) -> float:
    """IEEE 754 division, as Go does it: x/0 is ±Inf and 0/0 is NaN instead of an exception.

    0/0 is reachable: q = 0 with an empty first bucket, for which Prometheus answers NaN.
    """
    if divisor != 0:
        return dividend / divisor
    if dividend == 0 or math.isnan(dividend):
        return math.nan
    return math.copysign(math.inf, dividend) * math.copysign(1.0, divisor)


def quantile_of(histogram: Histogram, q: float) -> float:
    """The q-quantile of one histogram (its `+Inf` bucket, not `count`, is the number of observations)."""
    return histogram_quantile(q, histogram.buckets)


def delta_quantile(d: ProxyDelta, family: str, q: float, **match: str) -> float | None:
    """The q-quantile of what a histogram family observed over a delta; None when it observed nothing.

    Matching series are added up bucket by bucket first, like `sum by (le) (increase(...))`. NaN (no
    observations, or no usable buckets) becomes None: there is no latency to report, which the caller
    must say in words rather than print "NaN".
    """
    histogram = d.increase.histogram(family, **match)
    if histogram is None:
        return None
    value = quantile_of(histogram, q)
    return None if math.isnan(value) else value
