"""`path`'s dial latency signal: a step up is seen, no step without one, nothing without dials."""

from __future__ import annotations

from bot.checks.path_signals import dial_reading
from bot.domain.snapshot import DIAL_DURATION, Bucket, Histogram, ProxySnapshot, make_labels

TARGET = "platform/crd-store"


def _snapshot(counts: tuple[float, ...]) -> ProxySnapshot:
    bounds = (0.01, 0.1, 0.25, float("inf"))
    histogram = Histogram(tuple(Bucket(le, c) for le, c in zip(bounds, counts, strict=True)), counts[-1], 0.0)
    return ProxySnapshot(histograms={DIAL_DURATION: {make_labels([("target", TARGET)]): histogram}})


def test_dial_step_is_seen_when_recent_dials_are_slower() -> None:
    before = _snapshot((100, 100, 100, 100))
    after = _snapshot((100, 100, 150, 150))  # 50 new dials, all between 100 and 250 ms
    reading = dial_reading(before, after, 3.0, TARGET)
    assert reading.step is True
    assert reading.recent_dials == 50
    assert reading.recent_p50 is not None
    assert reading.recent_p50 > 0.1


def test_no_step_when_recent_dials_look_like_before_and_none_without_dials() -> None:
    before = _snapshot((100, 100, 100, 100))
    assert dial_reading(before, _snapshot((150, 150, 150, 150)), 3.0, TARGET).step is False
    assert dial_reading(before, before, 3.0, TARGET).step is None
    assert (
        dial_reading("cluster team-a: forbidden", before, 3.0, TARGET).unavailable
        == "cluster team-a: forbidden"
    )
