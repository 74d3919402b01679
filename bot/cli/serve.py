"""`proxybot serve`: the bot built by the composition root (`bot.compose`), served over HTTP until stopped."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import Iterator
from types import FrameType

import uvicorn
from uvicorn.config import STARTUP_FAILURE

from bot.cli.console import Console
from bot.cli.output import EXIT_USAGE
from bot.compose import Bot, open_bot
from bot.digest.pool import DigestPool
from bot.errors import ProxybotError
from config.settings import Settings

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(Exception):
    """SIGINT or SIGTERM: `serve` stops, releasing everything on the way out."""


async def serve(bot: Bot, host: str, port: int) -> None:
    """Serve HTTP until stopped (SIGINT/SIGTERM), then release everything."""
    # No access log: uvicorn writes each line synchronously on the event loop, which a webhook storm
    # turns into a stall; /metrics counts what the log would have said.
    config = uvicorn.Config(bot.app, host=host, port=port, log_level="info", lifespan="on", access_log=False)
    try:
        await uvicorn.Server(config).serve()
    finally:
        await bot.close()


def run_serve(settings: Settings, host: str | None, port: int | None, console: Console) -> int:
    """Serve until stopped; a failure to start (the store, a client, the port) is one line and exit 2."""

    async def main() -> int:
        try:
            bot = await open_bot(settings)
        except ProxybotError as err:  # a store or client that cannot be opened says which and why
            console.warn(f"proxybot serve cannot start: {err}")
            return EXIT_USAGE
        # Everything built so far (the imported libraries, the bot's parts) lives as long as the process.
        # Freezing it keeps the collector from walking it on every full collection: those walks were
        # 100 ms stalls of the event loop during a webhook storm (bench/storm.py p99 ~150 ms -> ~15 ms).
        gc.collect()
        gc.freeze()
        say_what_it_costs(bot)
        await serve(bot, host or settings.server.host, port or settings.server.port)
        return 0

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
