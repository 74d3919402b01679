"""What happened between two snapshots: counter increases and histogram bucket deltas.

Counter resets (a proxy pod restarted) follow Prometheus' `increase()`: when a value drops, the
counter restarted from zero, so the whole current value is the increase since the reset. A series
that appears only in the later snapshot counted its first events in between (absent = zero).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.domain.snapshot import Bucket, Histogram, Labels, ProxySnapshot, is_counter


@dataclass(frozen=True)
class ProxyDelta:
    """Increases over `seconds`; `increase` holds only counters and histograms."""

    increase: ProxySnapshot
    seconds: float
    reset_series: frozenset[tuple[str, Labels]] = field(default_factory=frozenset)

    @property
    def had_reset(self) -> bool:
        return bool(self.reset_series)


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


def delta(before: ProxySnapshot, after: ProxySnapshot, seconds: float) -> ProxyDelta:
    """The increase of every counter and histogram from `before` to `after`."""
    resets: set[tuple[str, Labels]] = set()
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
    # A counter that vanished was reset (pod restart) and has not counted again since.
    for name, series in before.samples.items():
        if is_counter(name):
            resets.update((name, labels) for labels in series if labels not in samples.get(name, {}))
    histograms: dict[str, dict[Labels, Histogram]] = {}
    for name, hists in after.histograms.items():
        old_h = before.histograms.get(name, {})
        out_h = histograms.setdefault(name, {})
        for labels, hist in hists.items():
            out_h[labels], was_reset = histogram_increase(old_h.get(labels), hist)
            if was_reset:
                resets.add((name, labels))
    increase = ProxySnapshot(samples=samples, histograms=histograms)
    return ProxyDelta(increase=increase, seconds=seconds, reset_series=frozenset(resets))
