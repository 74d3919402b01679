"""Benchmark: an alert storm (1 000 alerts over 500 targets, as webhooks within 2 s) against `proxybot serve`.

Run from the repository root: `.venv/bin/python bench/storm.py`. The bot runs as its own process (the
real entry point) on the simulator and the fake Slack. The baseline, measured in the same run under the
same load, is a trivial `GET /healthz` sent alongside every webhook: the ratio says how much the intake
itself costs beyond what the server costs any request. The requests go out from a load generator process
of its own (bench/loadgen.py), so its work is not counted as the server's.
The last line is `storm_p99_accept_ms: <n>`.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

# Run as a script, Python puts bench/ on the path, not the repository root that holds `bot` and `tests`.
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.loadgen import LoadRun, Outcome
from sim.server import SimServer
from sim.slack_api import FakeSlack, SlackCall
from tests.e2e.stack import BOT_TOKEN, CHANNEL, BotProcess, StoreView, write_bot_config
from tests.e2e.storm_load import percentile, split, storm_bodies, storm_plan

TARGETS = 500
SECONDS = 2.0
PROCESSING_TIMEOUT = 300.0
STORM_TITLE = "🌩️ Alert storm"


def p99_ms(sent: list[Outcome]) -> float:
    return 1000 * percentile([s.seconds for s in sent], 99)


def lag_ms(sent: list[Outcome]) -> float:
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


def wait_processed(store: StoreView, start: float) -> float | None:
    """Seconds from the start until every notification was processed (None: not within the timeout)."""
    while time.monotonic() - start < PROCESSING_TIMEOUT:
        if store.unprocessed() == 0:
            return time.monotonic() - start
        time.sleep(0.2)
    return None


def fmt(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:.2f} s"


def run(workdir: Path) -> int:
    with (
        SimServer(scenario="healthy", speed=20) as sim,
        FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack,
    ):
        config = write_bot_config(sim, workdir, slack.api_url)
        with BotProcess(config, workdir / "bot.log") as bot:
            store = StoreView(workdir / "bot.db")
            bodies = storm_bodies(TARGETS)
            plan = storm_plan(bot.url, bodies, seconds=SECONDS, probe_path="/healthz", timeout=60.0)
            with LoadRun(plan) as load:
                start = load.started()  # the schedule's clock, after the generator's start-up
                webhooks, probes = split(load.outcomes())
            sent_in = time.monotonic() - start
            processed = wait_processed(store, start)
            calls = [c for c in slack.calls if c.method != "auth.test"]
            counted = sum(len(alerts) for alerts in store.storm_entries().values())
            refused = sum(1 for s in webhooks if not 200 <= s.status < 300)
            accept_ms, baseline_ms = p99_ms(webhooks), p99_ms(probes)
            shape = f"{2 * TARGETS} alerts over {TARGETS} targets"
            print(f"webhooks: {len(webhooks)} ({shape}) all answered after {sent_in:.2f} s")
            print(f"webhooks not answered 2xx: {refused}")
            print(f"p50 webhook response: {1000 * percentile([s.seconds for s in webhooks], 50):.1f} ms")
            print(f"p99 webhook response: {accept_ms:.1f} ms")
            print(f"p99 GET /healthz under the same load (baseline): {baseline_ms:.1f} ms")
            print(f"ratio webhook/baseline p99: {accept_ms / baseline_ms:.2f}")
            late = lag_ms(webhooks + probes)
            print(f"load generator (own process) late on its schedule by at most: {late:.1f} ms")
            print(f"all notifications processed after: {fmt(processed)}")
            print(f"first Slack message after: {fmt(first_post(calls, start, storm=False))}")
            print(f"storm summary in Slack after: {fmt(first_post(calls, start, storm=True))}")
            print(f"Slack calls by then: {len(calls)} (outbox still pending: {store.outbox_pending()})")
            lost = len(bodies) - (store.notifications() - store.unprocessed())
            print(f"notifications lost (refused, or accepted and not processed): {lost}")
            print(f"Slack operations given up (storm lines never shown): {store.outbox_failed()}")
            print(f"alerts missing from the storm summary's count: {2 * TARGETS - counted}")
            print(f"storm_p99_accept_ms: {accept_ms:.1f}")
    return 0 if refused == 0 and processed is not None else 1


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="proxybot-bench-storm-") as workdir:
        return run(Path(workdir))


if __name__ == "__main__":
    sys.exit(main())
