"""What happened between two snapshots: counter increases and histogram bucket deltas.

Counter resets (a proxy pod restarted) follow Prometheus' `increase()`: when a value drops, the
counter restarted from zero, so the whole current value is the increase since the reset. A series
that appears only in the later snapshot counted its first events in between (absent = zero). A series
that vanished was reset and has not counted since: it is recorded as a reset with no increase.
Unlike `increase()` there is no extrapolation: these are the exact differences of two readings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.domain.snapshot import Bucket, Histogram, Labels, ProxySnapshot, is_counter

SeriesKey = tuple[str, Labels]


@dataclass(frozen=True)
class ProxyDelta:
    """Increases over `seconds`; `increase` holds only counters and histograms."""

    increase: ProxySnapshot
    seconds: float
    reset_series: frozenset[tuple[str, Labels]] = field(default_factory=frozenset)

    @property
    def had_reset(self) -> bool:
        return bool(self.reset_series)

    def per_second(self, name: str, **match: str) -> float:
        """The summed increase of matching counter series divided by the window; 0.0 for an empty window."""
        if self.seconds <= 0:
            return 0.0
        return self.increase.value(name, **match) / self.seconds


def counter_increase(before: float | None, after: float) -> tuple[float, bool]:
    """The increase of one counter and whether it was reset in between."""
    if before is None:
        return after, False
    if after < before:
        return after, True
    return after - before, False


def histogram_increase(before: Histogram | None, after: Histogram) -> tuple[Histogram, bool]:
    """Per-bucket increase of one histogram and whether it was reset in between."""
    if before is None:
        return after, False
    old = {b.le: b.count for b in before.buckets}
    reset = after.count < before.count or any(b.count < old.get(b.le, 0.0) for b in after.buckets)
    if reset:
        return after, True
    buckets = tuple(Bucket(b.le, b.count - old.get(b.le, 0.0)) for b in after.buckets)
    return Histogram(buckets, after.count - before.count, after.sum - before.sum), False


def _counter_increases(
    before: ProxySnapshot, after: ProxySnapshot, resets: set[SeriesKey]
) -> dict[str, dict[Labels, float]]:
    samples: dict[str, dict[Labels, float]] = {}
    for name, series in after.samples.items():
        if not is_counter(name):
            continue
        old = before.samples.get(name, {})
        out = samples.setdefault(name, {})
        for labels, value in series.items():
            out[labels], was_reset = counter_increase(old.get(labels), value)
            if was_reset:
                resets.add((name, labels))
    counters_before = {name: s for name, s in before.samples.items() if is_counter(name)}
    resets.update(_vanished(counters_before, samples))
    return samples


def _histogram_increases(
    before: ProxySnapshot, after: ProxySnapshot, resets: set[SeriesKey]
) -> dict[str, dict[Labels, Histogram]]:
    histograms: dict[str, dict[Labels, Histogram]] = {}
    for name, hists in after.histograms.items():
        old = before.histograms.get(name, {})
        out = histograms.setdefault(name, {})
        for labels, hist in hists.items():
            out[labels], was_reset = histogram_increase(old.get(labels), hist)
            if was_reset:
                resets.add((name, labels))
    resets.update(_vanished(before.histograms, histograms))
    return histograms


def _vanished(
    before: Mapping[str, Mapping[Labels, object]], now: Mapping[str, Mapping[Labels, object]]
) -> set[SeriesKey]:
    """Series present before and gone now: the pod restarted and has not counted them again since."""
    return {
        (name, labels)
        for name, series in before.items()
        for labels in series
        if labels not in now.get(name, {})
    }


def delta(before: ProxySnapshot, after: ProxySnapshot, seconds: float) -> ProxyDelta:
    """The increase of every counter and histogram from `before` to `after` (gauges are left out)."""
    resets: set[SeriesKey] = set()
    samples = _counter_increases(before, after, resets)
    histograms = _histogram_increases(before, after, resets)
    increase = ProxySnapshot(samples=samples, histograms=histograms)
    return ProxyDelta(increase=increase, seconds=seconds, reset_series=frozenset(resets))
