"""`proxybot serve`: the bot built by the composition root (`bot.compose`), served over HTTP until stopped."""

from __future__ import annotations

import asyncio
import gc

import uvicorn
from uvicorn.config import STARTUP_FAILURE

from bot.cli.console import Console
from bot.cli.output import EXIT_USAGE
from bot.compose import Bot, open_bot
from bot.errors import ProxybotError
from config.settings import Settings


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
        await serve(bot, host or settings.server.host, port or settings.server.port)
        return 0

    try:
        return asyncio.run(main())
    except SystemExit as exit_:
        # uvicorn logs why it could not start (the port is taken, the app's startup failed), then exits.
        if exit_.code == STARTUP_FAILURE:
            return EXIT_USAGE
        raise
