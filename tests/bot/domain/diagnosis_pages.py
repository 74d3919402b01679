"""Builds proxy snapshots for the diagnosis tests: one page of /metrics/syncer, series by series."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.domain.delta import ProxyDelta, delta
from bot.domain.diagnosis import diagnose
from bot.domain.findings import Finding, finding_key
from bot.domain.snapshot import (
    ACTIVE_WATCHES,
    DIAL_FAILURES,
    PEER_CACHE_SYNCED,
    PEER_LIST_AGE,
    PEERS,
    REQUESTS,
    Bucket,
    Histogram,
    Labels,
    ProxySnapshot,
    make_labels,
)

T = "shop/orders"
GV = "orders.example.com/v1"
GV2 = "billing.example.com/v1"


@dataclass
class Page:
    """A mutable page of proxy series; `snapshot()` freezes it."""

    samples: dict[str, dict[Labels, float]] = field(default_factory=dict)
    histograms: dict[str, dict[Labels, Histogram]] = field(default_factory=dict)

    def set(self, name: str, value: float, target: str = T, **labels: str) -> Page:
        self.samples.setdefault(name, {})[make_labels({"target": target, **labels}.items())] = value
        return self

    def add(self, name: str, value: float, target: str = T, **labels: str) -> Page:
        key = make_labels({"target": target, **labels}.items())
        family = self.samples.setdefault(name, {})
        family[key] = family.get(key, 0.0) + value
        return self

    def peers(
        self,
        healthy: float = 2,
        quarantined: float = 0,
        half_open: float = 0,
        *,
        synced: float | None = 1,
        age: float | None = 30,
        gv: str = GV,
        target: str = T,
    ) -> Page:
        for state, n in (("healthy", healthy), ("quarantined", quarantined), ("half_open", half_open)):
            self.set(PEERS, n, target, group_version=gv, state=state)
        if synced is not None:
            self.set(PEER_CACHE_SYNCED, synced, target, group_version=gv)
        if age is not None:
            self.set(PEER_LIST_AGE, age, target, group_version=gv)
        return self

    def requests(self, n: float, reason: str = "upstream", code: str = "200", gv: str = GV) -> Page:
        return self.add(REQUESTS, n, group_version=gv, verb="get", code=code, reason=reason)

    def dial_failures(self, n: float, reason: str) -> Page:
        return self.add(DIAL_FAILURES, n, reason=reason)

    def watches(self, n: float) -> Page:
        return self.set(ACTIVE_WATCHES, n)

    def observe(self, family: str, value: float, times: int = 1, bounds: tuple[float, ...] = ()) -> Page:
        """Add `times` observations of `value` to a histogram of this target."""
        bounds = bounds or (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
        key = make_labels([("target", T)])
        old = self.histograms.setdefault(family, {}).get(key)
        counts = {b.le: b.count for b in old.buckets} if old else dict.fromkeys((*bounds, math.inf), 0.0)
        buckets = tuple(Bucket(le, c + (times if value <= le else 0)) for le, c in sorted(counts.items()))
        total = (old.count if old else 0.0) + times
        self.histograms[family][key] = Histogram(buckets, total, (old.sum if old else 0.0) + value * times)
        return self

    def copy(self) -> Page:
        return copy.deepcopy(self)

    def snapshot(self) -> ProxySnapshot:
        return ProxySnapshot(samples=self.samples, histograms=self.histograms)


def window(before: Page, after: Page, seconds: float = 900) -> ProxyDelta:
    return delta(before.snapshot(), after.snapshot(), seconds)


# -- reading what diagnose() found ---------------------------------------------------------------------


def key(kind: str, gv: str | None = None, detail: str | None = None) -> str:
    return finding_key(kind, T, gv, detail)


def one(findings: list[Finding], k: str) -> Finding:
    found = [f for f in findings if f.key == k]
    assert len(found) == 1, f"{k} not in {[f.key for f in findings]}"
    return found[0]


def text(f: Finding) -> str:
    return " | ".join((f.title, *f.evidence, f.cause, f.next_step))


def moved(change: Callable[[Page], object], base: Page | None = None, seconds: float = 900) -> list[Finding]:
    """Diagnose a window in which `change` happened on top of `base` (healthy peers by default)."""
    before = base or Page().peers()
    after = before.copy()
    change(after)
    return diagnose(after.snapshot(), window(before, after, seconds))
