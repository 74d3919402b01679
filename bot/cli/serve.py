"""`proxybot serve`: the bot built by the composition root (`bot.compose`), served over HTTP until stopped."""

from __future__ import annotations

import asyncio
import gc
import logging

import uvicorn

from bot.compose import Bot, open_bot
from bot.digest.pool import DigestPool
from config.settings import Settings

log = logging.getLogger(__name__)


async def serve(bot: Bot, host: str, port: int) -> None:
    """Serve HTTP until stopped (SIGINT/SIGTERM), then release everything."""
    # No access log: uvicorn writes each line synchronously on the event loop, which a webhook storm
    # turns into a stall; /metrics counts what the log would have said.
    config = uvicorn.Config(bot.app, host=host, port=port, log_level="info", lifespan="on", access_log=False)
    try:
        await uvicorn.Server(config).serve()
    finally:
        await bot.close()


def run_serve(settings: Settings, host: str | None, port: int | None) -> int:
    async def main() -> None:
        bot = await open_bot(settings)
        # Everything built so far (the imported libraries, the bot's parts) lives as long as the process.
        # Freezing it keeps the collector from walking it on every full collection: those walks were
        # 100 ms stalls of the event loop during a webhook storm (bench/storm.py p99 ~150 ms -> ~15 ms).
        gc.collect()
        gc.freeze()
        say_what_it_costs(bot)
        await serve(bot, host or settings.server.host, port or settings.server.port)

    asyncio.run(main())
    return 0


def say_what_it_costs(bot: Bot) -> None:
    """One line at start: the process's memory now (also on /metrics) and how many digest workers it keeps."""
    rss = bot.deps.metrics.rss_bytes()
    workers = bot.pool.workers if isinstance(bot.pool, DigestPool) else 0
    memory = "unknown" if rss is None else f"{rss / 2**20:.0f} MiB"
    log.info("serve: RSS %s before serving; %d digest worker process(es) start with it", memory, workers)
