"""Benchmark: `/proxy` ack latency while a 1 000-alert storm is processed and a probed cluster hangs.

Run from the repository root: `.venv/bin/python bench/ack.py`. The bot runs as its own process: the
`serve` app (`build_bot`: real alert pipeline, outbox, live-state warming) with the `/proxy` command
registered on its Slack route, against the simulator and the fake Slack. Its config adds a second client
cluster, `hung`, whose API server accepts connections and never answers; half the commands sent under
load probe a target of it, so their checks hang for the probe's 15 s timeout.

Measured: seconds from POSTing a signed `/proxy` request to its HTTP response (the ack), first with no
load (the baseline), then during the storm (webhooks to `/alertmanager` for 2 s, and on while the bot
processes them). The last line is `ack_p99_ms: <n>` (under load; target <= 100).
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

import httpx
import yaml

from sim.server import SimServer
from sim.slack_api import FakeSlack
from tests.e2e.stack import BOT_TOKEN, SIGNING_SECRET, BotProcess, StoreView, write_bot_config
from tests.e2e.storm_load import fire, percentile, storm_bodies
from tests.handlers.slack_requests import command_body, signed

BASELINE_COMMANDS = 200
LOAD_INTERVAL = 0.05  # a command every 50 ms while the storm runs (far beyond people typing)
LOAD_SECONDS_MAX = 20.0
HUNG_TARGET = "platform/never-answers"
OPS = "C0OPS0001"
TEXTS = (f"probe {HUNG_TARGET}", "status platform/crd-store", f"probe {HUNG_TARGET} --repeat 2", "help")
_keys = itertools.count()


# -- the bot process -----------------------------------------------------------------------------------------


def serve_with_commands(config: Path, port: int) -> None:
    """`proxybot serve` as it is: its Slack route answers `/proxy` and the buttons with the real checks."""
    from bot.serve import build_bot, serve
    from config.loader import load_config

    async def main() -> None:
        settings = load_config(config, env={}, purpose="serve").settings
        await serve(await build_bot(settings), "127.0.0.1", port)

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


async def ack_seconds(client: httpx.AsyncClient, slack: FakeSlack, text: str) -> float:
    body = command_body(
        text, slack.response_url(f"a{next(_keys)}"), user="U0OPS0001", channel=OPS, channel_name="ops"
    )
    headers = signed(body, secret=SIGNING_SECRET)
    started = time.perf_counter()
    response = await client.post("/slack/events", content=body, headers=headers)
    seconds = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"/proxy {text} answered {response.status_code}: {response.text[:200]}")
    return seconds


async def baseline(url: str, slack: FakeSlack) -> list[float]:
    async with httpx.AsyncClient(base_url=url, timeout=30.0) as client:
        return [await ack_seconds(client, slack, TEXTS[i % len(TEXTS)]) for i in range(BASELINE_COMMANDS)]


async def healthz_seconds(client: httpx.AsyncClient) -> float:
    started = time.perf_counter()
    await client.get("/healthz")
    return time.perf_counter() - started


@dataclass
class Load:
    """What was measured during the storm."""

    acks: list[float]
    healthz: list[float]  # GET /healthz alongside every command: how responsive the server is at all
    refused: int  # storm webhooks not answered 2xx


async def under_storm(url: str, slack: FakeSlack, store: StoreView) -> Load:
    """Ack latencies of commands sent every LOAD_INTERVAL during the storm and its processing."""
    bodies = storm_bodies(500)
    storm = asyncio.create_task(fire(url, bodies, seconds=2.0))
    tasks: list[asyncio.Task[float]] = []
    probes: list[asyncio.Task[float]] = []
    async with httpx.AsyncClient(base_url=url, timeout=30.0) as client:
        start = time.perf_counter()
        for i in itertools.count():
            done = storm.done() and store.unprocessed() == 0
            if done or time.perf_counter() - start > LOAD_SECONDS_MAX:
                break
            tasks.append(asyncio.create_task(ack_seconds(client, slack, TEXTS[i % len(TEXTS)])))
            probes.append(asyncio.create_task(healthz_seconds(client)))
            await asyncio.sleep(max(0.0, start + (i + 1) * LOAD_INTERVAL - time.perf_counter()))
        acks = list(await asyncio.gather(*tasks))
        healthz = list(await asyncio.gather(*probes))
    webhooks, _ = await storm
    return Load(acks, healthz, sum(1 for s in webhooks if not 200 <= s.status < 300))


def ms(values: list[float], q: float) -> float:
    return 1000 * percentile(values, q)


def run(workdir: Path) -> int:
    with (
        SimServer(scenario="healthy", speed=20) as sim,
        FakeSlack(bot_token=BOT_TOKEN) as slack,
        never_answering() as hung_port,
    ):
        config = write_bot_config(sim, workdir, slack.api_url)
        add_hung_cluster(config, hung_port)
        command = [sys.executable, str(Path(__file__).resolve()), "--as-bot"]
        with BotProcess(config, workdir / "bot.log", command=command) as bot:
            store = StoreView(workdir / "bot.db")
            quiet = asyncio.run(baseline(bot.url, slack))
            load = asyncio.run(under_storm(bot.url, slack, store))
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
