"""The non-proxy families a real syncer page carries, so parsers meet realistic noise."""

from __future__ import annotations

import random

from sim.exposition import Family, HistogramFamily

_CONTROLLERS = ("pod-syncer", "service-syncer", "configmap-syncer", "secret-syncer", "resource-proxy")


class SyncerNoise:
    """Go runtime, process, controller-runtime and workqueue families that move with time."""

    def __init__(self, rng: random.Random, started_at: float) -> None:
        self.rng = rng
        self.started_at = started_at
        self.reconciles = Family(
            "controller_runtime_reconcile_total",
            "counter",
            "Total number of reconciliations per controller",
            ("controller", "result"),
        )
        self.reconcile_time = HistogramFamily(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ("controller",),
            (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
        )
        self.queue_adds = Family(
            "workqueue_adds_total", "counter", "Total number of adds handled by workqueue", ("name",)
        )
        self.queue_depth = Family("workqueue_depth", "gauge", "Current depth of workqueue", ("name",))

    def tick(self) -> None:
        """One simulated second of syncing work."""
        for controller in _CONTROLLERS:
            n = self.rng.randint(0, 3)
            if n:
                self.reconciles.inc((controller, "success"), n)
                self.queue_adds.inc((controller,), n)
                self.reconcile_time.observe((controller,), self.rng.expovariate(40.0))
            if self.rng.random() < 0.01:
                self.reconciles.inc((controller, "error"))
            self.queue_depth.set((controller,), self.rng.randint(0, 2))

    def render(self, now: float) -> list[str]:
        uptime = max(0.0, now - self.started_at)
        lines = [
            "# HELP go_goroutines Number of goroutines that currently exist.",
            "# TYPE go_goroutines gauge",
            f"go_goroutines {180 + self.rng.randint(0, 40)}",
            "# HELP go_memstats_alloc_bytes Number of bytes allocated and still in use.",
            "# TYPE go_memstats_alloc_bytes gauge",
            f"go_memstats_alloc_bytes {48_000_000 + self.rng.randint(0, 9_000_000)}",
            "# HELP go_info Information about the Go environment.",
            "# TYPE go_info gauge",
            'go_info{version="go1.24.4"} 1',
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.",
            "# TYPE process_cpu_seconds_total counter",
            f"process_cpu_seconds_total {uptime * 0.03:.2f}",
            "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
            "# TYPE process_start_time_seconds gauge",
            f"process_start_time_seconds {1.7e9 + self.started_at:.2f}",
            "# HELP process_resident_memory_bytes Resident memory size in bytes.",
            "# TYPE process_resident_memory_bytes gauge",
            f"process_resident_memory_bytes {140_000_000 + self.rng.randint(0, 5_000_000)}",
        ]
        for family in (self.reconciles, self.reconcile_time, self.queue_adds, self.queue_depth):
            lines.extend(family.render())
        return lines
