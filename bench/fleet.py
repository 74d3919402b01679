"""Benchmark: the fleet discovered from a vCluster Platform of 1 000 instances, beside the same typed in.

Run from the repository root: `.venv/bin/python bench/fleet.py [--instances N]` (default 1 000: 300 clients,
700 targets over 10 projects; each client forwards to 2 or 3 targets, two explicit `customResources` entries
a target, some in another project). A small strict stand-in of the platform's management API serves it over
HTTP in this process (a thread): `POST .../selves` and `GET .../virtualclusterinstances` with the bearer key,
401 without it, 404 elsewhere; the instances are shaped by `sim/platform_instances.py`'s `document`, and the
list's JSON is encoded once (the platform's cost is not the bot's).

Measured, in one run, after a warm-up at 10 instances (imports, pydantic's first validations):
- the baseline: the static config of the same 300 clients and their targets, written out as a hand-written
  `clusters:` would be, loaded with `config.loader.load_config`;
- the first discovery: `FleetReader.read()`, the Self, one list, the instances read, the clients derived,
  the platform's kubeconfig written; then the refreshes (`read()` again, the median of 3) and the calls each
  made to the platform;
- memory: what the loaded config and the discovered fleet keep (tracemalloc, after a collection) and the
  resident memory each reading rose by (its peak above the RSS before it, the list's JSON included), each
  in a process of its own warmed up alike (in one, the second would reuse what the first freed);
- matching an alert to its client, `Settings.with_fleet(fleet.clusters).cluster_for_alert(labels)`, per
  call at a tenth of the fleet and at the whole fleet, beside a dict lookup of the same labels.

Goals printed next to the figures: discovery <= 10 s; one list call per refresh; the discovery's RSS rise
within 50 MB of the static load's; matching stays a lookup (the whole fleet's time a call at most 3x the
tenth's, where a scan of every client would take about 10x). The last lines are `fleet_<goal>_ok: yes|no`;
the exit status is 0 when all hold.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# Run as a script, Python puts bench/ on the path, not the repository root that holds `bot` and `sim`.
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from bench.procstat import peak_rss_mb, reset_peak, rss_mb
from bot.fleet.derive import Fleet
from bot.fleet.reading import FleetReader
from config.loader import load_config
from config.settings import Settings
from sim.kube import objects
from sim.platform_instances import Instance, document

INSTANCES = 1000
CLIENT_SHARE = 0.3  # 300 clients and 700 targets of 1 000 instances
RESOURCES = ("widgets", "gadgets")  # two explicit entries a target
PROJECTS = 10
WARM_UP = 10
REFRESHES = 3
CONTROL_PLANE = "cp-1"
VERSION = "0.26.0"
CHANNEL = "#proxy-alerts"
KEY = "bench-access-key-0123456789abcdef"
MANAGEMENT = "/kubernetes/management/apis/management.loft.sh/v1"
SELVES = f"{MANAGEMENT}/selves"
LIST = f"{MANAGEMENT}/virtualclusterinstances"
CREATED = 1_700_000_000.0
MATCH_SECONDS = 0.3  # how long each matching measurement runs

DISCOVERY_GOAL_S = 10.0
RSS_GOAL_MB = 50.0
LOOKUP_GROWTH_GOAL = 3.0  # 10x the clients: at most 3x the time a call (a scan: about 10x)


# -- the fleet -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tenant:
    project: str
    name: str

    @property
    def ref(self) -> str:
        return f"{self.project}/{self.name}"

    @property
    def namespace(self) -> str:
        """Its control plane's namespace in the control plane cluster (vCluster's convention)."""
        return f"vcluster-{self.name}"


@dataclass(frozen=True)
class Client(Tenant):
    targets: tuple[Tenant, ...] = ()


@dataclass(frozen=True)
class BenchFleet:
    clients: tuple[Client, ...]
    targets: tuple[Tenant, ...]

    @property
    def size(self) -> int:
        return len(self.clients) + len(self.targets)


def build_fleet(instances: int) -> BenchFleet:
    """`instances` tenants, 30 % clients, over up to 10 projects (one per 100 instances). A target is behind
    one client (the settings refuse a target configured on two): target j is client j mod clients' (2 or 3
    a client of 300 and 700), in the client's project for its first target, in the next projects after."""
    clients_n = max(1, round(instances * CLIENT_SHARE))
    targets_n = max(1, instances - clients_n)
    projects = [f"team-{p:02d}" for p in range(max(1, min(PROJECTS, instances // 100)))]
    owned: list[list[Tenant]] = [[] for _ in range(clients_n)]
    for j in range(targets_n):
        client, nth = j % clients_n, j // clients_n
        owned[client].append(Tenant(projects[(client + nth) % len(projects)], f"target-{j:04d}"))
    clients = tuple(
        Client(projects[i % len(projects)], f"client-{i:04d}", tuple(owned[i])) for i in range(clients_n)
    )
    return BenchFleet(clients, tuple(t for ts in owned for t in ts))


def group_version(target: Tenant) -> str:
    """The API group a target serves its resources in: its own (one target per group/version)."""
    return f"{target.name}.{target.project}.bench.example.com/v1"


def client_values(client: Client) -> dict[str, Any]:
    entries: dict[str, Any] = {}
    for target in client.targets:
        named = {"name": target.name}
        if target.project != client.project:
            named["project"] = target.project
        for resource in RESOURCES:
            entries[f"{resource}.{group_version(target)}"] = {
                "enabled": True,
                "targetVirtualCluster": dict(named),
                "accessResources": "owned",
            }
    return {
        "controlPlane": {"statefulSet": {"resources": {}}},
        "experimental": {"proxy": {"customResources": entries}},
    }


def list_document(fleet: BenchFleet) -> dict[str, Any]:
    """The platform's `VirtualClusterInstanceList` of the fleet: clients inline, targets from a template."""
    target_values = yaml.safe_dump({"controlPlane": {"statefulSet": {"resources": {}}}})
    found = [
        Instance(c.project, c.name, None, yaml.safe_dump(client_values(c), sort_keys=False), VERSION, False)
        for c in fleet.clients
    ]
    found += [Instance(t.project, t.name, None, target_values, VERSION, True) for t in fleet.targets]
    items = []
    for version, instance in enumerate(found, start=1):
        item = document(instance, CREATED, version)
        item["spec"]["clusterRef"]["cluster"] = CONTROL_PLANE
        items.append(item)
    return {
        "apiVersion": "management.loft.sh/v1",
        "kind": "VirtualClusterInstanceList",
        "metadata": {"resourceVersion": str(len(items))},
        "items": items,
    }


def static_config(fleet: BenchFleet, kubeconfig: Path) -> dict[str, Any]:
    """The same clients as a hand-written `clusters:`: every field the discovery derives, typed in."""

    def control_plane(tenant: Tenant) -> dict[str, Any]:
        context = f"cluster/{CONTROL_PLANE}"
        return {
            "kubeconfig": str(kubeconfig),
            "context": context,
            "namespace": tenant.namespace,
            "release": tenant.name,
        }

    def target(t: Tenant) -> dict[str, Any]:
        gv = group_version(t)
        return {
            "name": t.ref,
            "group_versions": [gv],
            "probe": {"group_version": gv, "resource": RESOURCES[0], "namespace": "default"},
            "direct": {
                "kubeconfig": str(kubeconfig),
                "context": f"project/{t.project}/virtualcluster/{t.name}",
            },
            "control_plane": control_plane(t),
            "access_resources": "owned",
        }

    clusters = [
        {
            "name": c.name,
            "kubeconfig": str(kubeconfig),
            "context": f"project/{c.project}/virtualcluster/{c.name}",
            "match": {"namespace": c.namespace},
            "targets": [target(t) for t in c.targets],
            "control_plane": control_plane(c),
        }
        for c in fleet.clients
    ]
    return {"slack": {"default_channel": CHANNEL}, "clusters": clusters}


def write_kubeconfig(path: Path, url: str, key_file: Path, *fleets: BenchFleet) -> Path:
    """The hand-written fleet's kubeconfig: every context the static config names (the platform's paths)."""
    contexts = {f"cluster/{CONTROL_PLANE}"}
    for fleet in fleets:
        contexts |= {f"project/{t.project}/virtualcluster/{t.name}" for t in (*fleet.clients, *fleet.targets)}
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": c, "cluster": {"server": f"{url}/kubernetes/{c}"}} for c in sorted(contexts)],
        "users": [{"name": "platform", "user": {"tokenFile": str(key_file)}}],
        "contexts": [{"name": c, "context": {"cluster": c, "user": "platform"}} for c in sorted(contexts)],
    }
    return write_yaml(path, document)


def platform_config(url: str, key_file: Path) -> dict[str, Any]:
    return {"slack": {"default_channel": CHANNEL}, "platform": {"url": url, "access_key_file": str(key_file)}}


def alert_labels(client: Client) -> dict[str, str]:
    """An alert scraped from the client's control plane, as the guide's rules carry it."""
    target = client.targets[0]
    return {
        "alertname": "VclusterProxyTargetUnreachable",
        "namespace": client.namespace,
        "pod": f"{client.name}-0",
        "target": target.ref,
        "group_version": group_version(target),
        "severity": "warning",
    }


def target_labels(client: Client) -> dict[str, str]:
    """An alert of a rule that aggregates the scrape's labels away (the guide's DiscoveryDegraded)."""
    target = client.targets[-1]
    return {
        "alertname": "VclusterProxyDiscoveryDegraded",
        "target": target.ref,
        "group_version": group_version(target),
    }


# -- the platform's stand-in ---------------------------------------------------------------------------------


class StandIn:
    """The management API, strict: the bearer key or 401; `POST selves`, `GET` the list, else 404/405."""

    def __init__(self) -> None:
        self.body = b""
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                stand_in.answer(self, "GET")

            def do_POST(self) -> None:
                stand_in.answer(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, name="platform", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def serve(self, listed: Mapping[str, Any]) -> int:
        """Serve this list from now on; its size in bytes."""
        self.body = json.dumps(listed).encode()
        return len(self.body)

    def answer(self, request: BaseHTTPRequestHandler, method: str) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        sent = request.rfile.read(length) if length else b""
        path = request.path.split("?", 1)[0]
        with self._lock:
            self.calls[f"{method} {path}"] += 1
        if request.headers.get("Authorization") != f"Bearer {KEY}":
            return _reply(request, 401, objects.status(401, "Unauthorized"))
        if path == SELVES and method == "POST":
            asked = json.loads(sent or b"{}")
            if not isinstance(asked, dict) or asked.get("kind") != "Self":
                return _reply(request, 400, objects.status(400, "the body is not a Self"))
            status = {"subject": "proxybot", "projectNamespacePrefix": "p-"}
            return _reply(
                request, 201, {"apiVersion": "management.loft.sh/v1", "kind": "Self", "status": status}
            )
        if path == LIST and method == "GET":
            return _send(request, 200, self.body)
        if path in (SELVES, LIST):
            return _reply(request, 405, objects.status(405, f"{method} is not allowed here"))
        return _reply(request, 404, objects.status(404, "the page could not be found"))

    def counted(self) -> Counter[str]:
        with self._lock:
            return Counter(self.calls)

    def __enter__(self) -> StandIn:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


def _reply(request: BaseHTTPRequestHandler, code: int, body: Mapping[str, Any]) -> None:
    _send(request, code, json.dumps(body).encode())


def _send(request: BaseHTTPRequestHandler, code: int, body: bytes) -> None:
    request.send_response(code)
    request.send_header("Content-Type", "application/json")
    request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    request.wfile.write(body)


# -- measuring -----------------------------------------------------------------------------------------------


@dataclass
class Rise:
    """What a piece of work cost in resident memory, above what was resident before it."""

    peak_mb: float = 0.0  # the peak during it
    held_mb: float = 0.0  # still resident after it (what it keeps, plus what the allocator keeps)


@contextmanager
def rising() -> Iterator[Rise]:
    rise = Rise()
    gc.collect()
    before = rss_mb()
    reset_peak()
    yield rise
    rise.peak_mb = peak_rss_mb() - before
    gc.collect()
    rise.held_mb = rss_mb() - before


def retained_mb(make: Callable[[], object]) -> tuple[float, float, object]:
    """MB that what `make` returns keeps (traced, after a collection), its traced peak, and the thing."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        made = make()
        gc.collect()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return (current - before) / 1e6, (peak - before) / 1e6, made


def per_call_us(call: Callable[[Mapping[str, str]], object], labels: Sequence[Mapping[str, str]]) -> float:
    """Microseconds a call, cycling through the labels for about MATCH_SECONDS (best of 3 rounds)."""
    rounds: list[float] = []
    for _ in range(3):
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < MATCH_SECONDS / 3:
            for one in labels:
                call(one)
            calls += len(labels)
        rounds.append((time.perf_counter() - start) / calls * 1e6)
    return min(rounds)


@dataclass(frozen=True)
class Matching:
    clients: int
    settings_ms: float  # Settings.with_fleet, once a refresh
    match_us: float
    target_us: float  # an alert carrying only `target` (aggregated away the scrape's labels)
    dict_us: float
    wrong: int  # alerts matched to another client than theirs, or to none


def matching_at(settings: Settings, fleet: Fleet, bench: BenchFleet) -> Matching:
    start = time.perf_counter()
    over = settings.with_fleet(fleet.clusters)
    settings_ms = (time.perf_counter() - start) * 1e3
    labels = [alert_labels(c) for c in bench.clients]
    aggregated = [target_labels(c) for c in bench.clients]
    wrong = 0
    for client, one, other in zip(bench.clients, labels, aggregated, strict=True):
        for found in (over.cluster_for_alert(one), over.cluster_for_alert(other)):
            wrong += found is None or found.name != client.name
    by_namespace = {c.match.get("namespace"): c for c in over.clusters}
    return Matching(
        len(over.clusters),
        settings_ms,
        per_call_us(over.cluster_for_alert, labels),
        per_call_us(over.cluster_for_alert, aggregated),
        per_call_us(lambda one: by_namespace.get(one.get("namespace")), labels),
        wrong,
    )


@dataclass
class Figures:
    instances: int
    clients: int
    targets: int
    list_mb: float
    static_s: float
    first_s: float
    static: Rise  # each measured in a process of its own
    first: Rise
    refreshes: list[float]
    discovered: int
    sound: bool
    first_calls: Counter[str]
    refresh_calls: list[Counter[str]]
    static_retained_mb: float
    fleet_retained_mb: float
    fleet_traced_peak_mb: float
    small: Matching
    whole: Matching


def private(workdir: Path) -> Path:
    """A reader's private directory (its kubeconfig), one a reader."""
    return Path(tempfile.mkdtemp(prefix="private-", dir=workdir))


def write_yaml(path: Path, document: Mapping[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(dict(document), sort_keys=False))
    return path


async def discover(
    stand_in: StandIn, workdir: Path, bench: BenchFleet, static_path: Path
) -> tuple[Figures, Settings, Fleet]:
    key_file = workdir / "access-key"
    config = write_yaml(workdir / "platform.yaml", platform_config(stand_in.url, key_file))
    settings = load_config(config, env={}).settings
    listed = list_document(bench)
    list_bytes = stand_in.serve(listed)
    del listed

    gc.collect()
    start = time.perf_counter()
    loaded = load_config(static_path, env={})
    static_s = time.perf_counter() - start
    assert len(loaded.settings.clusters) == len(bench.clients)

    reader = FleetReader(settings, directory=private(workdir))
    try:
        calls = stand_in.counted()
        gc.collect()
        start = time.perf_counter()
        fleet = await reader.read()
        first_s = time.perf_counter() - start
        first_calls = stand_in.counted() - calls
        refreshes: list[float] = []
        refresh_calls: list[Counter[str]] = []
        for _ in range(REFRESHES):
            calls = stand_in.counted()
            gc.collect()
            start = time.perf_counter()
            await reader.read()
            refreshes.append(time.perf_counter() - start)
            refresh_calls.append(stand_in.counted() - calls)
        static_retained, _, kept = retained_mb(lambda: load_config(static_path, env={}))
        del kept
        # A refresh's fleet as it is kept (the previous one dropped as it is replaced); the traced peak is
        # the reading's whole working set: the list's JSON, the instances, the pydantic models.
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            again = await reader.read()
            gc.collect()
            current, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        del again
    finally:
        await reader.aclose()
    figures = Figures(
        instances=bench.size,
        clients=len(bench.clients),
        targets=len(bench.targets),
        list_mb=list_bytes / 1e6,
        static_s=static_s,
        first_s=first_s,
        static=Rise(),
        first=Rise(),
        refreshes=refreshes,
        discovered=len(fleet.clusters),
        sound=fleet.sound,
        first_calls=first_calls,
        refresh_calls=refresh_calls,
        static_retained_mb=static_retained,
        fleet_retained_mb=(current - before) / 1e6,
        fleet_traced_peak_mb=(peak - before) / 1e6,
        small=Matching(0, 0, 0, 0, 0, 0),
        whole=Matching(0, 0, 0, 0, 0, 0),
    )
    del loaded
    return figures, settings, fleet


async def derived(settings: Settings, bench: BenchFleet, directory: Path) -> Fleet:
    """The fleet of a list, derived as a reading derives it (no platform call: matching is what is timed)."""
    reader = FleetReader(settings, directory=directory)
    try:
        return reader.derive("p-", list_document(bench))
    finally:
        await reader.aclose()


async def measure(instances: int, workdir: Path) -> Figures:
    with StandIn() as stand_in:
        warm, bench = build_fleet(WARM_UP), build_fleet(instances)
        key_file = workdir / "access-key"
        key_file.write_text(KEY + "\n")
        kubeconfig = write_kubeconfig(workdir / "kubeconfig", stand_in.url, key_file, warm, bench)
        warm_static = write_yaml(workdir / "warm.yaml", static_config(warm, kubeconfig))
        (workdir / "warm-list.json").write_text(json.dumps(list_document(warm)))
        await discover(stand_in, workdir, warm, warm_static)
        static_path = write_yaml(workdir / "static.yaml", static_config(bench, kubeconfig))
        figures, settings, fleet = await discover(stand_in, workdir, bench, static_path)
        # Resident memory in processes of their own, alike up to the reading: in this one, each would reuse
        # what the other freed.
        figures.static = await asyncio.to_thread(rss_in_child, "static", workdir)
        figures.first = await asyncio.to_thread(rss_in_child, "discovery", workdir)
    tenth = build_fleet(max(WARM_UP, instances // 10))
    figures.small = matching_at(settings, await derived(settings, tenth, private(workdir)), tenth)
    figures.whole = matching_at(settings, fleet, bench)
    return figures


def rss_in_child(mode: str, workdir: Path) -> Rise:
    done = subprocess.run(
        [sys.executable, __file__, "--rss-of", mode, "--workdir", str(workdir)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return Rise(**json.loads(done.stdout.strip().splitlines()[-1]))


async def child(mode: str, workdir: Path) -> Rise:
    """In a fresh process: the warm-up of either mode (the static and the platform settings loaded, a small
    list derived), then the static load or the first discovery, its result held while RSS is read."""
    settings = load_config(workdir / "platform.yaml", env={}).settings
    load_config(workdir / "warm.yaml", env={})
    reader = FleetReader(settings, directory=private(workdir))
    try:
        reader.derive("p-", json.loads((workdir / "warm-list.json").read_text()))
        with rising() as rise:
            if mode == "static":
                held: object = load_config(workdir / "static.yaml", env={})
            else:
                held = await reader.read()
        del held
    finally:
        await reader.aclose()
    return rise


# -- the report ----------------------------------------------------------------------------------------------


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


def report(f: Figures) -> bool:
    refresh = statistics.median(f.refreshes)
    lists = [c[f"GET {LIST}"] for c in (f.first_calls, *f.refresh_calls)]
    selves = [c[f"POST {SELVES}"] for c in (f.first_calls, *f.refresh_calls)]
    others = [
        sum(c.values()) - n - s
        for c, n, s in zip((f.first_calls, *f.refresh_calls), lists, selves, strict=True)
    ]
    rss_gap = f.first.peak_mb - f.static.peak_mb
    growth = f.whole.match_us / f.small.match_us if f.small.match_us else float("inf")
    target_growth = f.whole.target_us / f.small.target_us if f.small.target_us else float("inf")
    dict_growth = f.whole.dict_us / f.small.dict_us if f.small.dict_us else float("inf")
    size = f"{f.instances} instances ({f.clients} clients, {f.targets} targets)"
    print(f"== fleet: {size}, the list {f.list_mb:.2f} MB of JSON")
    print(f"clients discovered: {f.discovered} of {f.clients}; fleet sound: {f.sound}")
    print(f"static_load_s: {f.static_s:.3f}  (the baseline: load_config of the same clients, typed in)")
    print(f"first_discovery_s: {f.first_s:.3f}  (goal <= {DISCOVERY_GOAL_S:g} s)")
    print(f"discovery_vs_static: {ratio(f.first_s, f.static_s)}")
    each = ", ".join(f"{r:.3f}" for r in f.refreshes)
    print(f"refresh_s: {refresh:.3f}  (median of {len(f.refreshes)}: {each})")
    print(f"refresh_vs_first: {ratio(refresh, f.first_s)}")
    print(f"list_calls: first {lists[0]}, refreshes {' '.join(map(str, lists[1:]))}  (goal: 1 a refresh)")
    print(f"self_calls: first {selves[0]}, refreshes {' '.join(map(str, selves[1:]))}")
    print(f"other_calls: {sum(others)}")
    print(f"static_retained_MB: {f.static_retained_mb:.2f}  (tracemalloc: the loaded config)")
    print(f"fleet_retained_MB: {f.fleet_retained_mb:.2f}  (tracemalloc: the fleet a refresh keeps)")
    print(f"fleet_vs_static_retained: {ratio(f.fleet_retained_mb, f.static_retained_mb)}")
    print(f"fleet_traced_peak_MB: {f.fleet_traced_peak_mb:.2f}  (tracemalloc: a reading's working set)")
    print(f"static_rss_rise_MB: peak {f.static.peak_mb:.1f}, held {f.static.held_mb:.1f}  (own process)")
    print(f"discovery_rss_rise_MB: peak {f.first.peak_mb:.1f}, held {f.first.held_mb:.1f}  (own process)")
    print(f"rss_rise_vs_static_MB: {rss_gap:+.1f}  (goal <= {RSS_GOAL_MB:g} MB)")
    print("matching an alert to its client: Settings.with_fleet(fleet.clusters).cluster_for_alert(labels)")
    print("  clients  with_fleet_ms  match_us  target_only_us  dict_us  match_vs_dict  wrong")
    for m in (f.small, f.whole):
        print(
            f"  {m.clients:7d}  {m.settings_ms:13.2f}  {m.match_us:8.2f}  {m.target_us:14.2f}  "
            f"{m.dict_us:7.3f}  {ratio(m.match_us, m.dict_us):>13}  {m.wrong:5d}"
        )
    more = ratio(f.whole.clients, f.small.clients)
    also = f"target only: {target_growth:.2f}x; dict: {dict_growth:.2f}x"
    print(f"match_growth: {growth:.2f}x for {more} the clients ({also})")
    print(f"  (goal <= {LOOKUP_GROWTH_GOAL:g}x: a lookup; a scan of every client grows with them)")
    goals = {
        "discovery": f.first_s <= DISCOVERY_GOAL_S and f.discovered == f.clients and f.sound,
        "one_list": all(n == 1 for n in lists) and not any(others),
        "rss": rss_gap <= RSS_GOAL_MB,
        "lookup": growth <= LOOKUP_GROWTH_GOAL and not f.small.wrong and not f.whole.wrong,
    }
    for goal, ok in goals.items():
        print(f"fleet_{goal}_ok: {'yes' if ok else 'no'}")
    return all(goals.values())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--instances", type=int, default=INSTANCES, help=f"the platform's size (default {INSTANCES})"
    )
    # A child process measuring one reading's resident memory (see `child`).
    parser.add_argument("--rss-of", choices=("static", "discovery"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_of is not None:
        rise = asyncio.run(child(args.rss_of, args.workdir))
        print(json.dumps({"peak_mb": rise.peak_mb, "held_mb": rise.held_mb}))
        return 0
    if args.instances < WARM_UP:
        parser.error(f"--instances: at least {WARM_UP}")
    with tempfile.TemporaryDirectory(prefix="proxybot-bench-fleet-") as workdir:
        figures = asyncio.run(measure(args.instances, Path(workdir)))
    return 0 if report(figures) else 1


if __name__ == "__main__":
    sys.exit(main())
