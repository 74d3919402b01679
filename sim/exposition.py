"""A minimal Prometheus registry and text-format writer (prometheus_client is a dev-only dependency)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

LabelValues = tuple[str, ...]


def format_value(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def render_labels(names: Iterable[str], values: Iterable[str]) -> str:
    pairs = [f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True)]
    return "{" + ",".join(pairs) + "}" if pairs else ""


@dataclass
class Family:
    """One counter or gauge family: label values -> value. A family with no series renders nothing."""

    name: str
    kind: str
    help: str
    label_names: tuple[str, ...]
    values: dict[LabelValues, float] = field(default_factory=dict)

    def inc(self, labels: LabelValues, amount: float = 1.0) -> None:
        self.values[labels] = self.values.get(labels, 0.0) + amount

    def set(self, labels: LabelValues, value: float) -> None:
        self.values[labels] = value

    def get(self, labels: LabelValues) -> float | None:
        return self.values.get(labels)

    def render(self) -> list[str]:
        if not self.values:
            return []
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}"]
        for labels, value in sorted(self.values.items()):
            lines.append(f"{self.name}{render_labels(self.label_names, labels)} {format_value(value)}")
        return lines


@dataclass
class _Series:
    counts: list[int]
    sum: float = 0.0
    count: int = 0


@dataclass
class HistogramFamily:
    """A histogram family with fixed upper bounds; `+Inf` is implicit."""

    name: str
    help: str
    label_names: tuple[str, ...]
    bounds: tuple[float, ...]
    series: dict[LabelValues, _Series] = field(default_factory=dict)

    def observe(self, labels: LabelValues, value: float) -> None:
        s = self.series.get(labels)
        if s is None:
            s = self.series[labels] = _Series(counts=[0] * len(self.bounds))
        index = bisect.bisect_left(self.bounds, value)
        if index < len(self.bounds):
            s.counts[index] += 1
        s.sum += value
        s.count += 1

    def count(self, labels: LabelValues) -> int:
        s = self.series.get(labels)
        return 0 if s is None else s.count

    def render(self) -> list[str]:
        if not self.series:
            return []
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        for labels, s in sorted(self.series.items()):
            lines.extend(self._render_series(labels, s))
        return lines

    def _render_series(self, labels: LabelValues, s: _Series) -> list[str]:
        names = (*self.label_names, "le")
        out, cumulative = [], 0
        for bound, n in zip(self.bounds, s.counts, strict=True):
            cumulative += n
            le = render_labels(names, (*labels, format_value(bound)))
            out.append(f"{self.name}_bucket{le} {cumulative}")
        out.append(f"{self.name}_bucket{render_labels(names, (*labels, '+Inf'))} {s.count}")
        plain = render_labels(self.label_names, labels)
        out.append(f"{self.name}_sum{plain} {format_value(s.sum)}")
        out.append(f"{self.name}_count{plain} {s.count}")
        return out
