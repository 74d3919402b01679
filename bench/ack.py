"""Benchmark: `/proxy` ack latency while a 1 000-alert storm is processed and a probed cluster hangs.

Run from the repository root: `.venv/bin/python bench/ack.py`. The bot runs as its own process: the
`serve` app (`open_bot`: real alert pipeline, outbox, live-state warming) with the `/proxy` command
registered on its Slack route, against the simulator and the fake Slack. Its config adds a second client
cluster, `hung`, whose API server accepts connections and never answers; half the commands sent under
load probe a target of it, so their checks hang for the probe's 15 s timeout.

Measured: seconds from POSTing a signed `/proxy` request to its HTTP response (the ack), first with no
load (the baseline), then during the storm (webhooks to `/alertmanager` for 2 s, and on while the bot
processes them). Every request goes out from load generator processes of their own (bench/loadgen.py),
prepared and signed here, so their work is not counted as the bot's. The last line is `ack_p99_ms: <n>`
(under load; target <= 100).
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

# Run as a script, Python puts bench/ on the path, not the repository root that holds `bot` and `tests`.
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from bench import loadgen
from bench.loadgen import LoadRun, Outcome, Plan, Planned
from sim.server import SimServer
from sim.slack_api import FakeSlack
from tests.e2e.stack import BOT_TOKEN, CHANNEL, SIGNING_SECRET, BotProcess, StoreView, write_bot_config
from tests.e2e.storm_load import percentile, split, storm_bodies, storm_plan
from tests.fakes.slack_requests import command_body, signed

BASELINE_COMMANDS = 200
LOAD_INTERVAL = 0.05  # a command every 50 ms while the storm runs (far beyond people typing)
LOAD_SECONDS_MAX = 20.0
HUNG_TARGET = "platform/never-answers"
OPS = "C0OPS0001"
TEXTS = (f"probe {HUNG_TARGET}", "status platform/crd-store", f"probe {HUNG_TARGET} --repeat 2", "help")
COMMANDS = "commands"
HEALTHZ = "healthz"
_keys = itertools.count()


# -- the bot process -----------------------------------------------------------------------------------------


def serve_with_commands(config: Path, port: int) -> None:
    """`proxybot serve` as it is: its Slack route answers `/proxy` and the buttons with the real checks."""
    from bot.cli.serve import serve
    from bot.compose import open_bot
    from config.loader import load_config

    async def main() -> None:
        settings = load_config(config, env={}, purpose="serve").settings
        await serve(await open_bot(settings), "127.0.0.1", port)

    asyncio.run(main())


# -- a cluster that never answers ------------------------------------------------------------------------


@contextmanager
def never_answering() -> Iterator[int]:
    """A TCP port that accepts connections and never sends a byte (a hung API server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(512)
    held: list[socket.socket] = []
    stop = threading.Event()

    def hold() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()


def add_hung_cluster(config: Path, port: int) -> None:
    """A second client cluster `hung` (its API never answers) and #ops granted every cluster."""
    doc = yaml.safe_load(config.read_text())
    kubeconfig = config.parent / "hung.kubeconfig.yaml"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "hung",
                "clusters": [
                    {
                        "name": "hung",
                        "cluster": {"server": f"https://127.0.0.1:{port}", "insecure-skip-tls-verify": True},
                    }
                ],
                "users": [{"name": "hung", "user": {"token": "never-used"}}],
                "contexts": [{"name": "hung", "context": {"cluster": "hung", "user": "hung"}}],
            }
        )
    )
    probe = {"group_version": "example.com/v1", "resource": "widgets", "namespace": "default"}
    target = {"name": HUNG_TARGET, "group_versions": ["example.com/v1"], "probe": probe}
    doc["clusters"].append(
        {"name": "hung", "kubeconfig": str(kubeconfig), "match": {"cluster": "hung"}, "targets": [target]}
    )
    doc["access"] = {"channels": [{"channel": "#ops", "clusters": ["*"]}]}
    config.write_text(yaml.safe_dump(doc, sort_keys=False))


# -- measuring -------------------------------------------------------------------------------------------


def command(slack: FakeSlack, text: str, offset: float) -> Planned:
    """A signed `/proxy` request (its own response_url), due `offset` seconds into a schedule."""
    body = command_body(
        text, slack.response_url(f"a{next(_keys)}"), user="U0OPS0001", channel=OPS, channel_name="ops"
    )
    headers = signed(body, secret=SIGNING_SECRET)
    return Planned(offset, "POST", "/slack/events", headers, body.encode(), COMMANDS)


def ack_seconds(outcomes: list[Outcome]) -> list[float]:
    """The acks' latencies; any command not answered 200 fails the benchmark."""
    acks = [o for o in outcomes if o.lane == COMMANDS]
    for o in acks:
        if o.status != 200:
            raise RuntimeError(f"a /proxy command was answered {o.status} {o.error}".rstrip())
    return [o.seconds for o in acks]


def baseline(url: str, slack: FakeSlack) -> list[float]:
    # All due at once on one connection: they go one after another, each alone on the server.
    requests = [command(slack, TEXTS[i % len(TEXTS)], 0.0) for i in range(BASELINE_COMMANDS)]
    return ack_seconds(loadgen.run(Plan(url, requests, {COMMANDS: 1}, timeout=30.0)))


def pings(url: str, slack: FakeSlack) -> Plan:
    """A command every LOAD_INTERVAL for LOAD_SECONDS_MAX (stopped earlier), each with a GET /healthz."""
    requests: list[Planned] = []
    for i in range(int(LOAD_SECONDS_MAX / LOAD_INTERVAL)):
        offset = i * LOAD_INTERVAL
        requests += [
            command(slack, TEXTS[i % len(TEXTS)], offset),
            Planned(offset, "GET", "/healthz", lane=HEALTHZ),
        ]
    return Plan(url, requests, {COMMANDS: 8, HEALTHZ: 4}, timeout=30.0)


@dataclass
class Load:
    """What was measured during the storm."""

    acks: list[float]
    healthz: list[float]  # GET /healthz alongside every command: how responsive the server is at all
    refused: int  # storm webhooks not answered 2xx


def under_storm(url: str, slack: FakeSlack, store: StoreView) -> Load:
    """Ack latencies of commands sent every LOAD_INTERVAL during the storm and its processing."""
    storm_load = storm_plan(url, storm_bodies(500), seconds=2.0, probe_path=None, timeout=60.0)
    # Two generator processes: the storm's end (all answered) is known apart from the commands'.
    with LoadRun(storm_load) as storm, LoadRun(pings(url, slack)) as commands:
        storm.started()
        start = commands.started()
        while not (storm.done() and store.unprocessed() == 0) and time.monotonic() - start < LOAD_SECONDS_MAX:
            time.sleep(LOAD_INTERVAL)
        commands.stop()
        measured = commands.outcomes()
        webhooks, _ = split(storm.outcomes())
    healthz = [o.seconds for o in measured if o.lane == HEALTHZ]
    return Load(ack_seconds(measured), healthz, sum(1 for s in webhooks if not 200 <= s.status < 300))


def ms(values: list[float], q: float) -> float:
    return 1000 * percentile(values, q)


def run(workdir: Path) -> int:
    with (
        SimServer(scenario="healthy", speed=20) as sim,
        FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack,
        never_answering() as hung_port,
    ):
        slack.add_channel(OPS, name="#ops")
        config = write_bot_config(sim, workdir, slack.api_url)
        add_hung_cluster(config, hung_port)
        command = [sys.executable, str(Path(__file__).resolve()), "--as-bot"]
        with BotProcess(config, workdir / "bot.log", command=command) as bot:
            store = StoreView(workdir / "bot.db")
            quiet = baseline(bot.url, slack)
            load = under_storm(bot.url, slack, store)
            left = store.unprocessed()
    loaded = load.acks
    print(
        f"baseline (no load): {len(quiet)} commands, p50 {ms(quiet, 50):.1f} ms, p99 {ms(quiet, 99):.1f} ms"
    )
    print(
        f"during the storm (1000 alerts over 500 targets, {HUNG_TARGET} hanging): {len(loaded)} commands, "
        f"p50 {ms(loaded, 50):.1f} ms, p99 {ms(loaded, 99):.1f} ms, max {1000 * max(loaded):.1f} ms"
    )
    print(f"ratio p99 storm/baseline: {ms(loaded, 99) / ms(quiet, 99):.2f}")
    healthz = f"p50 {ms(load.healthz, 50):.1f} ms, p99 {ms(load.healthz, 99):.1f} ms"
    print(f"GET /healthz alongside, during the storm (how responsive the server is at all): {healthz}")
    print(f"storm webhooks not answered 2xx: {load.refused}; notifications unprocessed at the end: {left}")
    print(f"ack_p99_ms: {ms(loaded, 99):.1f}")
    return 0 if ms(loaded, 99) <= 100 else 1


def main() -> int:
    if sys.argv[1:2] == ["--as-bot"]:
        # BotProcess appends `serve --config F --host H --port P`.
        args = sys.argv[2:]
        serve_with_commands(Path(args[args.index("--config") + 1]), int(args[args.index("--port") + 1]))
        return 0
    with tempfile.TemporaryDirectory(prefix="proxybot-bench-ack-") as workdir:
        return run(Path(workdir))


if __name__ == "__main__":
    sys.exit(main())
