"""`proxybot demo`: the whole alert flow on one machine, with no Slack, cluster or Prometheus.

The simulator serves a scenario's tenant clusters over HTTPS; its alerting model sends the webhooks a real
Prometheus + Alertmanager would send for the shipped rules, and its Alertmanager's API (silences, the
alerts it holds: `sim.alertmanager_api`) is the bot's `alertmanager.url`, so *Silence…* makes a silence
there and silenced alerts notify nothing, as Alertmanager's do; the real bot (`open_bot`, the same one
`serve` runs) receives them on its `/alertmanager` endpoint, reads live state from the simulated clusters
and posts to a Slack-compatible fake server, which prints every message (and every edit) in the terminal
and shows them on its page (`sim.slack_page`, the URL on the demo's second line), whose buttons and
`/proxy` box reach the bot signed as Slack signs. `--tour` runs the stops of `bot.cli.demo_tour` one after
another, each with a simulator and a bot of its own, all into the one fake Slack and page.

The demo is where the bot and the simulator meet, so it is imported only by `bot.cli.main` (which also
reads the scenario names and runs `proxybot sim`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import uvicorn
import yaml

from bot.cli.demo_tour import POLL, Stop, StopRun, button_block, has_button, single_stop, tour_stops
from bot.cli.serve import SHUTDOWN_SECONDS
from bot.compose import Bot, Clocks, open_bot
from bot.fleet.watch import FleetWatch
from bot.render.acknowledge import ACK_BLOCK_ID
from bot.render.slack import ACTION_ACK
from bot.render.terminal import Style, show_message
from bot.render.words import counted
from config.loader import parse_config
from config.settings import Settings
from sim.alerting import AlertSimulator, ManagedAlert, WebhookDeliveryError, post_webhook
from sim.alertmanager_api import AlertmanagerApi
from sim.defaults import TARGET
from sim.history import outage, run_sampled
from sim.server import SimServer
from sim.slack_api import FakeSlack, Message
from sim.slack_page import USER_ID as PAGE_USER
from sim.slack_page import SlackPage
from sim.slack_page_view import PNG_MAGIC
from sim.traffic import Traffic

CHANNEL = "#proxy-alerts"
FILE_LINES = 12  # lines of an uploaded file shown (a storm's table: its title, header and first rows)
DAY = 86400.0
# A stop's past day (`Stop.past_day`), in shown seconds from its t=0 a day before the stop's: sampled as the
# bot samples (every half hour; the last half an hour before the stop starts), with an outage of the stop's
# target in the night (03:10 to 05:40 before the tour's 09:40 start). Its world runs `PAST_SPEED` simulated
# seconds per shown second (a stop's runs faster than it shows, this one slower), at a light traffic: a day
# shown is 8640 simulated seconds, which cost a few wall seconds.
PAST_EVERY = 1800.0
PAST_OUTAGE = (DAY - 6.5 * 3600, DAY - 4 * 3600)
PAST_SPEED = 0.1
PAST_TRAFFIC = 1.0  # requests a simulated second per replica and group/version (the scenarios' own: 2)
# The hours the past world's alerting model runs (shown seconds, as `PAST_OUTAGE`): from an hour before the
# outage, so its longest window (an hour) is full, to half an hour after it, its resolve notified. A day
# of its scrapes at the rules' own 15 s would cost half a minute.
PAST_ALERTING = (PAST_OUTAGE[0] - 3600.0, PAST_OUTAGE[1] + 1800.0)
PAST_ACK_AFTER = 11 * 60.0  # shown seconds from the night's message to the on-call's Acknowledge
PAST_WEBHOOK_TIMEOUT = 10.0
DRAIN_SECONDS = 20.0  # a stop not held waits at most this long for its bot's outbox to empty
PAST_WAIT = 60.0  # seconds the past day waits for its bot to deliver, or for its message to change


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
        self.say(text + "\n", shown=True)

    def upload(self, upload: dict[str, Any]) -> None:
        """A file shared in a thread (a storm's table): its name and its first rows."""
        elapsed = time.monotonic() - self.started
        where = "file in thread" if upload.get("thread_ts") else "file"
        content = bytes(upload.get("content") or b"")
        if content.startswith(PNG_MAGIC):  # a chart: no terminal shows it, the page does
            lines = [f"(a PNG image, {len(content)} bytes: shown on the page)"]
        else:
            lines = content.decode(errors="replace").splitlines()
        shown = lines[:FILE_LINES]
        more = f"\n  … {len(lines) - FILE_LINES} more lines" if len(lines) > FILE_LINES else ""
        heading = f"── {where} · +{elapsed:4.1f}s · {upload.get('filename')}: {upload.get('title')}"
        self.say("\n".join([self.style.bold(heading), *(f"  {line}" for line in shown)]) + more + "\n")

    def say(self, text: str, *, shown: bool = False) -> None:
        """`text` printed whole; `shown`: it is a message or an edit, counted under the same lock (the fake
        Slack calls from a thread per request)."""
        with self.lock:
            print(text, file=self.out, flush=True)
            self.shown += shown


def demo_settings(
    sim_config: Path,
    slack: FakeSlack,
    webhook_token: str,
    workdir: Path,
    stop: Stop,
    signing_secret: str,
    alertmanager_url: str,
) -> Settings:
    """The simulator's config plus a Slack pointing at the fake (posting to the stop's channel), the
    simulator's Alertmanager, a webhook token and a scratch store; the page's asker may silence."""
    data = yaml.safe_load(sim_config.read_text())
    data["slack"] = {
        "bot_token": slack.bot_token,
        # The page signs its presses and commands with it, server-side (sim.slack_page).
        "signing_secret": signing_secret,
        "api_url": slack.api_url,
        "default_channel": stop.channel,
    }
    # Silences read every 2 s: a silence made or expired shows at once, a silenced end within seconds.
    data["alertmanager"] = {"url": alertmanager_url, "webhook_token": webhook_token, "poll_interval": "2s"}
    data["store"] = {"url": f"sqlite:///{workdir / 'demo.db'}"}
    # The platform read every 5 s, as fast as it may be: a change (scenario config-change) is kept in the
    # instances' history, and a changed fleet rebuilds the stop's bot, within a few simulated minutes.
    data["platform"]["refresh"] = "5s"
    data["access"] = {"silencers": [PAGE_USER]}
    # A digest only on demand (`/proxy digest`, as the tour types it): never a scheduled or caught-up one.
    data["digest"] = {"enabled": False}
    return parse_config(yaml.safe_dump(data), base_dir=sim_config.parent, env={}, purpose="demo").settings


class AlertFeed(threading.Thread):
    """The simulated Prometheus + Alertmanager, and the webhooks they send posted to the bot, in order.

    The simulator's clock moves the alerting model (`SimServer.advance`), so each scrape, evaluation and
    notification happens at its own simulated second, whatever the machine's speed; what falls due is
    queued, and this thread posts it. With `at_hold`, nothing is posted before the simulation is held (a
    stop whose pictures must not depend on when the bot read what). The alerts it holds and its silences
    are `alertmanager`'s API (silenced alerts are not notified), on the simulated clock.
    """

    def __init__(
        self, srv: SimServer, url: str, token: str, sink: TerminalSlack, tally: Tally, *, at_hold: bool
    ) -> None:
        super().__init__(name="demo-alerts", daemon=True)
        self.stop = threading.Event()
        self.tally = tally
        self._srv, self._url, self._token, self._sink = srv, url, token, sink
        self._at_hold = at_hold
        self.alertmanager = AlertmanagerApi(self._held, clock=srv.shown_time, seed=srv.world.seed)
        self._alerts = AlertSimulator(srv.world, deliver=self._queue, muted=self.alertmanager.silenced_by)
        self._due: list[bytes] = []  # notified, not yet posted (appended under the simulator's lock)
        self._logged = 0
        srv.advance = self._alerts.run_until

    @property
    def quiet(self) -> bool:
        """The simulation is held and everything it notified has been posted."""
        with self._srv.lock:
            return self._srv.held and not self._due

    def _queue(self, body: bytes) -> None:
        self._due.append(body)

    def _held(self) -> list[ManagedAlert]:
        with self._srv.lock:
            return self._alerts.notifier.held()

    def run(self) -> None:
        period = 15.0 / self._srv.speed / 2
        while not self.stop.wait(period):
            with self._srv.lock:
                self._narrate()
                due = list(self._due) if self._srv.held or not self._at_hold else []
            for body in due:
                try:
                    post_webhook(self._url, self._token, body, timeout=5.0)
                except WebhookDeliveryError as err:  # resent, in order, on the next round
                    self._sink.say(f"  (webhook delivery failed, will retry: {err})")
                    break
                with self._srv.lock:
                    self._due.pop(0)
                self.tally.webhooks += 1

    def _narrate(self) -> None:
        for at, what in self._srv.world.log[self._logged :]:
            self._sink.say(f"── simulator t={at:5.0f}s: {what}")
        self._logged = len(self._srv.world.log)


def _free_socket(port: int = 0) -> socket.socket:
    """A loopback socket on `port` (0: a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


@dataclass
class Tally:
    """The webhooks the demo's stops delivered so far (counted as they go, so a Ctrl-C tells them too)."""

    webhooks: int = 0


@dataclass(frozen=True)
class Demo:
    """What every stop of one demo run shares: the fake Slack, its page, the terminal, the secrets."""

    slack: FakeSlack
    page: SlackPage
    sink: TerminalSlack
    signing_secret: str
    webhook_token: str
    # Set: the last stop's bot and the page stay up until it is (Ctrl-C ends a demo run in a terminal).
    hold: threading.Event | None
    tally: Tally = field(default_factory=Tally)


class StopServer(uvicorn.Server):
    """uvicorn's server without its own SIGINT/SIGTERM handlers: a Ctrl-C reaches `asyncio.run`, which
    cancels the stop (its `finally` stops the feed, this server and the bot, in that order).

    uvicorn takes both signals while it serves and raises them again only once it has stopped: the feed
    would go on posting webhooks to a server shutting down. (A Ctrl-C that never arrives is another
    matter: a process started in the background of a script has SIGINT ignored, and so has the demo.)"""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _run_bot(
    demo: Demo,
    stop: Stop,
    settings: Settings,
    sock: socket.socket,
    feed: AlertFeed,
    srv: SimServer,
    last: bool,
) -> None:
    # A held stop's bot lives on the simulated clock (which stops at the hold) and reads nothing before
    # its notifications arrive: its messages are the same on every machine. The others keep warm.
    clocks = Clocks(srv.shown_time, srv.running_time, lambda: srv.shown_time() - srv.world.epoch)
    # The fleet as a newcomer's bot finds it: discovered from the platform stand-in, on the simulated clock,
    # and followed as `serve` follows it (each reading kept as the instances' history; a changed fleet
    # rebuilds the bot behind the same address).
    fleet = FleetWatch(settings, clock=srv.shown_time)
    try:
        found = await fleet.first()
        clients = [f"{c.name} ({counted(len(c.row.targets), 'target')})" for c in found.clients if c.settings]
        unwatched = [c.name for c in found.clients if c.settings is None]
        problems = f"; with problems, not watched: {', '.join(unwatched)}" if unwatched else ""
        demo.sink.say(f"fleet discovered from the platform: {', '.join(clients)}{problems}")
        serving = await _Serving.open(settings.with_fleet(found.clusters), stop, clocks, fleet, sock)
    except BaseException:
        await fleet.aclose()
        raise
    following = asyncio.create_task(_follow(demo, settings, serving, fleet), name="demo-fleet")
    try:
        demo.page.connect(f"http://127.0.0.1:{sock.getsockname()[1]}/slack/events", demo.signing_secret)
        feed.start()

        async def settled() -> bool:
            return feed.quiet and await _idle(serving.bot)

        where = demo.slack.channel_id(stop.channel)
        settle = settled if stop.hold_at is not None else None
        run = StopRun(demo.slack, demo.page, where, demo.sink, feed.alertmanager, settle)
        try:
            await asyncio.wait_for(stop.play(run), stop.seconds)
        except TimeoutError:
            if stop.goal:
                demo.sink.say(f"── (the stop's {stop.seconds:g}s are up before {stop.goal})")
        if stop.tour and stop.hold_at is None:
            # Its alerts stop, and what the bot took of them is all in Slack before it goes: a message and
            # its thread left as one moment shows them, not an edit of one sent and its reply's not.
            feed.stop.set()
            with contextlib.suppress(TimeoutError):
                await _until(lambda: _idle(serving.bot), "the stop's bot to send what it took", DRAIN_SECONDS)
        if last and demo.hold is not None:
            demo.sink.say(f"the page stays up at {demo.page.url}, the bot behind it: Ctrl-C ends the demo")
            while not demo.hold.is_set():  # noqa: ASYNC110 - set from another thread
                await asyncio.sleep(POLL)
    finally:
        feed.stop.set()
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
        try:
            await serving.close()
        finally:
            await fleet.aclose()


async def _idle(bot: Bot) -> bool:
    """Whether `bot` has handled every alert it took and sent everything it queued."""
    store = bot.clients.store
    return await store.pending_count() == 0 and await store.depth() == 0


async def _follow(demo: Demo, settings: Settings, serving: _Serving, fleet: FleetWatch) -> None:
    """Each time the platform's fleet changes, the stop's bot rebuilt over it (the webhooks the feed sends
    meanwhile are sent again, in order, once it answers)."""
    while True:
        changed = await fleet.changed()
        names = ", ".join(c.name for c in changed.clients if c.settings)
        demo.sink.say(f"fleet changed on the platform: {names}; the bot is rebuilt over it")
        await serving.rebuild(settings.with_fleet(changed.clusters))


@dataclass
class _Serving:
    """The stop's bot and its HTTP server on the stop's socket; rebuilt in place when the fleet changes."""

    bot: Bot
    server: StopServer
    task: asyncio.Task[None]
    stop: Stop
    clocks: Clocks
    fleet: FleetWatch
    sock: socket.socket

    @classmethod
    async def open(
        cls, settings: Settings, stop: Stop, clocks: Clocks, fleet: FleetWatch, sock: socket.socket
    ) -> _Serving:
        bot = await _stop_bot(settings, stop, clocks, fleet)
        server, task = await _started(bot, sock)
        return cls(bot, server, task, stop, clocks, fleet, sock)

    async def rebuild(self, settings: Settings) -> None:
        port = self.sock.getsockname()[1]
        await self.close()  # uvicorn closes the socket it served on: the same port is bound again
        self.sock = _free_socket(port)
        self.bot = await _stop_bot(settings, self.stop, self.clocks, self.fleet)
        self.server, self.task = await _started(self.bot, self.sock)

    async def close(self) -> None:
        self.server.should_exit = True
        try:
            await self.task
        finally:
            await self.bot.close()


async def _stop_bot(settings: Settings, stop: Stop, clocks: Clocks, fleet: FleetWatch) -> Bot:
    """A stop's bot: a held stop's reads nothing before its notifications; the others keep warm."""
    return await open_bot(settings, warm_interval=None if stop.hold_at else 2.0, clocks=clocks, fleet=fleet)


async def _started(bot: Bot, sock: socket.socket) -> tuple[StopServer, asyncio.Task[None]]:
    """uvicorn serving `bot` on `sock`, once it answers."""
    # Open connections get serve's bound once the server is told to stop.
    config = uvicorn.Config(
        bot.app, log_level="warning", lifespan="on", timeout_graceful_shutdown=SHUTDOWN_SECONDS
    )
    server = StopServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task  # it failed to start: say why
        await asyncio.sleep(0.05)
    return server, task


async def _past_day(demo: Demo, stop: Stop, workdir: Path) -> int:
    """The day before `stop`, run fast: a simulator of its own (the stop's fleet, healthy but for the
    night's outage of the stop's target), held, its world advanced here, and a bot over it, served, that
    takes a fleet sample every half hour into the stop's store (`workdir`'s), stamped with the past world's
    clock, and gets the night's alerts from the past world's alerting model, as the stop's bot gets the
    stop's: its message in the stop's channel, acknowledged on the page `PAST_ACK_AFTER` after it was posted
    and resolved when the target is back. The stop's digest then charts a day and times an incident.
    Every reading is decided by the simulated clock and the seed. How many samples were taken."""
    if stop.epoch is None:
        raise ValueError("a stop with a past day needs its epoch")
    past = SimServer(
        scenario="healthy",
        speed=PAST_SPEED,
        hold_at=0.0,
        epoch=stop.epoch - DAY,
        platform=True,
        wide=stop.wide,
    )
    if isinstance(past.world.traffic, Traffic):
        past.world.traffic.rate = PAST_TRAFFIC
    past.world.probe_every *= PAST_SPEED  # every 5 shown minutes, as the alerting model judges it
    start, end = (shown * PAST_SPEED for shown in PAST_OUTAGE)
    outage(past.world, TARGET, start, end)
    notified: list[bytes] = []
    # At the real rules' timings on the shown clock (a `for: 2m` is 2 shown minutes, not 20), so the
    # night's alert fires and resolves when the charts show the dip begin and end.
    alerting = AlertSimulator(past.world, time_scale=1.0, deliver=notified.append)
    alertmanager = AlertmanagerApi(alerting.notifier.held, clock=past.shown_time, seed=past.world.seed)
    sock = _free_socket()
    bot_url = f"http://127.0.0.1:{sock.getsockname()[1]}"

    with tempfile.TemporaryDirectory(prefix="proxybot-past-") as tmp, past, alertmanager as am:
        config = past.write_config(Path(tmp) / "proxybot.yaml")
        settings = demo_settings(
            config, demo.slack, demo.webhook_token, workdir, stop, demo.signing_secret, am.url
        )
        # No verification after the night's resolve: its bot's clocks run a night in seconds, so it would
        # fall due in the stop's bot, which would probe crd-store as it goes down again.
        resolution = settings.resolution.model_copy(update={"verify_after": 0.0})
        settings = settings.model_copy(update={"resolution": resolution})
        # The fleet read as the stop's bot reads it, so the night's message tells the instances' history.
        fleet = FleetWatch(settings, clock=past.shown_time)
        try:
            found = await fleet.first()
            clocks = Clocks(past.shown_time, past.running_time, lambda: past.shown_time() - past.world.epoch)
            with_fleet = settings.with_fleet(found.clusters)
            bot = await open_bot(with_fleet, warm_interval=None, clocks=clocks, fleet=fleet)
        except BaseException:
            await fleet.aclose()
            raise
        try:
            runner = bot.digest_runner
            if runner is None:
                raise RuntimeError("the past day's bot has no digest runner")
            server, task = await _started(bot, sock)
            try:
                demo.page.connect(f"{bot_url}/slack/events", demo.signing_secret)
                night = _PastNight(demo, stop, past, alerting, notified, bot, f"{bot_url}/alertmanager")
                until, every = (DAY - PAST_EVERY) * PAST_SPEED, PAST_EVERY * PAST_SPEED
                taken = await run_sampled(
                    past.world, until, runner.sample, every=every, advance=night.advance
                )
                await night.delivered()
                return taken
            finally:
                server.should_exit = True
                await task
        finally:
            try:
                await bot.close()
            finally:
                await fleet.aclose()


@dataclass
class _PastNight:
    """The past day's alerts: its world advanced one alerting interval at a time, what the model notified
    posted to the past bot (and waited for, handled; Slack gets it meanwhile), the night's message
    acknowledged on the page `PAST_ACK_AFTER` shown seconds after its first firing notification. What it
    shows is decided by the simulated clock: the press waits for the message, the world for the press."""

    demo: Demo
    stop: Stop
    past: SimServer
    alerting: AlertSimulator
    notified: list[bytes]
    bot: Bot
    webhook_url: str
    firing_since: float | None = None  # shown time of the first firing notification not acknowledged
    taken: bool = False  # the firing group is acknowledged

    async def advance(self, when: float) -> None:
        step = self.alerting.interval * self.past.world.speed  # simulated seconds between its scrapes
        start, end = (shown * PAST_SPEED for shown in PAST_ALERTING)
        while True:
            with self.past.lock:  # the held server's requests read the world meanwhile
                world = self.past.world
                if start <= world.now() < end:
                    self.alerting.run_until(min(when, world.now() + step, end))
                else:
                    world.advance_to(min(when, start) if world.now() < start else when)
                due, self.notified[:] = list(self.notified), []
                now = world.now()
            for body in due:
                await asyncio.to_thread(
                    post_webhook, self.webhook_url, self.demo.webhook_token, body, PAST_WEBHOOK_TIMEOUT
                )
                self._note(json.loads(body))
            if due:
                await self._handled()
            if self.firing_since is not None and self.past.shown_time() >= self.firing_since + PAST_ACK_AFTER:
                await self._acknowledge()
            if now >= when:
                return

    def _note(self, webhook: dict[str, Any]) -> None:
        if webhook.get("status") != "firing":  # the group resolved (taken or not): a next one is new
            self.firing_since, self.taken = None, False
        elif self.firing_since is None and not self.taken:
            self.firing_since = self.past.shown_time()

    async def _handled(self) -> None:
        store = self.bot.clients.store

        async def done() -> bool:
            return await store.pending_count() == 0

        await _until(done, "the past day's bot to handle its alerts")

    async def delivered(self) -> None:
        store = self.bot.clients.store

        async def done() -> bool:
            return await store.depth() == 0

        await _until(done, "the past day's bot to deliver its messages")

    async def _acknowledge(self) -> None:
        self.firing_since, self.taken = None, True
        channel = self.demo.slack.channel_id(self.stop.channel)

        async def posted() -> bool:
            return any(has_button(m, ACTION_ACK) for m in self.demo.slack.top_level(channel))

        await _until(posted, "the night's message")
        msg = next(m for m in self.demo.slack.top_level(channel) if has_button(m, ACTION_ACK))
        self.demo.sink.say("── the night before: pressed *Acknowledge* on the page")
        await self.demo.page.press(channel, msg.ts, button_block(msg, ACTION_ACK), ACTION_ACK)

        async def taken() -> bool:
            return any(b.get("block_id") == ACK_BLOCK_ID for b in msg.blocks)

        await _until(taken, "the night's message to show who acknowledged it")


async def _until(check: Callable[[], Awaitable[bool]], what: str, seconds: float = PAST_WAIT) -> None:
    """Wait for `check()`, at most `seconds` (then a TimeoutError naming `what`)."""
    deadline = time.monotonic() + seconds
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {seconds:g}s for {what}")
        await asyncio.sleep(POLL)


def _run_stop(demo: Demo, stop: Stop, last: bool) -> None:
    """One scenario through a bot of its own (its own store), into the stop's channel."""
    srv = SimServer(
        scenario=stop.scenario,
        speed=stop.speed,
        hold_at=stop.hold_at,
        epoch=stop.epoch,
        platform=True,
        wide=stop.wide,
    )
    sock = _free_socket()
    bot_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    # Made before the simulator starts, so the alerting model sees its first second.
    url = f"{bot_url}/alertmanager"
    feed = AlertFeed(srv, url, demo.webhook_token, demo.sink, demo.tally, at_hold=stop.feed_at_hold)
    with tempfile.TemporaryDirectory(prefix="proxybot-demo-") as tmp:
        if stop.past_day:  # before the stop's simulator starts: its own run is as without it
            demo.sink.say("the day before, run fast (its night's alerts below), sampled by a bot of its own")
            taken = asyncio.run(_past_day(demo, stop, Path(tmp)))
            demo.sink.say(f"the day before: {counted(taken, 'fleet sample')} in the bot's store")
        with srv, feed.alertmanager as am:
            config = srv.write_config(Path(tmp) / "proxybot.yaml")
            settings = demo_settings(
                config, demo.slack, demo.webhook_token, Path(tmp), stop, demo.signing_secret, am.url
            )
            demo.sink.say(
                f"simulated clusters on {srv.base_url}; Alertmanager on {am.url}; bot on {bot_url}; "
                f"Slack rendered below (channel {stop.channel})\n"
            )
            asyncio.run(_run_bot(demo, stop, settings, sock, feed, srv, last))


def run_demo(
    scenario: str,
    speed: float | None,
    duration: float,
    out: TextIO,
    style: Style,
    *,
    tour: bool = False,
    hold: threading.Event | None = None,
) -> int:
    """Run one scenario through the real bot for `duration` wall seconds (at `speed`, else the scenario's
    own demo speed, else DEFAULT_SPEED), or the tour (`tour_stops`), printing Slack as it goes and showing
    it on the page whose URL comes first. Then, in a terminal (or until `hold` is set), the page stays up
    with the last bot behind it."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    stops = tour_stops(speed) if tour else [single_stop(scenario, speed, duration, CHANNEL)]
    sink = TerminalSlack(out, style)
    slack = FakeSlack(
        bot_token=f"xoxb-demo-{secrets.token_hex(8)}",
        channels=list(dict.fromkeys(s.channel for s in stops)),
        on_message=sink.message,
        on_upload=sink.upload,
    )
    page = SlackPage(slack)
    with slack:
        if hold is None and out.isatty() and sys.stdin.isatty():
            hold = threading.Event()  # never set: Ctrl-C
        demo = Demo(slack, page, sink, secrets.token_hex(16), secrets.token_urlsafe(24), hold)
        sink.say(_banner(stops, page, tour))
        try:
            for i, stop in enumerate(stops, 1):
                sink.say(stop.announcement(i, len(stops), page.url, slack.channel_id(stop.channel)))
                _run_stop(demo, stop, i == len(stops))
        except KeyboardInterrupt:
            sink.say("stopped")
        sent = demo.tally.webhooks
        sink.say(f"done: {sent} webhooks delivered, {sink.shown} Slack messages and edits shown")
    return 0


def _banner(stops: list[Stop], page: SlackPage, tour: bool) -> str:
    now = datetime.now(UTC).strftime("%H:%M:%S")
    first = stops[0]
    what = f"the tour: {len(stops)} scenarios" if tour else f"scenario {first.scenario} at {first.speed:g}x"
    return f"proxybot demo · {what} · {now} UTC\npage: {page.url}  (the channels as Slack shows them, live)\n"
