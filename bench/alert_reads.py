"""Benchmark: the reads issue 39 added to an alert's round (its blast radius, what changed before it), as
the bot's enrichment wait, beside the same bot's wait without them, in one run.

Run from the repository root: `.venv/bin/python bench/alert_reads.py [--alerts 60] [--spacing 5.5]`.
One simulator plays the platform in its scenario `shared-target-down` (team-a..team-d forward to
platform/crd-store), its clock held at t=50, before the fault: every alert is a message of its own (after
the fault a later group would join the first one's incident instead of being posted). One real Prometheus
scrapes it, one fake Slack takes both bots' calls, a channel each (Slack paces each channel). Two
`proxybot serve` processes run side by side:

 (a) with the added reads: the config names only the platform (`platform:`), the fleet discovered from it.
     crd-store has four forwarders, so each round reads the live state of all four clients (the blast
     radius, bot/alerts/blast.py), and the kept history of team-a's and crd-store's instances (what
     changed before it, bot/alerts/change_enrich.py);
 (b) the baseline without them: a `clusters:` config of team-a alone, written from the very settings (a)
     derived for team-a from the platform (the same kubeconfig of the platform's paths, contexts, match,
     targets, control planes), with no `platform:`. crd-store has one forwarder (no blast radius) and no
     instance history is read. Everything else is equal: the same alerts, simulator, Prometheus, Slack.

Both get the same alerts, one at a time and alternately (a, b, a, b ...): ResourceProxyNoHealthyPeers on
platform/crd-store labelled for team-a (cluster, pod team-a-0, namespace vcluster-team-a), each a new
group (a `bench_seq` label, as in bench/alert_latency.py). A round of (a) without the history read or
whose message does not name team-d (the blast radius), or one of (b) with either, stops the run. A bot's
alerts are at least `--spacing` seconds apart (default 5.5: past the bot's 5 s shared reads, bot/live.py,
and the history's `HISTORY_TTL`), so its rounds read cold, and after its last alert's Slack calls are all
done (the details reply is deferred 5 s, `DETAILS_DEFER`) and Slack's pacing: one bot's details reply may
be sent while the other's alert is read, nothing else overlaps.

Measured per alert as in bench/alert_latency.py (`one_alert`): `total`, from just before the webhook is
written to its chat.postMessage at the fake Slack, and the bot's wait for its reads,
`proxybot_enrichment_wait_seconds{part}` from its /metrics before and after (`all` the whole wait; the
parts run concurrently, `live` holds the four clients' reads in (a), `changes` the history's). Printed per
configuration: p50/p95/p99/max, the ratios (a)/(b), the enrichment budget (`enrichment.timeout_seconds`,
a part still reading when it ends counts the whole budget) and, last, `added_reads_wait_p99_ratio: <x>`.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Run as a script, Python puts bench/ on the path, not the repository root that holds `bot` and `tests`.
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import yaml

from bench.alert_latency import ALERTNAME, ALL, PACING, Sample, bot_config, one_alert, settled
from bot.fleet.reading import FleetReader
from config.loader import load_config
from config.settings import Settings
from sim.scenarios import FAULT_AT, KEPT
from sim.server import SimServer
from sim.slack_api import FakeSlack, iter_texts
from tests.e2e.stack import BOT_TOKEN, CHANNEL, CLIENT, TARGET, BotProcess, StoreView, proxy_alert
from tests.e2e.storm_load import percentile
from tests.fakes.sim_scrape import syncer_jobs
from tests.harness.prometheus import Prometheus

ALERTS = 60  # per configuration
SPACING = 5.5  # seconds at least between one bot's alerts: its shared reads (5 s) gone cold
HELD_AT = FAULT_AT - 10.0  # the simulated clock stops before crd-store admits team-d only
SCENARIO = "shared-target-down"
FORWARDERS = 4  # team-a..team-d
WITH, WITHOUT = "with", "without"
CHANNELS = {WITH: CHANNEL, WITHOUT: f"{CHANNEL}-baseline"}  # a channel each: Slack paces each
NAMES = {WITH: "(a) with the added reads", WITHOUT: "(b) without them (baseline)"}
ADDED = ("changes",)  # a part only (a) reads
SHOWN = ("live", "changes", "pods", "logs", "prometheus")
QUANTILES = (50.0, 95.0, 99.0)


@dataclass
class Run:
    """One configuration's bot and its alerts' figures."""

    bot: BotProcess
    store: StoreView
    samples: list[Sample]
    last_sent: float = -math.inf


def labels(seq: int) -> dict[str, str]:
    """A team-a alert on crd-store as Prometheus sends it (each replica's series carry its namespace)."""
    alert = proxy_alert(ALERTNAME, target=TARGET, cluster=CLIENT, pod=f"{CLIENT}-0")
    return {**alert, "namespace": f"vcluster-{CLIENT}", "bench_seq": str(seq)}


async def team_a_alone(settings: Settings, directory: Path) -> dict[str, Any]:
    """team-a's settings as the bot with `platform:` derives them (through a kubeconfig of the platform's
    paths written in `directory`), as a `clusters:` entry."""
    reader = FleetReader(settings, directory)
    try:
        fleet = await reader.read()
    finally:
        await reader.aclose()
    found = [c for c in fleet.clusters if c.name == CLIENT]
    forwarders = [c.name for c in fleet.clusters if any(t.name == TARGET for t in c.targets)]
    if not found or len(forwarders) != FORWARDERS:
        raise RuntimeError(f"the platform's clients on {TARGET}: {forwarders}, not {FORWARDERS}")
    entry: dict[str, Any] = found[0].model_dump(mode="json", exclude_unset=True)
    return entry


def configs(
    sim: SimServer, workdir: Path, slack: FakeSlack, prometheus: Prometheus, alerts: int
) -> dict[str, Path]:
    """(a)'s config as alert_latency writes it (the platform's), and (b)'s: team-a alone, no platform."""
    paths: dict[str, Path] = {}
    for name in (WITH, WITHOUT):
        (workdir / name).mkdir()
        paths[name] = bot_config(sim, workdir / name, slack, prometheus, alerts)
    (workdir / "fleet").mkdir(mode=0o700)
    entry = asyncio.run(team_a_alone(load_config(paths[WITH]).settings, workdir / "fleet"))
    doc = yaml.safe_load(paths[WITHOUT].read_text())
    doc.pop("platform")
    doc["slack"]["default_channel"] = CHANNELS[WITHOUT]
    doc["clusters"] = [entry]
    paths[WITHOUT].write_text(yaml.safe_dump(doc, sort_keys=False))
    return paths


async def measure(runs: dict[str, Run], slack: FakeSlack, alerts: int, spacing: float) -> None:
    async with httpx.AsyncClient(timeout=10.0) as http:
        for seq in range(alerts):
            for name in (WITH, WITHOUT):
                run = runs[name]
                await asyncio.sleep(max(0.0, run.last_sent + spacing - time.monotonic()))
                await settled(run.store)  # its last alert's details reply, deferred, is sent
                told(slack, name, seq - 1)
                await asyncio.sleep(PACING)  # and Slack's pacing: one post a second in the channel
                run.last_sent = time.monotonic()
                sample = await one_alert(
                    seq, run.bot, slack, run.store, http, labels(seq), channel=CHANNELS[name], settle=False
                )
                added = [p for p in ADDED if sample.counted.get(p, 0.0) != 0.0]
                if (name == WITH) != (added == list(ADDED)):
                    raise RuntimeError(f"{NAMES[name]}, alert {seq}: parts read {sorted(sample.counted)}")
                run.samples.append(sample)
        for name, run in runs.items():
            await settled(run.store)
            told(slack, name, alerts - 1)


def told(slack: FakeSlack, name: str, seq: int) -> None:
    """The configuration's last message and its thread (settled) tell the blast radius in (a) only: every
    client of crd-store, team-d too."""
    if seq < 0:
        return
    channel = CHANNELS[name]
    message = slack.top_level(channel)[-1]
    replies = [block for reply in slack.thread(channel, message.ts) for block in reply.blocks]
    if (name == WITH) != (KEPT in "\n".join(iter_texts([*message.blocks, *replies]))):
        raise RuntimeError(f"{NAMES[name]}, alert {seq}: {KEPT} named in its message or not, wrongly")


def ms(values: Sequence[float], q: float) -> float:
    return 1000 * percentile(values, q)


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b > 0 else "n/a"


def report(runs: dict[str, Run], budget: float, spacing: float) -> tuple[float, bool]:
    """Print every figure; (the p99 ratio of the whole wait, whether (a)'s p99 is within the budget)."""
    count = len(runs[WITH].samples)
    print(f"== alert reads: {count} alerts per configuration, alternating, {spacing:g} s apart per bot")
    print(f"scenario {SCENARIO}, clock held at t={HELD_AT:g}; alerts on {TARGET} for {CLIENT}")
    print(f"enrichment budget (enrichment.timeout_seconds): {1000 * budget:.1f} ms")

    def series(name: str, pick: str) -> list[float]:
        samples = runs[name].samples
        if pick == "total":
            return [s.total for s in samples]
        return [s.wait.get(pick, 0.0) for s in samples]

    rows = [("webhook -> post (total)", "total"), ("bot's wait for its reads (all)", ALL)]
    rows += [(f"  of which {part}", part) for part in SHOWN]
    header = f"{'ms':<36}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}"
    for name in (WITH, WITHOUT):
        print(NAMES[name])
        print(header)
        for label, pick in rows:
            values = series(name, pick)
            print(f"{label:<36}" + "".join(f"{ms(values, q):9.1f}" for q in (*QUANTILES, 100.0)))
    print("ratio (a)/(b)")
    print(f"{'':<36}{'p50':>9}{'p95':>9}{'p99':>9}")
    for label, pick in (("total", "total"), ("wait (all)", ALL), ("  live", "live")):
        a, b = series(WITH, pick), series(WITHOUT, pick)
        print(f"{label:<36}" + "".join(f"{ratio(ms(a, q), ms(b, q)):>9}" for q in QUANTILES))
    cold = {name: sum(1 for s in runs[name].samples if s.wait.get("live", 0.0) >= 0.001) for name in runs}
    print(
        f"rounds that read live state cold (wait >= 1 ms): (a) {cold[WITH]}, (b) {cold[WITHOUT]} of {count}"
    )
    p99 = ms(series(WITH, ALL), 99)
    p99_added = ms(series(WITH, "changes"), 99), ms(series(WITH, "live"), 99)
    within = p99 < 1000 * budget  # a read still running at the budget's end counts the whole budget
    print(
        f"(a) p99 wait {p99:.1f} ms (changes {p99_added[0]:.1f}, live {p99_added[1]:.1f}) "
        f"within the budget {1000 * budget:.0f} ms: {within}"
    )
    p99_ratio = p99 / ms(series(WITHOUT, ALL), 99) if ms(series(WITHOUT, ALL), 99) > 0 else math.inf
    print(f"added_reads_wait_p99_ratio: {p99_ratio:.2f}")
    return p99_ratio, within


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--alerts", type=int, default=ALERTS, help=f"alerts per configuration (default {ALERTS})"
    )
    parser.add_argument(
        "--spacing",
        type=float,
        default=SPACING,
        help=f"seconds at least between one bot's alerts (default {SPACING:g})",
    )
    args = parser.parse_args(argv)
    if args.alerts < 1 or args.spacing < 0:
        parser.error("--alerts must be at least 1 and --spacing not negative")
    with tempfile.TemporaryDirectory(prefix="proxybot-bench-reads-") as tmp:
        workdir = Path(tmp)
        (workdir / "prometheus").mkdir()
        with (
            SimServer(scenario=SCENARIO, speed=1, platform=True, hold_at=HELD_AT) as sim,
            FakeSlack(bot_token=BOT_TOKEN, channels=list(CHANNELS.values())) as slack,
            Prometheus(workdir / "prometheus", syncer_jobs(sim), interval="1s") as prometheus,
        ):
            prometheus.wait_for_scrapes()
            paths = configs(sim, workdir, slack, prometheus, args.alerts)
            budget = load_config(paths[WITH]).settings.enrichment.timeout_seconds
            with (
                BotProcess(paths[WITH], workdir / WITH / "bot.log") as with_reads,
                BotProcess(paths[WITHOUT], workdir / WITHOUT / "bot.log") as without,
            ):
                runs = {
                    name: Run(bot, StoreView(workdir / name / "bot.db"), [])
                    for name, bot in ((WITH, with_reads), (WITHOUT, without))
                }
                asyncio.run(measure(runs, slack, args.alerts, args.spacing))
    _, within = report(runs, budget, args.spacing)
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
