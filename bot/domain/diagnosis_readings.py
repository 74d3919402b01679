"""What the diagnosis of one target reads: live gauges, and counters over a window or since start.

Counters come from the window's increase when there is a window, else from the snapshot, where they
are totals since the proxy pod started; every finding built here records which one it used, and
findings about since-start totals are capped at INFO because they cannot say whether it is still going on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bot.domain.delta import ProxyDelta
from bot.domain.findings import Finding, Severity, finding_key
from bot.domain.quantile import P99, histogram_quantile
from bot.domain.snapshot import Bucket, Histogram, PeerCounts, ProxySnapshot, label

# Fewer observations than this make a p99 meaningless.
MIN_OBSERVATIONS = 10


def fmt_count(value: float) -> str:
    """A counter value as people write it: integers without a decimal point."""
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def fmt_times(value: float) -> str:
    """How often something happened: once, 2 times."""
    return "once" if value == 1 else f"{fmt_count(value)} times"


def fmt_duration(seconds: float) -> str:
    """A window length in the short form on-call people use: 90s, 15m, 2h, 1h30m."""
    if not math.isfinite(seconds):
        return f"{seconds} s"  # a broken gauge is shown as it is, not crashed on
    whole = round(seconds)
    if whole < 60 or (whole < 600 and whole % 60):
        return f"{whole}s"
    hours, minutes = divmod(whole // 60, 60)
    if hours == 0:
        return f"{minutes}m"
    return f"{hours}h{minutes}m" if minutes else f"{hours}h"


def fmt_seconds(seconds: float) -> str:
    """A latency: milliseconds below one second, seconds above."""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def describe_peers(peers: PeerCounts) -> str:
    return (
        f"peers: healthy {fmt_count(peers.healthy)}, quarantined {fmt_count(peers.quarantined)}, "
        f"half_open {fmt_count(peers.half_open)}"
    )


def histogram_minus(later: Histogram, earlier: Histogram) -> Histogram:
    """The observations in `later` that are not in `earlier` (same series, no reset in between)."""
    old = {b.le: b.count for b in earlier.buckets}
    buckets = tuple(Bucket(b.le, max(0.0, b.count - old.get(b.le, 0.0))) for b in later.buckets)
    return Histogram(buckets, max(0.0, later.count - earlier.count), later.sum - earlier.sum)


@dataclass(frozen=True)
class Readings:
    """The snapshot and the optional window, seen from one target."""

    snapshot: ProxySnapshot
    window: ProxyDelta | None
    target: str

    @property
    def window_seconds(self) -> float | None:
        return None if self.window is None else self.window.seconds

    @property
    def scope(self) -> str:
        """Where the counters in a finding come from, in words."""
        if self.window is None:
            return "since the proxy started"
        return f"in the last {fmt_duration(self.window.seconds)}"

    def counter(self, name: str, **match: str) -> float:
        """A counter's increase over the window, or its total since start; absent = zero."""
        source = self.snapshot if self.window is None else self.window.increase
        return source.value(name, target=self.target, **match)

    def counter_breakdown(self, name: str, by: str, **match: str) -> dict[str, float]:
        """A counter split by one label, positive entries only, largest first."""
        source = self.snapshot if self.window is None else self.window.increase
        found = source.breakdown(name, by, target=self.target, **match)
        return {k: v for k, v in found.items() if v > 0}

    def counter_by(self, name: str, first: str, second: str) -> dict[tuple[str, str], float]:
        """A counter split by two labels, positive entries only."""
        source = self.snapshot if self.window is None else self.window.increase
        out: dict[tuple[str, str], float] = {}
        for labels, v in source.series(name, target=self.target).items():
            key = (label(labels, first) or "", label(labels, second) or "")
            out[key] = out.get(key, 0.0) + v
        return {k: v for k, v in out.items() if v > 0}

    def gauge(self, name: str, **match: str) -> float:
        return self.snapshot.value(name, target=self.target, **match)

    def group_versions(self) -> list[str]:
        return self.snapshot.group_versions(self.target)

    def healthy_everywhere(self) -> bool:
        """Whether every group/version with a peer gauge has at least one healthy peer right now."""
        counts = [self.snapshot.peers(self.target, gv) for gv in self.group_versions()]
        known = [c for c in counts if c is not None]
        return bool(known) and all(c.healthy > 0 for c in known)

    def healthy_nowhere(self) -> bool:
        """Whether no group/version has a healthy peer right now (the churn alert's max-over-gv test)."""
        counts = [self.snapshot.peers(self.target, gv) for gv in self.group_versions()]
        known = [c for c in counts if c is not None]
        return bool(known) and all(c.healthy == 0 for c in known)

    def p99(self, histogram: Histogram | None) -> float | None:
        """The 99th percentile of a histogram (Prometheus' way), or None without enough observations."""
        if histogram is None or histogram.count < MIN_OBSERVATIONS:
            return None
        value = histogram_quantile(P99, histogram.buckets)
        return None if math.isnan(value) else value

    def for_counters(self, severity: Severity) -> Severity:
        """Since-start totals cannot say whether it is still happening: at most INFO."""
        return severity if self.window is not None else min(severity, Severity.INFO)

    def finding(
        self,
        severity: Severity,
        kind: str,
        *,
        title: str,
        evidence: Sequence[str],
        cause: str,
        next_step: str,
        guide_section: str,
        group_version: str | None = None,
        reason: str | None = None,
        alert: str | None = None,
    ) -> Finding:
        return Finding(
            severity=severity,
            kind=kind,
            key=finding_key(kind, self.target, group_version, reason),
            title=title,
            evidence=tuple(evidence),
            cause=cause,
            next_step=next_step,
            guide_section=guide_section,
            target=self.target,
            group_version=group_version,
            reason=reason,
            alert=alert,
            window_seconds=self.window_seconds,
        )
