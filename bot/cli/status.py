"""`proxybot status [TARGET]`, `proxybot peers TARGET` and `proxybot reasons TARGET [--window 15m]`."""

from __future__ import annotations

import argparse
from contextlib import AsyncExitStack

from bot.checks.status import parse_window, run_reasons, run_status
from bot.cli.console import Console, ConsoleCommand
from bot.cli.output import finish, from_grammar, load_settings_for, now, refuse, run_check
from bot.clients.prometheus import PrometheusClient
from bot.domain.status_result import ReasonsResult
from bot.errors import ConfigError, InputError
from bot.reads.context import CheckContext, resolve_target
from bot.render.checks_status import peers_message, reasons_message, status_message
from config.settings import Settings


def _live(args: argparse.Namespace, console: Console, check: str) -> int:
    try:
        settings = load_settings_for(args, console)
        if args.target is not None:
            resolve_target(settings, args.target)
    except (InputError, ConfigError) as err:
        return refuse(args, console, check, err)
    what = args.target or "every target"
    result = run_check(settings, console, lambda ctx: run_status(ctx, args.target), f"reading {what}…")
    report = {**result.as_dict(), "check": check}
    shown = peers_message(result, now()) if check == "peers" else status_message(result, now())
    return finish(args, console, report, shown)


def status_subcommand(args: argparse.Namespace, console: Console) -> int:
    """Live state of one or every target and the diagnosis; exit 1 on any warning or worse."""
    return _live(args, console, "status")


def peers_subcommand(args: argparse.Namespace, console: Console) -> int:
    """The peer caches of one target per group/version and replica, under its verdict."""
    return _live(args, console, "peers")


async def _reasons(ctx: CheckContext, settings: Settings, target: str, window: int) -> ReasonsResult:
    async with AsyncExitStack() as stack:
        prometheus = None
        if settings.prometheus.url is not None:
            prometheus = await stack.enter_async_context(PrometheusClient.from_settings(settings.prometheus))
        return await run_reasons(ctx, target, window=window, prometheus=prometheus)


def reasons_subcommand(args: argparse.Namespace, console: Console) -> int:
    """Outcome reasons per counter family with meanings; exit 1 when a proxy-fault reason counted."""
    try:
        settings = load_settings_for(args, console)
        resolve_target(settings, args.target)
        window = parse_window(args.window)
    except (InputError, ConfigError) as err:
        return refuse(args, console, "reasons", err)
    result = run_check(
        settings, console, lambda ctx: _reasons(ctx, settings, args.target, window), f"reading {args.target}…"
    )
    return finish(args, console, result.as_dict(), reasons_message(result))


CONSOLE_COMMANDS: tuple[ConsoleCommand, ...] = (
    ConsoleCommand("status", from_grammar("status"), status_subcommand),
    ConsoleCommand("peers", from_grammar("peers"), peers_subcommand),
    ConsoleCommand("reasons", from_grammar("reasons"), reasons_subcommand),
)
