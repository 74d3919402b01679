"""`proxybot digest [--post] [--config F] [--json]`: build the fleet digest now.

Without `--post` it is printed (the Slack message as the terminal shows it, or `--json`) and nothing is
recorded, so the next scheduled digest still compares against the last *posted* one. With `--post` it is
posted straight to Slack (`SlackClient`, `slack.api_url`; the charts into its thread) and recorded as a
manual digest in the store, exactly as `/proxy digest` does. Exit 0 when every target is healthy and every
probe CronJob succeeds, 1 otherwise (also when posting failed), 2 for a bad config.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from bot.cli.console import Console, ConsoleCommand
from bot.cli.output import (
    EXIT_FAILED,
    EXIT_OK,
    from_grammar,
    load_settings_for,
    refuse,
    with_progress,
)
from bot.clients.prometheus import PrometheusClient
from bot.clients.slack import SlackClient
from bot.digest.fleet import ContextCronJobs, ContextTriage
from bot.digest.runner import BuiltDigest, DigestRunner, DigestSources, DirectPoster
from bot.errors import ConfigError, InputError, UpstreamError
from bot.reads.context import CheckContext
from bot.render.terminal import Style, colour_enabled, show
from bot.store import open_store
from config.settings import Settings

PREVIEW = "preview"


def _post_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--post", action="store_true", help="post it to the digest channel (with its charts)")


@asynccontextmanager
async def open_runner(settings: Settings, *, post: bool) -> AsyncIterator[DigestRunner]:
    """A runner over fresh readers, the configured store and Prometheus, released afterwards."""
    async with AsyncExitStack() as stack:
        ctx = CheckContext(settings)
        stack.push_async_callback(ctx.aclose)
        store = await open_store(settings.store.url.get_secret_value())
        stack.push_async_callback(store.close)
        prometheus = None
        if settings.prometheus.url is not None:
            prometheus = await stack.enter_async_context(PrometheusClient.from_settings(settings.prometheus))
        live = await ctx.live()
        slack = SlackClient.from_settings(settings.slack) if post else None
        sources = DigestSources(
            live.read,
            ContextCronJobs(ctx),
            prometheus,
            triage=ContextTriage(ctx),
            workspace=None if slack is None else slack.workspace_url,
        )
        poster = DirectPoster(slack) if slack is not None else None
        yield DigestRunner(settings, store, sources, poster)


async def _digest(settings: Settings, post: bool) -> BuiltDigest:
    async with open_runner(settings, post=post) as runner:
        if post:
            return await runner.post_now()
        return await runner.build(PREVIEW, record_sample=False)


def digest_subcommand(args: argparse.Namespace, console: Console) -> int:
    """Build the digest now; print it, or post it with `--post`."""
    try:
        settings = load_settings_for(args, console)
        if args.post and settings.slack.bot_token is None:
            raise ConfigError(["slack.bot_token: required for --post"])
    except (InputError, ConfigError) as err:
        return refuse(args, console, "digest", err)
    try:
        built = asyncio.run(with_progress(_digest(settings, args.post), console, "reading every cluster…"))
    except UpstreamError as err:
        console.warn(f"error: the digest was not posted: {err}")
        return EXIT_FAILED
    report = {
        **built.digest.as_dict(),
        "posted": bool(args.post),
        "charts": [c.filename for c in built.charts],
    }
    if args.json:
        console.say(json.dumps(report, default=str))
    else:
        console.say(show(built.message, style=Style(colour_enabled(console.out, console.env))))
        if args.post:
            console.say(f"posted to {settings.digest_channel()} with {len(built.charts)} charts")
    return EXIT_OK if report["passed"] else EXIT_FAILED


CONSOLE_COMMANDS: tuple[ConsoleCommand, ...] = (
    ConsoleCommand(
        name="digest",
        add_arguments=from_grammar("digest", _post_argument),
        run=digest_subcommand,
    ),
)
