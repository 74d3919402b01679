"""`proxybot check-config [--serve] [--json]`: validate the config and print every problem.

Only the settings models are imported (pydantic, through config.loader); `--serve` imports the store and
Slack clients it asks, when it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from bot.cli.console import Console, ConsoleCommand
from bot.cli.output import EXIT_OK, EXIT_USAGE, add_common_arguments
from bot.errors import ConfigError, PlatformError
from bot.lease import lease_problems
from bot.render.blocks import Message
from bot.render.fleet import fleet_message
from bot.render.terminal import Style, colour_enabled, show
from bot.render.words import counted
from config.fields import LocatedProblems
from config.loader import config_path, load_config


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)
    parser.add_argument(
        "--serve",
        action="store_true",
        help="apply the rules of `serve` too: real secrets required, kubeconfig files must exist, the store "
        "answers, Slack takes the token (and has the scopes proxybot uses)",
    )


def check_config(args: argparse.Namespace, console: Console) -> int:
    """Validate the config; print `ok: ...` or every problem as `location: message`."""
    path = config_path(args.config, console.env)
    try:
        loaded = load_config(path, env=console.env, purpose="serve" if args.serve else "check")
    except ConfigError as exc:
        return _refused(console, args, path, exc.problems)
    settings = loaded.settings
    warnings = list(loaded.warnings)
    # What `serve` refuses beyond the settings models: a lease too short for its fencing.
    problems = lease_problems(settings)
    if problems:
        return _refused(console, args, path, problems)
    fleet_view: Message | None = None
    fleet_report: dict[str, object] | None = None
    if args.serve:
        # Imported here: only --serve talks to the store, Slack and the platform.
        from bot.cli.check_live import live_checks

        if settings.platform is not None:
            from bot.fleet.reading import read_once
            from bot.fleet.report import fleet_report as report_of

            try:
                settings, fleet = read_once(settings)
            except (PlatformError, LocatedProblems) as err:
                return _refused(console, args, path, [str(err)])
            found = report_of(settings, fleet)
            warnings += [*found.problems, *(f"{r.name}: {p}" for r in found.rows for p in r.problems)]
            fleet_view, fleet_report = fleet_message(found), found.as_dict()
        live = asyncio.run(live_checks(settings))
        warnings += live.warnings
        if live.problems:
            return _refused(console, args, path, live.problems)
    if args.json:
        report = {
            "ok": True,
            "config": str(path),
            "clusters": len(settings.clusters),
            "targets": settings.target_count(),
            "warnings": warnings,
            "env_overrides": list(loaded.env_overrides),
        }
        if fleet_report is not None:
            report["fleet"] = fleet_report
        console.say(json.dumps(report))
        return EXIT_OK
    for warning in warnings:
        console.warn(f"warning: {warning}")
    if fleet_view is not None:
        console.say(show(fleet_view, style=Style(colour_enabled(console.out, console.env))))
    clusters = counted(len(settings.clusters), "cluster")
    if settings.platform is not None and not args.serve:
        by_hand = f"; {clusters} listed by hand" if settings.clusters else ""
        discovered = f"the fleet is discovered from {settings.platform.url} at start (--serve reads it now)"
        console.say(f"ok: {discovered}{by_hand} ({path})")
        return EXIT_OK
    if fleet_report is not None:
        clusters = counted(len(settings.clusters), "client cluster") + " watched"
    console.say(f"ok: {clusters}, {counted(settings.target_count(), 'target')} ({path})")
    return EXIT_OK


def _refused(console: Console, args: argparse.Namespace, path: Path, problems: list[str]) -> int:
    if args.json:
        console.say(json.dumps({"ok": False, "config": str(path), "problems": problems}))
    else:
        for problem in problems:
            console.warn(problem)
    return EXIT_USAGE


CONSOLE_COMMANDS: tuple[ConsoleCommand, ...] = (ConsoleCommand("check-config", _arguments, check_config),)
