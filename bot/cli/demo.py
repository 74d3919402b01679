"""`proxybot demo`: the whole alert flow on one machine, with no Slack, cluster or Prometheus.

The simulator serves a scenario's tenant clusters over HTTPS; its alerting model sends the webhooks a real
Prometheus + Alertmanager would send for the shipped rules; the real bot (`open_bot`, the same one
`serve` runs) receives them on its `/alertmanager` endpoint, reads live state from the simulated clusters
and posts to a Slack-compatible fake server, which prints every message (and every edit) in the terminal.

The demo is where the bot and the simulator meet, so it is imported only by `bot.cli.main` (which also
reads the scenario names and runs `proxybot sim`).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import uvicorn
import yaml

from bot.compose import open_bot
from bot.render.terminal import Style, show_message
from config.loader import parse_config
from config.settings import Settings
from sim.alerting import AlertSimulator, WebhookDeliveryError, post_webhook
from sim.scenarios import SCENARIOS
from sim.server import SimServer
from sim.slack_api import FakeSlack, Message

CHANNEL = "#proxy-alerts"
DEFAULT_SPEED = 20.0
FILE_LINES = 12  # lines of an uploaded file shown (a storm's table: its title, header and first rows)


@dataclass
class TerminalSlack:
    """Prints what reaches the fake Slack, as Slack would show it, one message at a time."""

    out: TextIO
    style: Style
    started: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)
    shown: int = 0

    def message(self, msg: Message, kind: str) -> None:
        elapsed = time.monotonic() - self.started
        where = "thread reply" if msg.thread_ts else kind
        heading = f"#{msg.channel_name} · +{elapsed:4.1f}s" + ("" if kind == "edited" else f" · {where}")
        text = show_message(
            msg.text,
            msg.blocks,
            style=self.style,
            edited=kind == "edited",
            thread_reply=msg.thread_ts is not None,
            heading=heading,
        )
        self.say(text + "\n")
        self.shown += 1

    def upload(self, upload: dict[str, Any]) -> None:
        """A file shared in a thread (a storm's table): its name and its first rows."""
        elapsed = time.monotonic() - self.started
        where = "file in thread" if upload.get("thread_ts") else "file"
        lines = bytes(upload.get("content") or b"").decode(errors="replace").splitlines()
        shown = lines[:FILE_LINES]
        more = f"\n  … {len(lines) - FILE_LINES} more lines" if len(lines) > FILE_LINES else ""
        heading = f"── {where} · +{elapsed:4.1f}s · {upload.get('filename')}: {upload.get('title')}"
        self.say("\n".join([self.style.bold(heading), *(f"  {line}" for line in shown)]) + more + "\n")

    def say(self, text: str) -> None:
        with self.lock:
            print(text, file=self.out, flush=True)


def demo_settings(sim_config: Path, slack: FakeSlack, webhook_token: str, workdir: Path) -> Settings:
    """The simulator's config plus a Slack pointing at the fake, a webhook token and a scratch store."""
    data = yaml.safe_load(sim_config.read_text())
    data["slack"] = {
        "bot_token": slack.bot_token,
        # Nothing sends Slack events to the demo; /slack/events still verifies them like in production.
        "signing_secret": secrets.token_hex(16),
        "api_url": slack.api_url,
        "default_channel": CHANNEL,
    }
    data["alertmanager"] = {"url": "http://127.0.0.1:9/", "webhook_token": webhook_token}
    data["store"] = {"url": f"sqlite:///{workdir / 'demo.db'}"}
    data.setdefault("digest", {})["enabled"] = False
    return parse_config(yaml.safe_dump(data), base_dir=sim_config.parent, env={}, purpose="demo").settings


class AlertFeed(threading.Thread):
    """Ticks the simulated Prometheus + Alertmanager and posts each webhook to the bot, in order."""

    def __init__(self, srv: SimServer, url: str, token: str, sink: TerminalSlack) -> None:
        super().__init__(name="demo-alerts", daemon=True)
        self.stop = threading.Event()
        self.sent = 0
        self._srv, self._url, self._token, self._sink = srv, url, token, sink
        self._alerts = AlertSimulator(srv.world, deliver=self._deliver)
        self._logged = 0

    def _deliver(self, body: bytes) -> None:
        post_webhook(self._url, self._token, body, timeout=5.0)
        self.sent += 1

    def run(self) -> None:
        period = 15.0 / self._srv.speed / 2
        while not self.stop.wait(period):
            with self._srv.lock:
                self._narrate()
                try:
                    self._alerts.tick()
                except WebhookDeliveryError as err:  # resent, in order, on the next tick
                    self._sink.say(f"  (webhook delivery failed, will retry: {err})")

    def _narrate(self) -> None:
        for at, what in self._srv.world.log[self._logged :]:
            self._sink.say(f"── simulator t={at:5.0f}s: {what}")
        self._logged = len(self._srv.world.log)


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


async def _run_bot(settings: Settings, sock: socket.socket, duration: float, feed: AlertFeed) -> None:
    bot = await open_bot(settings, warm_interval=2.0)
    config = uvicorn.Config(bot.app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
            await asyncio.sleep(0.05)
        feed.start()
        await asyncio.sleep(duration)
    finally:
        feed.stop.set()
        server.should_exit = True
        await task
        await bot.close()


def run_demo(scenario: str, speed: float | None, duration: float, out: TextIO, style: Style) -> int:
    """Run one scenario through the real bot for `duration` wall seconds, printing Slack as it goes
    (at `speed`, else the scenario's own demo speed, else DEFAULT_SPEED)."""
    if speed is None:
        speed = SCENARIOS[scenario].demo_speed or DEFAULT_SPEED
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sink = TerminalSlack(out, style)
    token = secrets.token_urlsafe(24)
    sock = _free_socket()
    port = sock.getsockname()[1]
    with (
        tempfile.TemporaryDirectory(prefix="proxybot-demo-") as tmp,
        SimServer(scenario=scenario, speed=speed) as srv,
        FakeSlack(
            bot_token=f"xoxb-demo-{secrets.token_hex(8)}",
            channels=[CHANNEL],
            on_message=sink.message,
            on_upload=sink.upload,
        ) as slack,
    ):
        settings = demo_settings(srv.write_config(Path(tmp) / "proxybot.yaml"), slack, token, Path(tmp))
        feed = AlertFeed(srv, f"http://127.0.0.1:{port}/alertmanager", token, sink)
        now = datetime.now(UTC).strftime("%H:%M:%S")
        sink.say(
            f"proxybot demo · scenario {scenario} at {speed:g}x · {now} UTC · {duration:g}s\n"
            f"simulated clusters on {srv.base_url}; bot on http://127.0.0.1:{port}; "
            f"Slack rendered below (channel {CHANNEL})\n"
        )
        try:
            asyncio.run(_run_bot(settings, sock, duration, feed))
        except KeyboardInterrupt:
            sink.say("stopped")
        sink.say(f"done: {feed.sent} webhooks delivered, {sink.shown} Slack messages and edits shown")
    return 0
