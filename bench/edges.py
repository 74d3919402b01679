"""Benchmark: the edges around the alert path, each figure beside a baseline measured in the same run.

Run from the repository root: `.venv/bin/python bench/edges.py [--only PART] [--runs N]` (`--pattern P`
runs only those of the storm part). Parts:

- cli: `proxybot --version`, `--help`, `check-config` on the example config and `status TARGET --json`
  against the simulator, in a fresh process each, beside a bare `python -c pass` (and, as references when
  installed, `amtool --version` and `kubectl version --client`). Holds when `--version` and `--help` take
  at most 0.25 s beyond the baseline, `check-config` at most 0.6 s and `status` at most 1.2 s.
- serve: `proxybot serve` from its process start to `/healthz` 200 (the baseline) and to `/readyz` 200, on
  SQLite and on PostgreSQL (a fresh database each run: its migrations included), then again with one CPU
  kept busy by a spinning process (a node under load). Holds at `/readyz` <= 3 s.
- failover: two replicas on PostgreSQL, a webhook every 0.25 s to the one that is not the leader, the
  leader kill -9'd: seconds from the kill to the survivor's first Slack post, beside a webhook's post while
  the leader lives (the baseline) and the lease's bound (`bot.lease.LeaseTimings.takeover`). Holds <= 12 s.
- storm: 1 000 alerts over 500 targets as one Alertmanager batch (a real Alertmanager 0.25, group_wait 2 s),
  as a 2 s trickle and as a 20 s trickle of webhooks: seconds from the last webhook accepted to the storm
  whole in Slack (the summary counting every alert, every target named in what Slack shows) and the
  posting calls by then (bench/storm.py's: posts, edits, the three upload steps, deletes); the batch is the
  baseline of the trickles. Holds when each is whole <= 5 s after its last webhook in <= 8 posting calls.
- fleet: 10 000 alerts over 5 000 targets, 10 000 webhooks in 5 s: the same figures, the alerts processed
  per second, the p99 accept, serve's peak RSS and the CPU it spent per alert (what bounds the rate: one
  interpreter lock), beside the 2 s trickle's (the baseline). Holds when
  whole <= 6 s after the last webhook, >= 2 000 alerts/s, p99 accept <= 20 ms, RSS <= 250 MB, <= 8 calls.

Each figure is the median of `--runs` runs (default 3; the storms and the fleet, which take a minute
each, 1 unless `--storm-runs`). The fake Slack paces posts as Slack does (1 a second per channel). The
last line of each part is `edges_<part>_ok: yes|no`; the exit status is 0 when every part asked holds.

(Like bench/storm.py, this borrows the e2e suite's stack: tests/e2e/stack.py, storm_load.py, replicas.py.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

# Run as a script, Python puts bench/ on the path, not the repository root that holds `bot` and `tests`.
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from bench.loadgen import LoadRun
from bench.procstat import cpu_seconds, peak_rss_mb
from bench.scale_storm import storm_count
from bench.storm_am import ROUTE
from bot.lease import LeaseTimings
from config.settings import StoreSettings
from sim.postgres import PostgresServer, start_postgres
from sim.server import SimServer
from sim.slack_api import FakeSlack, SlackCall
from tests.e2e.replicas import PgStoreView, Replicas, replica_config
from tests.e2e.stack import (
    BOT_TOKEN,
    CHANNEL,
    TARGET,
    WEBHOOK_TOKEN,
    BotProcess,
    StoreView,
    alert_entry,
    auth,
    messages_about,
    notification,
    now,
    proxy_alert,
    proxybot_command,
    write_bot_config,
)
from tests.e2e.storm_load import (
    SlackCoverage,
    by_method,
    posting_calls,
    split,
    storm_alerts,
    storm_bodies,
    storm_plan,
    storm_target,
)
from tests.harness.alertmanager import Alertmanager

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_CONFIG = ROOT / "config" / "proxybot.example.yaml"
PARTS = ("cli", "serve", "failover", "storm", "fleet")
# The bars (issue 25; PRODUCT.md's quality bars).
CLI_OVER_BASELINE = 0.25  # --version, --help: beyond `python -c pass`
CHECK_CONFIG_S = 0.6
STATUS_S = 1.2
READY_S = 3.0
FAILOVER_S = 12.0
STORM_WHOLE_S = 5.0
FLEET_WHOLE_S = 6.0
POSTING_CALLS = 8
FLEET_RATE = 2000.0  # alerts a second
FLEET_P99_MS = 20.0
FLEET_RSS_MB = 250.0
STORM_TARGETS, FLEET_TARGETS = 500, 5000
FLEET_SECONDS = 5.0
WHOLE_TIMEOUT = 90.0
PROCESSING_TIMEOUT = 300.0
FEED_EVERY = 0.25  # the failover's webhooks, one per new group


def median(values: Sequence[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return statistics.median(found) if found and len(found) == len(values) else None


def cell(value: float | None, digits: int = 2) -> str:
    return "never" if value is None else f"{value:.{digits}f}"


def table(heads: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    for line in (heads, *rows):
        print("  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)))


def verdict(part: str, ok: bool) -> bool:
    print(f"edges_{part}_ok: {'yes' if ok else 'no'}", flush=True)
    return ok


def within(value: float | None, bar: float) -> bool:
    return value is not None and value <= bar


def wait_for(check: Callable[[], object], timeout: float, interval: float = 0.05) -> bool:
    """Poll `check()` until true or `timeout` s; whether it came true (the figures say what did not)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval)
    return False


# -- cli -----------------------------------------------------------------------------------------------------


def clean_env() -> dict[str, str]:
    """The operator's environment, without the PROXYBOT_* overrides of whoever runs the benchmark."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PROXYBOT_")}


def timed(argv: Sequence[str]) -> tuple[float, int]:
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, env=clean_env(), capture_output=True, timeout=60, check=False)
    return time.monotonic() - started, done.returncode


@dataclass(frozen=True)
class Command:
    name: str
    argv: list[str]
    bar: float | None  # seconds; None: a reference, no bar
    over_baseline: bool = False  # the bar is beyond `python -c pass`


def cli_commands(sim_config: Path) -> list[Command]:
    proxybot = proxybot_command()
    commands = [
        Command("python -c pass (baseline)", [sys.executable, "-c", "pass"], None),
        Command("proxybot --version", [*proxybot, "--version"], CLI_OVER_BASELINE, over_baseline=True),
        Command("proxybot --help", [*proxybot, "--help"], CLI_OVER_BASELINE, over_baseline=True),
        Command(
            "proxybot check-config (example)",
            [*proxybot, "check-config", "--config", str(EXAMPLE_CONFIG)],
            CHECK_CONFIG_S,
        ),
        Command(
            "proxybot status TARGET --json",
            [*proxybot, "status", TARGET, "--json", "--config", str(sim_config)],
            STATUS_S,
        ),
    ]
    for name, argv in (
        ("amtool --version", ["amtool", "--version"]),
        ("kubectl version --client", ["kubectl", "version", "--client"]),
    ):
        if shutil.which(argv[0]):
            commands.append(Command(f"{name} (reference)", argv, None))
        else:
            print(f"   {argv[0]} is not installed: no reference")
    return commands


def cli_part(runs: int, workdir: Path) -> bool:
    print(f"== cli: each command in a fresh process, median of {runs}")
    with SimServer(scenario="healthy") as sim:
        config = sim.write_config(workdir / "sim-proxybot.yaml")
        commands = cli_commands(config)
        timings: dict[str, list[float]] = {c.name: [] for c in commands}
        codes: dict[str, set[int]] = {c.name: set() for c in commands}
        for _ in range(runs):
            for command in commands:  # interleaved: a load change hits every command alike
                seconds, code = timed(command.argv)
                timings[command.name].append(seconds)
                codes[command.name].add(code)
    base = statistics.median(timings[commands[0].name])
    rows, ok = [], True
    for command in commands:
        seconds = statistics.median(timings[command.name])
        judged = seconds - base if command.over_baseline else seconds
        holds = command.bar is None or judged <= command.bar
        ok = ok and holds
        bar = (
            ""
            if command.bar is None
            else f"<= {command.bar:g}{' over baseline' if command.over_baseline else ''}"
        )
        exits = ",".join(str(c) for c in sorted(codes[command.name]))
        rows.append(
            [command.name, cell(seconds, 3), cell(seconds - base, 3), exits, bar, "yes" if holds else "no"]
        )
    table(["command", "median_s", "over_baseline_s", "exit", "bar_s", "ok"], rows)
    return verdict("cli", ok)


# -- serve ---------------------------------------------------------------------------------------------------


def answered(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1.0).status_code == httpx.codes.OK
    except httpx.TransportError:
        return False


def start_to_ready(config: Path, workdir: Path, n: int) -> tuple[float, float | None]:
    """Seconds from `proxybot serve`'s start to `/healthz` 200 and to `/readyz` 200 (None: not in 30 s)."""
    bot = BotProcess(config, workdir / f"serve-{n}.log", command=proxybot_command())
    started = time.monotonic()
    with bot:  # started: /healthz answered 200
        healthy = time.monotonic() - started
        ready = wait_for(lambda: answered(f"{bot.url}/readyz"), 30.0, interval=0.01)
        return healthy, (time.monotonic() - started) if ready else None


@contextmanager
def busy_cpu(busy: bool) -> Iterator[None]:
    """With `busy`, one process spinning on a CPU meanwhile (a node whose other pods are busy)."""
    if not busy:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait(timeout=10)


def serve_part(runs: int, workdir: Path) -> bool:
    print(f"== serve: process start -> /healthz 200 (baseline) and -> /readyz 200, median of {runs}")
    rows, ok = [], True
    with (
        SimServer(scenario="healthy") as sim,
        FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack,
        start_postgres() as postgres,
    ):
        for store, busy in (("sqlite", False), ("postgresql", False), ("sqlite", True), ("postgresql", True)):
            figures = []
            for n in range(runs):
                where = workdir / f"serve-{store}-{'busy-' if busy else ''}{n}"
                where.mkdir()
                config = write_bot_config(sim, where, slack.api_url)
                if store == "postgresql":
                    url = asyncio.run(postgres.new_database())  # a fresh one: its migrations run at start
                    config = replica_config(sim, where, slack.api_url, url)
                with busy_cpu(busy):
                    figures.append(start_to_ready(config, where, n))
            healthy, ready = median([h for h, _ in figures]), median([r for _, r in figures])
            holds = within(ready, READY_S)
            ok = ok and holds
            name = f"{store}, a CPU busy" if busy else store
            rows.append([name, cell(healthy), cell(ready), f"<= {READY_S:g}", "yes" if holds else "no"])
    table(["store", "healthz_s", "readyz_s", "bar_s", "ok"], rows)
    return verdict("serve", ok)


# -- failover ------------------------------------------------------------------------------------------------


def send(bot: BotProcess, target: str) -> None:
    body = json.dumps(notification([alert_entry(proxy_alert(target=target), now() - timedelta(minutes=2))]))
    headers = {**auth(), "Content-Type": "application/json"}
    httpx.post(f"{bot.url}/alertmanager", content=body, headers=headers, timeout=10.0).raise_for_status()


def posts_since(slack: FakeSlack, since: float) -> list[SlackCall]:
    return [
        c
        for c in list(slack.calls)
        if c.method == "chat.postMessage" and not c.params.get("thread_ts") and c.at > since
    ]


@contextmanager
def feeding(bot: BotProcess, prefix: str) -> Iterator[None]:
    """A new alert group every FEED_EVERY s to `bot` (as Alertmanager reaching the pod that lives)."""
    stop = threading.Event()

    def feed() -> None:
        n = 0
        while not stop.wait(FEED_EVERY):
            n += 1
            try:
                send(bot, f"platform/{prefix}-{n:03d}")
            except httpx.HTTPError:
                continue

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=15)


def failover_once(
    sim: SimServer, postgres: PostgresServer, workdir: Path, n: int
) -> tuple[float | None, float | None]:
    """(a webhook's post while the leader lives, the kill -9 to the survivor's first post), in seconds."""
    where = workdir / f"failover-{n}"
    where.mkdir()
    with FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack:
        slack.limit_posts()
        url = asyncio.run(postgres.new_database())
        config = replica_config(sim, where, slack.api_url, url, storm={"groups": 1000})
        replicas = Replicas(config, where, PgStoreView(url))
        try:
            replicas.start()
            leader = replicas.leader()
            [survivor] = replicas.others(leader)
            sent = time.monotonic()
            send(survivor, f"platform/steady-{n}")
            steady = (
                time.monotonic() - sent
                if wait_for(lambda: messages_about(slack, f"platform/steady-{n}"), 30.0)
                else None
            )
            fed = time.monotonic()
            with feeding(survivor, f"feed-{n}"):
                wait_for(lambda: posts_since(slack, fed), 30.0)  # the leader is posting what arrives
                leader.kill()
                killed = time.monotonic()
                # Nothing the dead leader sent reaches Slack this long after SIGKILL: the later posts are
                # the survivor's.
                took = wait_for(lambda: posts_since(slack, killed + 0.05), 60.0, interval=0.02)
                first = posts_since(slack, killed + 0.05)
                return steady, (first[0].at - killed) if took and first else None
        finally:
            replicas.close()


def failover_part(runs: int, workdir: Path) -> bool:
    lease = LeaseTimings(StoreSettings().lease_seconds)
    print(
        f"== failover: 2 replicas on PostgreSQL, a webhook every {FEED_EVERY:g} s, the leader kill -9'd; "
        f"median of {runs}"
    )
    print(
        f"lease: TTL {lease.ttl:g} s (store.lease_seconds), standbys ask every {lease.retry_every:g} s, "
        f"renewed below {lease.renew_below:g} s left: a dead leader's lease passes on within "
        f"{lease.takeover:g} s"
    )
    figures = []
    with SimServer(scenario="healthy") as sim, start_postgres() as postgres:
        for n in range(runs):
            figures.append(failover_once(sim, postgres, workdir, n))
            print(
                f"   run {n + 1}: steady {cell(figures[-1][0])} s, failover {cell(figures[-1][1])} s",
                flush=True,
            )
    steady, failover = median([s for s, _ in figures]), median([f for _, f in figures])
    holds = within(failover, FAILOVER_S)
    table(
        ["figure", "median_s", "bar_s", "ok"],
        [
            ["webhook -> its post, leader alive (baseline)", cell(steady), "", ""],
            ["lease bound: TTL + one retry", cell(lease.takeover), "", ""],
            [
                "kill -9 -> survivor's first post",
                cell(failover),
                f"<= {FAILOVER_S:g}",
                "yes" if holds else "no",
            ],
        ],
    )
    return verdict("failover", holds)


# -- storm and fleet -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StormRun:
    """One storm: when its last webhook was accepted, when it was whole in Slack, and what it cost."""

    pattern: str
    alerts: int
    webhooks: int
    lost: int
    p99_accept_ms: float | None
    processed_after_first: float | None  # s from the first webhook accepted to every notification processed
    whole_after_last: float | None  # s from the last webhook accepted to the storm whole in Slack
    posting_calls: int  # by the time it was whole (all of them when it never was)
    calls_by_method: str
    peak_rss_mb: float
    serve_cpu: float  # CPU seconds serve used from before the first webhook to the last processed

    @property
    def rate(self) -> float | None:
        return None if not self.processed_after_first else self.alerts / self.processed_after_first

    @property
    def cpu_ms_per_alert(self) -> float:
        """What bounds the rate: serve's interpreter runs one thread at a time (1 000 / this, per second)."""
        return 1000 * self.serve_cpu / self.alerts


class Clocks:
    """The store's wall-clock times on the fake Slack's monotonic clock."""

    def __init__(self) -> None:
        self.offset = time.time() - time.monotonic()

    def monotonic(self, wall: float) -> float:
        return wall - self.offset


def whole_at(slack: FakeSlack, coverage: SlackCoverage, alerts: int) -> float | None:
    """When the storm was whole in Slack: its summary counted every alert and every target was named."""
    counted = next((c.at for c in list(slack.calls) if storm_count(c) == alerts), None)
    if counted is None or coverage.covered_at is None:
        return None
    return max(counted, coverage.covered_at)


def measure(
    pattern: str, send: Callable[[BotProcess], list[float]], targets: int, sim: SimServer, workdir: Path
) -> StormRun:
    """A fresh bot on SQLite and a fresh paced fake Slack; `send` delivers the storm (the webhook latencies
    when it sends them itself)."""
    workdir.mkdir(parents=True)
    alerts = 2 * targets
    with FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack:
        slack.limit_posts()
        coverage = SlackCoverage(slack, (storm_target(i) for i in range(targets)))
        with BotProcess(write_bot_config(sim, workdir, slack.api_url), workdir / "bot.log") as bot:
            assert bot.pid is not None
            store, clocks = StoreView(workdir / "bot.db"), Clocks()
            cpu_before = cpu_seconds(bot.pid)
            latencies = send(bot)
            wait_for(
                lambda: store.notifications() >= targets and store.unprocessed() == 0, PROCESSING_TIMEOUT, 0.1
            )
            processed, cpu = time.time(), cpu_seconds(bot.pid) - cpu_before
            first, last = store.first_received_at(), store.last_received_at()
            wait_for(lambda: whole_at(slack, coverage, alerts) is not None, WHOLE_TIMEOUT, 0.1)
            whole = whole_at(slack, coverage, alerts)
            calls = posting_calls(list(slack.calls), whole)
            lost = (2 * targets if pattern != "alertmanager" else targets) - store.notifications()
            rss = peak_rss_mb(bot.pid)
    last_at = None if last is None else clocks.monotonic(last)
    return StormRun(
        pattern=pattern,
        alerts=alerts,
        webhooks=store_count(workdir / "bot.db"),
        lost=max(0, lost),
        p99_accept_ms=1000 * sorted(latencies)[int(0.99 * (len(latencies) - 1))] if latencies else None,
        processed_after_first=None if first is None else processed - first,
        whole_after_last=None if whole is None or last_at is None else whole - last_at,
        posting_calls=len(calls),
        calls_by_method=by_method(calls),
        peak_rss_mb=rss,
        serve_cpu=cpu,
    )


def store_count(db: Path) -> int:
    return StoreView(db).notifications()


def via_alertmanager(targets: int, workdir: Path) -> Callable[[BotProcess], list[float]]:
    def send(bot: BotProcess) -> list[float]:
        (workdir / "alertmanager").mkdir(parents=True, exist_ok=True)
        am = Alertmanager(workdir / "alertmanager", f"{bot.url}/alertmanager", WEBHOOK_TOKEN, route=ROUTE)
        with am:
            am.post_alerts(storm_alerts(targets))
            # Alertmanager sends one notification per group after its group_wait: wait for them all here,
            # while it runs.
            wait_for(lambda: StoreView(workdir / "storm" / "bot.db").notifications() >= targets, 60.0, 0.1)
        return []

    return send


def as_webhooks(targets: int, seconds: float) -> Callable[[BotProcess], list[float]]:
    def send(bot: BotProcess) -> list[float]:
        plan = storm_plan(bot.url, storm_bodies(targets), seconds=seconds, probe_path=None, timeout=60.0)
        with LoadRun(plan) as load:
            load.started()
            webhooks, _ = split(load.outcomes())
        return [w.seconds for w in webhooks if 200 <= w.status < 300] + [
            float("inf") for w in webhooks if not 200 <= w.status < 300
        ]

    return send


def storm_run(pattern: str, targets: int, sim: SimServer, workdir: Path) -> StormRun:
    if pattern == "alertmanager":
        return measure(pattern, via_alertmanager(targets, workdir), targets, sim, workdir / "storm")
    seconds = {"trickle-2s": 2.0, "trickle-20s": 20.0, "fleet": FLEET_SECONDS}[pattern]
    return measure(pattern, as_webhooks(targets, seconds), targets, sim, workdir / "storm")


def median_run(runs: Sequence[StormRun]) -> StormRun:
    """The run whose time to whole is the median (a never counts as the longest)."""
    ordered = sorted(runs, key=lambda r: float("inf") if r.whole_after_last is None else r.whole_after_last)
    return ordered[(len(ordered) - 1) // 2]


def storm_rows(runs: Sequence[StormRun]) -> list[list[str]]:
    return [
        [
            r.pattern,
            str(r.alerts),
            str(r.lost),
            cell(r.p99_accept_ms, 1),
            cell(r.processed_after_first),
            cell(r.rate, 0),
            cell(r.whole_after_last),
            str(r.posting_calls),
            cell(r.peak_rss_mb, 0),
            cell(r.cpu_ms_per_alert),
        ]
        for r in runs
    ]


STORM_HEADS = ["pattern", "alerts", "lost", "p99_accept_ms", "processed_s", "alerts/s", "whole_after_last_s"]
STORM_HEADS += ["posting_calls", "rss_peak_MB", "serve_cpu_ms/alert"]


def repeated(pattern: str, targets: int, runs: int, sim: SimServer, workdir: Path) -> StormRun:
    done = []
    for n in range(runs):
        done.append(storm_run(pattern, targets, sim, workdir / f"{pattern}-{n}"))
        run = done[-1]
        whole = cell(run.whole_after_last)
        print(
            f"   {pattern} run {n + 1}: whole {whole} s after the last webhook; {run.calls_by_method}",
            flush=True,
        )
    return median_run(done)


STORM_PATTERNS = ("alertmanager", "trickle-2s", "trickle-20s")


def storm_part(
    runs: int, workdir: Path, targets: int = STORM_TARGETS, patterns: Sequence[str] = STORM_PATTERNS
) -> bool:
    print(
        f"== storm: {2 * targets} alerts over {targets} targets by arrival pattern; the batch is the baseline"
    )
    with SimServer(scenario="healthy", speed=20) as sim:
        found = [repeated(p, targets, runs, sim, workdir) for p in patterns]
    table(STORM_HEADS, storm_rows(found))
    ok = all(
        r.lost == 0 and within(r.whole_after_last, STORM_WHOLE_S) and r.posting_calls <= POSTING_CALLS
        for r in found
    )
    print(
        f"each whole <= {STORM_WHOLE_S:g} s after its last webhook in <= {POSTING_CALLS} posting calls, "
        f"none lost: {ok}"
    )
    return verdict("storm", ok)


def fleet_part(runs: int, workdir: Path, targets: int = FLEET_TARGETS) -> bool:
    print(
        f"== fleet: {2 * targets} alerts over {targets} targets in {FLEET_SECONDS:g} s; "
        "the 2 s trickle is the baseline"
    )
    with SimServer(scenario="healthy", speed=20) as sim:
        base = repeated("trickle-2s", STORM_TARGETS, 1, sim, workdir / "base")
        fleet = repeated("fleet", targets, runs, sim, workdir)
    table(STORM_HEADS, storm_rows([base, fleet]))
    checks = {
        f"whole <= {FLEET_WHOLE_S:g} s after the last webhook": within(fleet.whole_after_last, FLEET_WHOLE_S),
        f">= {FLEET_RATE:g} alerts/s processed": fleet.rate is not None and fleet.rate >= FLEET_RATE,
        f"p99 accept <= {FLEET_P99_MS:g} ms": within(fleet.p99_accept_ms, FLEET_P99_MS),
        f"serve peak RSS <= {FLEET_RSS_MB:g} MB": fleet.peak_rss_mb <= FLEET_RSS_MB,
        f"<= {POSTING_CALLS} posting calls": fleet.posting_calls <= POSTING_CALLS,
        "none lost": fleet.lost == 0,
    }
    for what, holds in checks.items():
        print(f"{what}: {holds}")
    return verdict("fleet", all(checks.values()))


def load() -> str:
    return "load average (1, 5, 15 min) " + " ".join(f"{n:.2f}" for n in os.getloadavg())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", choices=PARTS, action="append", help="run this part only (repeatable)")
    parser.add_argument(
        "--runs", type=int, default=3, help="runs per figure of cli, serve, failover (default 3)"
    )
    parser.add_argument(
        "--storm-runs", type=int, default=1, help="runs per storm and fleet figure (default 1)"
    )
    parser.add_argument(
        "--pattern",
        choices=STORM_PATTERNS,
        action="append",
        help="the storm part's arrival patterns (repeatable; default all three)",
    )
    args = parser.parse_args(argv)
    parts = args.only or list(PARTS)
    print(f"load before: {load()}; {os.cpu_count()} CPUs")
    results = []
    with tempfile.TemporaryDirectory(prefix="proxybot-bench-edges-") as tmp:
        workdir = Path(tmp)
        runners: dict[str, Callable[[], bool]] = {
            "cli": lambda: cli_part(args.runs, workdir / "cli"),
            "serve": lambda: serve_part(args.runs, workdir / "serve"),
            "failover": lambda: failover_part(args.runs, workdir / "failover"),
            "storm": lambda: storm_part(
                args.storm_runs, workdir / "storm", patterns=args.pattern or STORM_PATTERNS
            ),
            "fleet": lambda: fleet_part(args.storm_runs, workdir / "fleet"),
        }
        for part in PARTS:
            if part in parts:
                (workdir / part).mkdir()
                results.append(runners[part]())
    print(f"load after: {load()}")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
