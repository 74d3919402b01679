"""Benchmark: one alert at a time on a healthy simulator, from the webhook to its first Slack call.

Run from the repository root: `.venv/bin/python bench/alert_latency.py [--alerts 200] [--gap 1.2]`.
`proxybot serve` runs as its own process against the simulator, the fake Slack and a real Prometheus
(Debian's, scraping the simulator every second). Each alert is a new group (a `bench_seq` label, grouped
on), so each is a top-level chat.postMessage; the next is sent `--gap` seconds after the previous one's
Slack calls are all done (its chart too), so Slack's pacing of one post a second never holds a post.
Storm mode is configured out (`storm.groups` above the alert count): every alert is its own message.

Measured per alert: `total`, from just before the webhook is written to the moment its chat.postMessage
reaches the fake Slack (one clock: the fake runs in this process). The bot's own split comes from its
`/metrics`: `proxybot_enrichment_wait_seconds{part}` (bot/alerts/budget.py), read before and after each
alert, is how long that notification's enrichment waited for its upstream reads (live /metrics/syncer,
the target's control-plane pods, the client control plane's logs, Prometheus; `all` the whole wait, the
parts run concurrently; a read includes decoding what it fetched, the page's parse too). `overhead` =
total - wait: intake, store, worker, diagnosis, rendering, outbox and delivery.

Baseline, measured in the same run after each alert: the same reads done directly from this process with
the bot's own readers (bot/checks: syncer_metrics, read_target_pods, read_control_plane; PromEnricher with
no cache), concurrently as the bot does them, cold (the page fetched, not parsed). The bot keeps reads
for 5 s (shared reads): with a short gap most alerts find them in hand, so its wait is below the
baseline's; `--gap 6` reads cold each time. The last line is `alert_overhead_p99_ms: <n>` (goal <= 50).

The reads an alert on a target several clients share adds (its blast radius, what changed before it, with
a fleet from the platform) are bench/alert_reads.py's, beside the same alerts without them, by `one_alert`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Run as a script, Python puts bench/ on the path, not the repository root that holds `bot` and `tests`.
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import yaml

from bot.alerts.prom_enrich import PromEnricher, ask_for
from bot.clients.prometheus import PrometheusClient
from bot.reads.context import CheckContext
from bot.reads.control_plane_logs import read_control_plane
from bot.reads.triage import read_target_pods
from config.loader import load_config
from config.settings import Settings
from sim.server import SimServer
from sim.slack_api import FakeSlack
from tests.e2e.stack import (
    BOT_TOKEN,
    CHANNEL,
    CLIENT,
    TARGET,
    BotProcess,
    StoreView,
    alert_entry,
    auth,
    notification,
    now,
    proxy_alert,
    write_bot_config,
)
from tests.e2e.storm_load import percentile
from tests.fakes.sim_scrape import syncer_jobs
from tests.harness.prometheus import Prometheus

ALERTS = 200
GAP = 1.2  # seconds after an alert's Slack calls are done before the next webhook
PACING = 1.05  # chat.postMessage at most once a second per channel: never send sooner after a post
ALERT_TIMEOUT = 30.0
OVERHEAD_GOAL_MS = 50.0
PARTS = ("live", "pods", "logs", "prometheus")
ALL = "all"
WAIT_METRIC = "proxybot_enrichment_wait_seconds"
ALERTNAME = "ResourceProxyNoHealthyPeers"
GROUP_BY = ("alertname", "cluster", "target", "bench_seq")


@dataclass
class Sample:
    """One alert: seconds end to end, the bot's wait per part, the baseline's reads per part."""

    total: float
    wait: dict[str, float]
    baseline: dict[str, float] = field(default_factory=dict)
    counted: dict[str, float] = field(default_factory=dict)  # reads observed per part (0 or 1 each)

    @property
    def overhead(self) -> float:
        return self.total - self.wait[ALL]


def alert_labels(seq: int) -> dict[str, str]:
    return {**proxy_alert(ALERTNAME, target=TARGET, cluster=CLIENT), "bench_seq": str(seq)}


def alert_body(seq: int, labels: dict[str, str] | None = None) -> bytes:
    entry = alert_entry(alert_labels(seq) if labels is None else labels, now())
    return json.dumps(notification([entry], group_by=GROUP_BY)).encode()


def wait_sums(text: str) -> dict[str, tuple[float, float]]:
    """(sum, count) of the wait histogram per part, from the bot's /metrics text."""
    found: dict[str, list[float]] = {}
    for line in text.splitlines():
        for suffix, index in (("_sum", 0), ("_count", 1)):
            prefix = f'{WAIT_METRIC}{suffix}{{part="'
            if line.startswith(prefix):
                part = line[len(prefix) :].split('"', 1)[0]
                found.setdefault(part, [0.0, 0.0])[index] = float(line.rsplit(" ", 1)[1])
    return {part: (s, c) for part, (s, c) in found.items()}


class BareReads:
    """The bot's upstream reads for one alert, done directly with its readers: no pipeline, no cache."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.ctx = CheckContext(settings)
        assert settings.prometheus is not None
        self.prometheus = PrometheusClient.from_settings(settings.prometheus)
        self.enricher = PromEnricher(self.prometheus, ttl=0.0)

    async def once(self, labels: dict[str, str]) -> dict[str, float]:
        cluster = self.settings.cluster(CLIENT)
        found = self.settings.find_target(TARGET)
        assert cluster is not None
        assert found is not None
        ask = ask_for(ALERTNAME, labels, cluster)
        assert ask is not None

        async def live() -> object:
            return await (await self.ctx.client(cluster)).syncer_metrics(timeout=5.0)

        reads: dict[str, Awaitable[object]] = {
            "live": live(),
            "pods": read_target_pods(self.ctx, found[1]),
            "logs": read_control_plane(self.ctx, cluster),
            "prometheus": self.enricher.window(ask),
        }
        times: dict[str, float] = {}
        started = time.perf_counter()

        async def timed(part: str, read: Awaitable[object]) -> None:
            await read
            times[part] = time.perf_counter() - started

        await asyncio.gather(*(timed(part, read) for part, read in reads.items()))
        times[ALL] = time.perf_counter() - started
        return times

    async def aclose(self) -> None:
        await self.ctx.aclose()
        await self.enricher.aclose()


def bot_config(sim: SimServer, workdir: Path, slack: FakeSlack, prometheus: Prometheus, alerts: int) -> Path:
    path = write_bot_config(sim, workdir, slack.api_url)
    doc = yaml.safe_load(path.read_text())
    doc["prometheus"] = {"url": prometheus.url}
    doc["storm"] = {"groups": alerts + 1}  # every alert its own message: no storm summary
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


async def until(check: Any, timeout: float, what: str, interval: float = 0.002) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout:g} s")
        await asyncio.sleep(interval)


async def settled(store: StoreView) -> None:
    """Every notification processed and every Slack call sent (an alert's details reply is deferred)."""
    await until(lambda: store.unprocessed() == 0 and store.outbox_pending() == 0, ALERT_TIMEOUT, "the outbox")


async def one_alert(
    seq: int,
    bot: BotProcess,
    slack: FakeSlack,
    store: StoreView,
    http: httpx.AsyncClient,
    labels: dict[str, str] | None = None,
    *,
    channel: str = CHANNEL,
    settle: bool = True,
) -> Sample:
    """Send one alert (`alert_labels(seq)` unless `labels` are given: with a `bench_seq` of their own, a
    new group), wait for its post in `channel` and (`settle`) for every Slack call it causes; the figures
    of it. Without `settle` the caller waits (`settled`) before the bot's next alert."""
    before = wait_sums((await http.get(f"{bot.url}/metrics")).text)
    posts = len(slack.top_level(channel))
    body, headers = alert_body(seq, labels), {**auth(), "Content-Type": "application/json"}
    started = time.monotonic()
    answer = await http.post(f"{bot.url}/alertmanager", content=body, headers=headers)
    if answer.status_code != 202:
        raise RuntimeError(f"the webhook answered {answer.status_code}: {answer.text[:200]}")
    await until(lambda: len(slack.top_level(channel)) > posts, ALERT_TIMEOUT, f"alert {seq}'s post")
    post = [c for c in slack.calls_to("chat.postMessage") if not c.params.get("thread_ts")][-1]
    total = post.at - started
    if settle:
        await settled(store)
    after = wait_sums((await http.get(f"{bot.url}/metrics")).text)
    wait = {part: after[part][0] - before.get(part, (0.0, 0.0))[0] for part in after}
    counted = {part: after[part][1] - before.get(part, (0.0, 0.0))[1] for part in after}
    if counted.get(ALL) != 1:
        raise RuntimeError(f"alert {seq}: {counted.get(ALL)} enrichment waits observed, not one")
    return Sample(total, wait, counted=counted)


def ms(values: Sequence[float], q: float) -> str:
    return f"{1000 * percentile(values, q):8.1f}"


def report(samples: list[Sample], gap: float) -> float:
    print(f"alerts: {len(samples)}, one at a time, {gap:g} s after the previous one's Slack calls")
    print(f"{'ms':<44}{'p50':>8}{'p99':>8}{'max':>8}")

    def line(label: str, values: Sequence[float]) -> None:
        print(f"{label:<44}{ms(values, 50)}{ms(values, 99)}{ms(values, 100)}")

    line("webhook -> first Slack call (total)", [s.total for s in samples])
    line("bot's wait for upstream reads (all)", [s.wait[ALL] for s in samples])
    for part in PARTS:
        line(f"  of which {part}", [s.wait.get(part, 0.0) for s in samples])
    overhead = [s.overhead for s in samples]
    line("bot's own overhead (total - wait)", overhead)
    line("baseline: the same reads, direct, cold (all)", [s.baseline[ALL] for s in samples])
    for part in PARTS:
        line(f"  of which {part}", [s.baseline[part] for s in samples])
    line("total - baseline", [s.total - s.baseline[ALL] for s in samples])
    in_hand = sum(1 for s in samples if s.wait.get("live", 0.0) < 0.001)
    print(f"alerts whose live state was in hand (shared read, wait < 1 ms): {in_hand} of {len(samples)}")
    p99 = 1000 * percentile(overhead, 99)
    print(f"overhead p99 <= {OVERHEAD_GOAL_MS:g} ms: {p99 <= OVERHEAD_GOAL_MS}")
    print(f"alert_overhead_p99_ms: {p99:.1f}")
    return p99


async def measure(
    bot: BotProcess, slack: FakeSlack, settings: Settings, alerts: int, gap: float
) -> list[Sample]:
    store = StoreView(Path(str(settings.store.sqlite_path)))
    bare = BareReads(settings)
    samples: list[Sample] = []
    try:
        async with httpx.AsyncClient(timeout=10.0) as http:
            await bare.once(alert_labels(-1))  # the baseline's connections open, as the bot's are
            for seq in range(alerts):
                sample = await one_alert(seq, bot, slack, store, http)
                sample.baseline = await bare.once(alert_labels(seq))
                samples.append(sample)
                await asyncio.sleep(max(gap, PACING))
    finally:
        await bare.aclose()
    return samples


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--alerts", type=int, default=ALERTS, help=f"alerts to send (default {ALERTS})")
    parser.add_argument("--gap", type=float, default=GAP, help=f"seconds between alerts (default {GAP:g})")
    args = parser.parse_args(argv)
    if args.alerts < 1 or args.gap < 0:
        parser.error("--alerts must be at least 1 and --gap not negative")
    with tempfile.TemporaryDirectory(prefix="proxybot-bench-latency-") as tmp:
        workdir = Path(tmp)
        (workdir / "prometheus").mkdir()
        with (
            SimServer(scenario="healthy", speed=1) as sim,
            FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack,
            Prometheus(workdir / "prometheus", syncer_jobs(sim), interval="1s") as prometheus,
        ):
            prometheus.wait_for_scrapes()
            config = bot_config(sim, workdir, slack, prometheus, args.alerts)
            settings = load_config(config).settings
            with BotProcess(config, workdir / "bot.log") as bot:
                samples = asyncio.run(measure(bot, slack, settings, args.alerts, args.gap))
    p99 = report(samples, args.gap)
    return 0 if p99 <= OVERHEAD_GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
