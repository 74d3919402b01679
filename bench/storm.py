"""Benchmark: an alert storm (1 000 alerts over 500 targets, as webhooks within 2 s) against `proxybot serve`.

Run from the repository root: `.venv/bin/python bench/storm.py [--replicas N] [--store sqlite|postgres]`.
The fake Slack paces chat.postMessage as Slack does (1 a second per channel, `limit_posts`). Each run says
how long until every target was named in Slack (a message, or the content of a file shared there) and with
how many posting calls (posts, edits, the three upload steps, deletes); a second storm goes through a real
Alertmanager 0.25 (`group_wait: 2s`, bench/storm_am.py), measured from the alerts reaching Alertmanager:
its last lines are `all_targets_in_slack_s` and `posting_calls` (goal: <= 5 s, <= 5 calls).
The bot runs as its own process (the real entry point) on the simulator and the fake Slack. The baseline,
measured in the same run under the same load, is a trivial `GET /healthz` sent alongside every webhook:
the ratio says how much the intake itself costs beyond what the server costs any request. The requests go
out from a load generator process of its own (bench/loadgen.py), so its work is not counted as the
server's.

With `--replicas 2 --store postgres` the same storm is split across two replicas on one PostgreSQL
database (a throwaway server, sim/postgres.py): each target's first notification goes to one replica and
its update to the other, as Alertmanager reaching the pods through one Service does, from one generator
process per replica. The single-replica SQLite run is measured first, in the same process, and the two
are printed side by side. The last line is `storm_p99_accept_ms: <n>` (of the run asked for; goal <= 50).

(Like bench/ack.py, this borrows the e2e suite's stack: tests/e2e/stack.py, storm_load.py, replicas.py.)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, fields
from pathlib import Path

# Run as a script, Python puts bench/ on the path, not the repository root that holds `bot` and `tests`.
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.loadgen import LoadRun, Outcome
from bench.storm_am import AlertmanagerFigures, alertmanager_storm
from sim.postgres import PostgresServer, start_postgres
from sim.server import SimServer
from sim.slack_api import FakeSlack, SlackCall
from tests.e2e.replicas import PgStoreView, Replicas, replica_config
from tests.e2e.stack import BOT_TOKEN, CHANNEL, BotProcess, StoreQueries, StoreView, write_bot_config
from tests.e2e.storm_load import (
    SlackCoverage,
    by_method,
    percentile,
    posting_calls,
    split,
    storm_bodies,
    storm_plan,
    storm_target,
)

TARGETS = 500
SECONDS = 2.0
PROCESSING_TIMEOUT = 300.0
# After processing, how long the outbox may take to drain before the Slack calls are counted anyway.
DRAIN_TIMEOUT = 120.0
STORM_TITLE = "🌩️ Alert storm"
SQLITE, POSTGRES = "sqlite", "postgres"


@dataclass(frozen=True)
class Setup:
    """How the bot runs: how many replicas, on which store."""

    replicas: int = 1
    store: str = SQLITE

    def __str__(self) -> str:
        return f"{self.replicas} replica{'s' if self.replicas > 1 else ''} on {self.store}"


@dataclass(frozen=True)
class Figures:
    """What one storm run measured."""

    webhooks: int
    answered_after: float
    refused: int
    p50_ms: float
    p99_ms: float
    p99_by_replica: str
    baseline_p99_ms: float
    generator_late_ms: float
    processed_after: float | None
    first_post_after: float | None
    summary_after: float | None
    slack_calls_processed: int
    pending_processed: int
    drained_after: float | None
    slack_calls: int
    posts: int
    calls_by_method: str
    lost: int
    given_up: int
    missing_from_summary: int
    all_targets_after: float | None
    posting_calls_by_then: int
    posting_calls: int


def p99_ms(sent: Sequence[Outcome]) -> float:
    return 1000 * percentile([s.seconds for s in sent], 99)


def lag_ms(sent: Sequence[Outcome]) -> float:
    """The generator's worst lateness against its schedule (a free connection waited for, or a busy CPU)."""
    return 1000 * max(s.lag for s in sent)


def first_post(calls: list[SlackCall], start: float, storm: bool) -> float | None:
    """Seconds from the storm's start to the first top-level post (or the first storm summary)."""
    for call in calls:
        if call.method != "chat.postMessage" or call.params.get("thread_ts"):
            continue
        if not storm or str(call.params.get("text", "")).startswith(STORM_TITLE):
            return call.at - start
    return None


def wait_for_none(left: Callable[[], int], start: float, timeout: float) -> float | None:
    """Seconds from the start until `left()` (of the store) is 0 (None: not within the timeout)."""
    while time.monotonic() - start < timeout:
        if left() == 0:
            return time.monotonic() - start
        time.sleep(0.2)
    return None


def fmt(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:.2f} s"


def split_bodies(bodies: Sequence[bytes], replicas: int) -> list[list[bytes]]:
    """Each target's first notification to one replica, its update to the next (storm_bodies' order:
    every target's first, then every target's update), each replica's share in the storm's order."""
    shares: list[list[bytes]] = [[] for _ in range(replicas)]
    half = len(bodies) // 2
    for i, body in enumerate(bodies):
        target, update = i % half, i >= half
        shares[(target + update) % replicas].append(body)
    return shares


@contextmanager
def running_bots(
    setup: Setup, sim: SimServer, slack: FakeSlack, workdir: Path, postgres: PostgresServer | None
) -> Iterator[tuple[list[BotProcess], StoreQueries]]:
    """The bot(s) of `setup`, started and ready, and a view of their store; all killed at the end."""
    if setup.store == SQLITE:
        with BotProcess(write_bot_config(sim, workdir, slack.api_url), workdir / "bot.log") as bot:
            yield [bot], StoreView(workdir / "bot.db")
        return
    assert postgres is not None
    url = asyncio.run(postgres.new_database())
    store = PgStoreView(url)
    replicas = Replicas(replica_config(sim, workdir, slack.api_url, url), workdir, store, setup.replicas)
    try:
        replicas.start()
        yield replicas.bots, store
    finally:
        replicas.close()


def storm(setup: Setup, sim: SimServer, workdir: Path, postgres: PostgresServer | None) -> Figures:
    """One storm against a fresh bot (or replicas) and a fresh fake Slack."""
    workdir.mkdir()
    with (
        FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack,
        running_bots(setup, sim, slack, workdir, postgres) as (bots, store),
    ):
        slack.limit_posts()  # Slack's pace: 1 a second per channel, short bursts
        coverage = SlackCoverage(slack, (storm_target(i) for i in range(TARGETS)))
        bodies = storm_bodies(TARGETS)
        shares = split_bodies(bodies, len(bots))
        with ExitStack() as loads:
            runs = [
                loads.enter_context(
                    LoadRun(storm_plan(bot.url, share, seconds=SECONDS, probe_path="/healthz", timeout=60.0))
                )
                for bot, share in zip(bots, shares, strict=True)
            ]
            # Each generator's `go` read as it comes (a thread each), so the earliest is the storm's start.
            with ThreadPoolExecutor(max_workers=len(runs)) as pool:
                start = min(pool.map(lambda load: load.started(), runs))
            outcomes = [split(run.outcomes()) for run in runs]
        store_leader = store.leader_pid() if isinstance(store, PgStoreView) else None
        webhooks = [o for hooks, _ in outcomes for o in hooks]
        probes = [o for _, probed in outcomes for o in probed]
        answered = time.monotonic() - start
        processed = wait_for_none(store.unprocessed, start, PROCESSING_TIMEOUT)
        calls_processed = sum(1 for c in slack.calls if c.method != "auth.test")
        pending_processed = store.outbox_pending()
        drained = wait_for_none(store.outbox_pending, start, (processed or 0.0) + DRAIN_TIMEOUT)
        calls = [c for c in slack.calls if c.method != "auth.test"]
        return Figures(
            webhooks=len(webhooks),
            answered_after=answered,
            refused=sum(1 for s in webhooks if not 200 <= s.status < 300),
            p50_ms=1000 * percentile([s.seconds for s in webhooks], 50),
            p99_ms=p99_ms(webhooks),
            p99_by_replica=" ".join(
                f"{bot.log_path.stem}{'(leader)' if bot.pid == store_leader else ''}={p99_ms(hooks):.1f}"
                for bot, (hooks, _) in zip(bots, outcomes, strict=True)
            ),
            baseline_p99_ms=p99_ms(probes),
            generator_late_ms=lag_ms(webhooks + probes),
            processed_after=processed,
            first_post_after=first_post(calls, start, storm=False),
            summary_after=first_post(calls, start, storm=True),
            slack_calls_processed=calls_processed,
            pending_processed=pending_processed,
            drained_after=drained,
            slack_calls=len(calls),
            posts=sum(1 for c in calls if c.method == "chat.postMessage" and not c.params.get("thread_ts")),
            calls_by_method=by_method(calls),
            lost=len(bodies) - (store.notifications() - store.unprocessed()),
            given_up=store.outbox_failed(),
            missing_from_summary=2 * TARGETS - sum(len(a) for a in store.storm_entries().values()),
            all_targets_after=None if coverage.covered_at is None else coverage.covered_at - start,
            posting_calls_by_then=len(posting_calls(calls, coverage.covered_at or float("inf"))),
            posting_calls=len(posting_calls(calls)),
        )


def report(setup: Setup, f: Figures) -> None:
    """One run's figures, a line each (the single-replica run prints what this benchmark always has)."""
    shape = f"{2 * TARGETS} alerts over {TARGETS} targets"
    print(f"== {setup}")
    print(f"webhooks: {f.webhooks} ({shape}) all answered after {f.answered_after:.2f} s")
    print(f"webhooks not answered 2xx: {f.refused}")
    print(f"p50 webhook response: {f.p50_ms:.1f} ms")
    print(f"p99 webhook response: {f.p99_ms:.1f} ms (per replica, ms: {f.p99_by_replica})")
    print(f"p99 GET /healthz under the same load (baseline): {f.baseline_p99_ms:.1f} ms")
    print(f"ratio webhook/baseline p99: {f.p99_ms / f.baseline_p99_ms:.2f}")
    print(f"load generator (own process) late on its schedule by at most: {f.generator_late_ms:.1f} ms")
    print(f"all notifications processed after: {fmt(f.processed_after)}")
    print(f"first Slack message after: {fmt(f.first_post_after)}")
    print(f"storm summary in Slack after: {fmt(f.summary_after)}")
    print(f"Slack calls by then: {f.slack_calls_processed} (outbox still pending: {f.pending_processed})")
    print(f"outbox drained after: {fmt(f.drained_after)}; Slack calls in all: {f.slack_calls}")
    print(f"Slack calls by method: {f.calls_by_method}")
    print(f"notifications lost (refused, or accepted and not processed): {f.lost}")
    print(f"Slack operations given up (never shown): {f.given_up}")
    print(f"alerts missing from the storm summary's count: {f.missing_from_summary}")
    print(
        f"every target named in Slack after: {fmt(f.all_targets_after)} (from the first webhook), "
        f"with {f.posting_calls_by_then} posting calls; posting calls in all: {f.posting_calls}"
    )


def side_by_side(setups: Sequence[Setup], runs: Sequence[Figures]) -> None:
    """Every figure of the runs in columns, the first run (the baseline) first."""
    heads = [str(s) for s in setups]
    width = max(len(h) for h in heads) + 2
    print("== side by side")
    print(f"{'':<28}" + "".join(f"{h:>{width}}" for h in heads))
    for field in fields(Figures):
        if field.name in ("calls_by_method", "p99_by_replica"):
            continue  # printed per run: too wide for a column
        values = [getattr(run, field.name) for run in runs]
        cells = ["never" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v) for v in values]
        print(f"{field.name:<28}" + "".join(f"{c:>{width}}" for c in cells))
    base, last = runs[0], runs[-1]
    print(f"Slack calls vs one replica on SQLite: {last.slack_calls} vs {base.slack_calls}")


def passed(f: Figures) -> bool:
    return f.refused == 0 and f.processed_after is not None and f.lost == 0


def run(workdir: Path, asked: Setup, with_alertmanager: bool) -> int:
    setups = [Setup()] if asked == Setup() else [Setup(), asked]
    through_am: AlertmanagerFigures | None = None
    with ExitStack() as stack:
        sim = stack.enter_context(SimServer(scenario="healthy", speed=20))
        postgres = stack.enter_context(start_postgres()) if asked.store == POSTGRES else None
        runs: list[Figures] = []
        for i, setup in enumerate(setups):
            figures = storm(setup, sim, workdir / f"run-{i}", postgres)
            report(setup, figures)
            runs.append(figures)
        if with_alertmanager:
            through_am = alertmanager_storm(sim, workdir / "alertmanager", TARGETS)
    if len(runs) > 1:
        side_by_side(setups, runs)
    print(f"storm_p99_accept_ms: {runs[-1].p99_ms:.1f}")
    if through_am is not None:
        through_am.report()
    return 0 if all(passed(f) for f in runs) and (through_am is None or through_am.passed) else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--replicas", type=int, default=1, help="replicas of proxybot serve (default 1)")
    parser.add_argument(
        "--store", choices=(SQLITE, POSTGRES), default=SQLITE, help="the store (default sqlite)"
    )
    parser.add_argument(
        "--no-alertmanager",
        action="store_true",
        help="skip the storm through a real Alertmanager (it needs prometheus-alertmanager installed)",
    )
    args = parser.parse_args(argv)
    if args.replicas < 1 or (args.replicas > 1 and args.store != POSTGRES):
        parser.error("several replicas need --store postgres (a SQLite file serves one replica)")
    with tempfile.TemporaryDirectory(prefix="proxybot-bench-storm-") as workdir:
        return run(Path(workdir), Setup(args.replicas, args.store), not args.no_alertmanager)


if __name__ == "__main__":
    sys.exit(main())
