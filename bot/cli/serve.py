"""`proxybot serve`: the bot built by the composition root (`bot.compose`), served over HTTP until stopped.

A stop (SIGTERM, as Kubernetes sends it, or SIGINT) drains first, then shuts down as uvicorn does:
1. at once, new webhooks are answered 503 with `Retry-After` (Alertmanager retries: another replica, or this
   one restarted) and `/readyz` fails, for at least `DRAIN_SECONDS`;
2. meanwhile the outbox sends no new Slack call and gives the calls in flight `STOP_GRACE` seconds to end
   (one cut off stays pending, marked, and is looked for in Slack before it is sent again);
3. then uvicorn closes the listener, ends the connections (`SHUTDOWN_SECONDS`), and the app's workers and
   clients are stopped. A second signal skips what is left of the drain.
Everything pending stays in the store for the next start or replica; the process is gone well within 10 s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import signal
import time
from collections.abc import Iterator
from types import FrameType

import uvicorn
from uvicorn.config import STARTUP_FAILURE

from bot.cli.console import Console, ConsoleCommand
from bot.cli.output import EXIT_USAGE, add_config_argument
from bot.compose import Bot, open_bot
from bot.digest.pool import DigestPool
from bot.errors import ProxybotError
from bot.fleet.derive import Fleet
from bot.fleet.watch import FleetWatch
from bot.inbound.protocol import BoundedHttpToolsProtocol
from config.loader import config_path, load_config
from config.settings import Settings

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# At least this long answering 503, rather than refusing connections, while the pod leaves its Service: an
# answer tells the sender for sure that nothing was stored; a closing keep-alive connection does not.
DRAIN_SECONDS = 1.0
# How long the Slack calls in flight get to end once stopping.
STOP_GRACE = 3.0
# How long uvicorn waits for open connections (a slow client's body) before it cancels them.
SHUTDOWN_SECONDS = 2
# The collector's thresholds while serving (Python's: 700, 10, 10): a young collection every 50 000 net
# allocations, a full one after 100 older ones (and only once the old objects grew by a quarter). A full
# collection walks everything made since the freeze holding the GIL, from whichever thread allocated, so
# the event loop waits it out: during a 1 000-alert storm those were the longest stalls, 20-55 ms
# (`bench/ack.py --profile`); with these none ran during the storm. Reference counting frees what it
# always did; only garbage in cycles waits longer.
GC_THRESHOLDS = (50_000, 20, 100)


class Stopped(Exception):
    """SIGINT or SIGTERM: `serve` stops, releasing everything on the way out."""


async def serve(bot: Bot, host: str, port: int, watch: FleetWatch | None = None) -> Fleet | None:
    """Serve HTTP until stopped (SIGINT/SIGTERM), then release everything. With `watch`, also until the
    platform's fleet changes: then the bot drains as for a stop and the new fleet is returned."""
    # No access log: uvicorn writes each line synchronously on the event loop, which a webhook storm
    # turns into a stall; /metrics counts what the log would have said.
    config = uvicorn.Config(
        bot.app,
        host=host,
        port=port,
        log_level="info",
        lifespan="on",
        access_log=False,
        # httptools (a dependency), not uvicorn's pure-Python h11: a storm's intake is CPU-bound; with
        # the bounds on a request's head that uvicorn does not set (size, time, open connections).
        http=BoundedHttpToolsProtocol,
        timeout_graceful_shutdown=SHUTDOWN_SECONDS,
    )
    server = DrainingServer(config, bot)
    changed: Fleet | None = None

    async def follow(watch: FleetWatch) -> None:
        nonlocal changed
        changed = await watch.changed()
        await server.drain_for("the fleet changed")

    following = asyncio.create_task(follow(watch), name="proxybot-fleet") if watch else None
    try:
        await server.serve()
    finally:
        if following is not None:
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await following
        await bot.close()
    return changed


class DrainingServer(uvicorn.Server):
    """uvicorn's server, whose first stop signal drains the bot before uvicorn's own shutdown begins.

    uvicorn installs `handle_exit` as the SIGINT/SIGTERM handler while it serves (and raises the signal
    again once it has stopped, which `stopping_by_exception` turns into `Stopped`); this one flips the
    bot's stopping flag first, and hands the signal to uvicorn once the drain is over."""

    def __init__(self, config: uvicorn.Config, bot: Bot) -> None:
        super().__init__(config)
        self._bot = bot
        self._drain_started = False
        self._drain_task: asyncio.Task[None] | None = None  # held here: the loop keeps only a weak one

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._drain_started or not self.started:  # a second signal, or not serving yet: stop now
            super().handle_exit(sig, frame)
            return
        self._drain_started = True
        self._bot.deps.stopping.begin(signal.Signals(sig).name)  # a flag: safe inside a signal handler
        asyncio.get_running_loop().call_soon_threadsafe(self._start_drain, sig)

    async def drain_for(self, why: str) -> None:
        """Drain as for a stop signal, then stop serving (uvicorn's own shutdown), for `why`."""
        if self._drain_started:
            return
        self._drain_started = True
        self._bot.deps.stopping.begin(why)
        log.info("%s: rebuilding; new webhooks get 503, Slack calls in flight get %g s", why, STOP_GRACE)
        started = time.monotonic()
        try:
            await self._bot.delivery.stop(STOP_GRACE)
            await asyncio.sleep(max(0.0, DRAIN_SECONDS - (time.monotonic() - started)))
        finally:
            self.should_exit = True

    def _start_drain(self, sig: int) -> None:
        self._drain_task = asyncio.create_task(self._drain(sig), name="proxybot-drain")

    async def _drain(self, sig: int) -> None:
        started = time.monotonic()
        name = signal.Signals(sig).name
        log.info("%s: stopping; new webhooks get 503, Slack calls in flight get %g s", name, STOP_GRACE)
        try:
            await self._bot.delivery.stop(STOP_GRACE)
            await asyncio.sleep(max(0.0, DRAIN_SECONDS - (time.monotonic() - started)))
        finally:
            super().handle_exit(sig, None)


def run_serve(settings: Settings, host: str | None, port: int | None, console: Console) -> int:
    """Serve until stopped; a failure to start (the store, a client, the port) is one line and exit 2."""

    async def main() -> int:
        watch = FleetWatch(settings) if settings.platform is not None else None
        try:
            fleet = await watch.first() if watch is not None else None
        except ProxybotError as err:  # a key the platform refuses, a platform not there at the first start
            console.warn(f"proxybot serve cannot start: {err}")
            return EXIT_USAGE
        try:
            while True:
                over = settings if fleet is None else settings.with_fleet(fleet.clusters)
                try:
                    bot = await open_bot(over, fleet=watch)
                except ProxybotError as err:  # a store or client that cannot be opened says which and why
                    console.warn(f"proxybot serve cannot start: {err}")
                    return EXIT_USAGE
                settle_collector()
                say_what_it_costs(bot)
                changed = await serve(bot, host or settings.server.host, port or settings.server.port, watch)
                if changed is None:
                    return 0
                fleet = changed
        finally:
            if watch is not None:
                await watch.aclose()

    with stopping_by_exception():
        try:
            return asyncio.run(main())
        except Stopped as stop:
            log.info("stopped by %s", stop)
        except SystemExit as exit_:
            # uvicorn logs why it could not start (the port is taken, the app's startup failed), then exits.
            if exit_.code == STARTUP_FAILURE:
                return EXIT_USAGE
            raise
    return 0


def settle_collector() -> None:
    """Before serving: everything built so far frozen out of the collector's walks, and its collections
    made rarer (`GC_THRESHOLDS`)."""
    # Everything built so far (the imported libraries, the bot's parts) lives as long as the process.
    # Freezing it keeps the collector from walking it on every full collection: those walks were
    # 100 ms stalls of the event loop during a webhook storm (bench/storm.py p99 ~150 ms -> ~15 ms).
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


@contextlib.contextmanager
def stopping_by_exception() -> Iterator[None]:
    """SIGINT and SIGTERM raise `Stopped` (where uvicorn does not handle them itself).

    uvicorn shuts down on either signal and then raises it again with the handler it found: with the
    default SIGTERM handler that killed the process before `bot.close()` ran, so the digest's worker
    processes and their forkserver outlived the bot. An exception runs every `finally` on its way out.
    """
    previous = {sig: signal.signal(sig, _raise_stopped) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signal.Signals(signum).name)


def say_what_it_costs(bot: Bot) -> None:
    """One line at start: the process's memory now (also on /metrics) and how many digest workers it keeps."""
    rss = bot.deps.metrics.rss_bytes()
    workers = bot.pool.workers if isinstance(bot.pool, DigestPool) else 0
    memory = "unknown" if rss is None else f"{rss / 2**20:.0f} MiB"
    log.info("serve: RSS %s before serving; %d digest worker process(es) start with it", memory, workers)


def _serve_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--host", help="address to listen on (default: server.host, 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default: server.port, 8080)")


def _serve(args: argparse.Namespace, console: Console) -> int:
    """The bot: HTTP server (webhook, Slack, health, metrics) and its workers, until stopped."""
    loaded = load_config(config_path(args.config, console.env), env=console.env, purpose="serve")
    level = getattr(logging, loaded.settings.server.log_level.upper())
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for warning in loaded.warnings:
        console.warn(f"warning: {warning}")
    return run_serve(loaded.settings, args.host, args.port, console)


CONSOLE_COMMANDS: tuple[ConsoleCommand, ...] = (ConsoleCommand("serve", _serve_arguments, _serve),)
