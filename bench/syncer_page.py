"""A realistic `/metrics/syncer` page: the proxy families among a syncer's controller-runtime noise.

The proxy's families carry the guide's labels, reasons and bucket layouts; the rest of the page is what a
vCluster syncer's controller-runtime registry exposes (reconcile and workqueue families per controller, Go
runtime, process, REST client), rendered the way client_golang renders them: HELP and TYPE per family, label
pairs sorted by name with `le`/`quantile` last, and numbers in Go's shortest `%g` form.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

# Buckets up to the 60 s non-watch deadline, and up to the 5 s dial timeout (the guide's bounds).
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10)
REQUEST_BUCKETS_TAIL = (15, 20, 30, 45, 60)
DIAL_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
RECONCILE_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1),
    *(1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60),
)
WORKQUEUE_BUCKETS = tuple(10.0**e for e in range(-8, 2))

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")
PROJECTS = ("default", "platform", "payments", "search", "ml-infra", "edge")
TARGET_NAMES = ("orders-db", "catalog", "ledger", "feature-store", "ingest", "billing", "auth", "reports")
GROUPS = ("example.com", "db.acme.io", "ml.acme.io", "queue.acme.io", "batch.example.com", "cache.acme.io")
VERSIONS = ("v1", "v1beta1", "v2", "v1alpha1")
# Failure reasons from the guide's table, with the HTTP code a caller sees for each.
FAILURES = (
    ("503", "no_peer"),
    ("503", "stale_peers"),
    ("503", "all_quarantined"),
    ("503", "timeout"),
    ("504", "deadline"),
    ("499", "canceled"),
    ("503", "peer_departed"),
    ("503", "ts_server_unavailable"),
    ("503", "error"),
    ("404", "ownership_masked"),
    ("503", "ownership_check_failed"),
    ("404", "namespace_missing"),
    ("501", "upgrade_rejected"),
)
DIAL_REASONS = ("no_peer", "stale_peers", "all_quarantined", "timeout", "deadline", "canceled", "error")
CONTROLLER_KINDS = (
    *("pod", "service", "configmap", "secret", "endpoints", "persistentvolumeclaim", "persistentvolume"),
    *("ingress", "serviceaccount", "networkpolicy", "poddisruptionbudget", "event", "node", "namespace"),
    *("priorityclass", "storageclass", "csinode", "csidriver", "csistoragecapacity", "volumesnapshot"),
    *("volumesnapshotclass", "volumesnapshotcontent", "ingressclass", "runtimeclass", "resourcequota"),
)


def build_page(targets: int = 10, group_versions: int = 5, total_lines: int = 20_000, seed: int = 0) -> str:
    """A page with the proxy families for `targets` x `group_versions`, padded to about `total_lines`."""
    rng = random.Random(seed)
    gvs = [
        f"{GROUPS[i % len(GROUPS)]}/{VERSIONS[i // len(GROUPS) % len(VERSIONS)]}"
        for i in range(group_versions)
    ]
    proxy = _proxy_families(rng, _target_names(targets), gvs)
    fixed = _runtime_families(rng)
    room = total_lines - len(proxy) - len(fixed)
    controllers = _controllers_filling(room)
    padding = _controller_families(rng, controllers)
    padding += _rest_client_families(rng, room - len(padding))
    return "\n".join([*padding[: len(padding) // 2], *proxy, *padding[len(padding) // 2 :], *fixed]) + "\n"


def _target_names(count: int) -> list[str]:
    return [
        f"{PROJECTS[i % len(PROJECTS)]}/{TARGET_NAMES[i % len(TARGET_NAMES)]}{'-' + str(i) if i >= 8 else ''}"
        for i in range(count)
    ]


def go_float(value: float) -> str:
    """`value` the way client_golang writes it (strconv 'g', shortest)."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    sign, digits, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = "".join(map(str, digits))
    point = len(mantissa) + exponent  # digits before the decimal point
    if point - 1 < -4 or point - 1 >= 21:
        text = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "") + f"e{point - 1:+03d}"
    elif point <= 0:
        text = "0." + "0" * -point + mantissa
    elif point >= len(mantissa):
        text = mantissa + "0" * (point - len(mantissa))
    else:
        text = mantissa[:point] + "." + mantissa[point:]
    return ("-" if sign else "") + text


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


@dataclass
class _Family:
    """One metric family being rendered."""

    name: str
    kind: str
    help: str
    lines: list[str] = field(default_factory=list)

    def add(
        self, suffix: str, labels: dict[str, str], value: float, last: tuple[str, str] | None = None
    ) -> None:
        pairs = [f'{k}="{_escape(v)}"' for k, v in sorted(labels.items())]
        if last is not None:
            pairs.append(f'{last[0]}="{last[1]}"')
        label_text = "{" + ",".join(pairs) + "}" if pairs else ""
        self.lines.append(f"{self.name}{suffix}{label_text} {go_float(value)}")

    def histogram(
        self, rng: random.Random, labels: dict[str, str], bounds: Sequence[float], scale: float
    ) -> None:
        """Cumulative buckets of `count` observations spread around `scale` seconds."""
        count = rng.randint(0, 50_000)
        observations = sorted(rng.expovariate(1 / scale) for _ in range(min(count, 200)))
        ratio = count / max(1, len(observations))
        for bound in bounds:
            below = sum(1 for o in observations if o <= bound)
            self.add("_bucket", labels, round(below * ratio), ("le", go_float(bound)))
        self.add("_bucket", labels, count, ("le", "+Inf"))
        self.add("_sum", labels, round(sum(observations) * ratio, 6))
        self.add("_count", labels, count)

    def render(self) -> list[str]:
        return [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}", *self.lines]


def _render(families: Iterable[_Family]) -> list[str]:
    return [line for f in families for line in f.render()]


def _proxy_families(rng: random.Random, targets: Sequence[str], gvs: Sequence[str]) -> list[str]:
    f = {
        name: _Family(f"vcluster_proxy_{name}", kind, help_text)
        for name, kind, help_text in (
            ("request_total", "counter", "Proxied requests by group/version, verb, code and outcome reason."),
            ("request_duration_seconds", "histogram", "Latency of non-watch proxied requests."),
            ("request_terminations_total", "counter", "Requests the proxy itself terminated."),
            ("inflight_requests", "gauge", "Non-watch requests currently being served."),
            ("discovery_fallbacks_total", "counter", "Discovery answered from the local fallback."),
            ("peers", "gauge", "Peers per state."),
            ("peer_cache_synced", "gauge", "Whether a current, trusted peer snapshot is held."),
            ("peer_list_age_seconds", "gauge", "Seconds since the last peer list was published."),
            ("peer_quarantines_total", "counter", "Endpoints quarantined after consecutive dial failures."),
            (
                "target_all_peers_quarantined_total",
                "counter",
                "Quarantines that left no selectable endpoint.",
            ),
            ("peer_recoveries_total", "counter", "Endpoints that recovered on a successful dial."),
            ("peer_dial_failures_total", "counter", "Failed dials by reason."),
            ("peer_dial_duration_seconds", "histogram", "Latency of attempted dials."),
            ("active_watches", "gauge", "Open watch streams."),
            ("watch_events_total", "counter", "Events on JSON and CBOR sequence watch streams."),
        )
    }
    for target in targets:
        _proxy_target(rng, f, target, gvs)
    return _render(f.values())


def _proxy_target(rng: random.Random, f: dict[str, _Family], target: str, gvs: Sequence[str]) -> None:
    t = {"target": target}
    for gv in gvs:
        for verb in VERBS:
            ok = "201" if verb == "create" else "200"
            f["request_total"].add(
                "",
                {**t, "group_version": gv, "verb": verb, "code": ok, "reason": "upstream"},
                rng.randint(1, 2_000_000),
            )
            for code, reason in rng.sample(FAILURES, rng.randint(0, 3)):
                labels = {**t, "group_version": gv, "verb": verb, "code": code, "reason": reason}
                f["request_total"].add("", labels, rng.randint(1, 500))
        for state in ("healthy", "quarantined", "half_open"):
            f["peers"].add("", {**t, "group_version": gv, "state": state}, rng.choice((0, 0, 1, 2, 3)))
        f["peer_cache_synced"].add("", {**t, "group_version": gv}, rng.choice((1, 1, 1, 0)))
        f["peer_list_age_seconds"].add("", {**t, "group_version": gv}, round(rng.uniform(0, 86_400), 3))
        if rng.random() < 0.3:
            f["discovery_fallbacks_total"].add("", {**t, "group_version": gv, "reason": "upstream_error"}, 3)
    for verb in VERBS:
        if verb != "watch":
            f["request_duration_seconds"].histogram(
                rng, {**t, "verb": verb}, REQUEST_BUCKETS + REQUEST_BUCKETS_TAIL, 0.05
            )
    f["peer_dial_duration_seconds"].histogram(rng, t, DIAL_BUCKETS, 0.02)
    for reason in rng.sample(DIAL_REASONS, 3):
        f["peer_dial_failures_total"].add("", {**t, "reason": reason}, rng.randint(1, 90))
    for reason in ("deadline", "upgrade_rejected"):
        f["request_terminations_total"].add("", {**t, "reason": reason}, rng.randint(1, 40))
    for name in ("peer_quarantines_total", "target_all_peers_quarantined_total", "peer_recoveries_total"):
        f[name].add("", t, rng.randint(1, 30))
    f["inflight_requests"].add("", t, rng.randint(0, 40))
    f["active_watches"].add("", t, rng.randint(0, 25))
    f["watch_events_total"].add("", t, rng.randint(0, 5_000_000))


def _controller_name(i: int) -> str:
    kind = CONTROLLER_KINDS[i % len(CONTROLLER_KINDS)]
    # Past the built-in kinds, the generic syncers of custom resources, as a busy syncer runs them.
    return kind if i < len(CONTROLLER_KINDS) else f"{kind}-crd-{i // len(CONTROLLER_KINDS)}"


def _controllers_filling(room: int) -> list[str]:
    """As many controllers as fit in `room` lines."""
    probe = random.Random(0)
    one = len(_controller_families(probe, ["a"]))
    per = len(_controller_families(probe, ["a", "b"])) - one
    count = max(1, (room - (one - per)) // per)
    return [_controller_name(i) for i in range(count)]


def _controller_families(rng: random.Random, controllers: Sequence[str]) -> list[str]:
    cr = "controller_runtime_"
    simple = [
        _Family(f"{cr}active_workers", "gauge", "Number of currently used workers per controller"),
        _Family(f"{cr}max_concurrent_reconciles", "gauge", "Maximum number of concurrent reconciles"),
        _Family(f"{cr}reconcile_errors_total", "counter", "Total number of reconciliation errors"),
        _Family(f"{cr}reconcile_panics_total", "counter", "Total number of reconciliation panics"),
        _Family(f"{cr}terminal_reconcile_errors_total", "counter", "Total number of terminal errors"),
    ]
    results = _Family(f"{cr}reconcile_total", "counter", "Total number of reconciliations per controller")
    time = _Family(f"{cr}reconcile_time_seconds", "histogram", "Length of time per reconciliation")
    queue = [
        _Family("workqueue_adds_total", "counter", "Total number of adds handled by workqueue"),
        _Family("workqueue_depth", "gauge", "Current depth of workqueue"),
        _Family("workqueue_longest_running_processor_seconds", "gauge", "Longest running processor"),
        _Family("workqueue_retries_total", "counter", "Total number of retries handled by workqueue"),
        _Family("workqueue_unfinished_work_seconds", "gauge", "Seconds of work in progress"),
    ]
    waits = [
        _Family("workqueue_queue_duration_seconds", "histogram", "How long an item stays in workqueue"),
        _Family("workqueue_work_duration_seconds", "histogram", "How long processing an item takes"),
    ]
    for c in controllers:
        for fam in simple:
            fam.add("", {"controller": c}, rng.randint(0, 20))
        for result in ("error", "requeue", "requeue_after", "success"):
            results.add("", {"controller": c, "result": result}, rng.randint(0, 100_000))
        time.histogram(rng, {"controller": c}, RECONCILE_BUCKETS, 0.01)
        for fam in queue:
            fam.add("", {"controller": c, "name": c}, rng.randint(0, 100_000))
        for fam in waits:
            fam.histogram(rng, {"controller": c, "name": c}, WORKQUEUE_BUCKETS, 0.001)
    return _render([*simple, results, time, *queue, *waits])


def _rest_client_families(rng: random.Random, lines: int) -> list[str]:
    """`lines` more lines (at least the two header lines) of the syncer's REST client counters."""
    fam = _Family(
        "rest_client_requests_total", "counter", "Number of HTTP requests, partitioned by status code"
    )
    for i in range(max(0, lines - 2)):
        host = f"10.96.{i // 200}.{i % 200}:443"
        fam.add("", {"code": "200", "host": host, "method": "GET"}, rng.randint(1, 10_000))
    return fam.render()


def _runtime_families(rng: random.Random) -> list[str]:
    """The Go runtime and process families every client_golang registry carries."""
    gc = _Family(
        "go_gc_duration_seconds", "summary", "A summary of the wall-time pause (stop-the-world) duration"
    )
    for q in ("0", "0.25", "0.5", "0.75", "1"):
        gc.add("", {}, round(rng.uniform(1e-5, 1e-3), 9), ("quantile", q))
    gc.add("_sum", {}, round(rng.uniform(0.1, 5), 6))
    gc.add("_count", {}, rng.randint(100, 10_000))
    info = _Family("go_info", "gauge", "Information about the Go environment.")
    info.add("", {"version": "go1.24.4"}, 1)
    families = [gc, info]
    gauges = (
        *("go_goroutines", "go_threads", "go_memstats_alloc_bytes", "go_memstats_buck_hash_sys_bytes"),
        *("go_memstats_gc_sys_bytes", "go_memstats_heap_alloc_bytes", "go_memstats_heap_idle_bytes"),
        *("go_memstats_heap_inuse_bytes", "go_memstats_heap_objects", "go_memstats_heap_released_bytes"),
        *("go_memstats_heap_sys_bytes", "go_memstats_last_gc_time_seconds", "go_memstats_mcache_inuse_bytes"),
        *("go_memstats_mspan_inuse_bytes", "go_memstats_next_gc_bytes", "go_memstats_stack_inuse_bytes"),
        *("go_memstats_sys_bytes", "process_max_fds", "process_open_fds", "process_resident_memory_bytes"),
        *("process_start_time_seconds", "process_virtual_memory_bytes", "leader_election_master_status"),
    )
    counters = (
        *("go_memstats_alloc_bytes_total", "go_memstats_frees_total", "go_memstats_mallocs_total"),
        *("process_cpu_seconds_total", "process_network_receive_bytes_total"),
        *("process_network_transmit_bytes_total", "certwatcher_read_certificate_total"),
    )
    for names, kind in ((gauges, "gauge"), (counters, "counter")):
        for name in names:
            fam = _Family(name, kind, name.replace("_", " ").capitalize() + ".")
            fam.add("", {}, round(rng.uniform(0, 5e8), rng.choice((0, 3))))
            families.append(fam)
    return _render(families)
