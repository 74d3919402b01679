"""`proxybot fleet [--json]`: the fleet as the bot sees it: each client, where it came from, its problems.

Exit 0: read and sound; 1: read, with problems (a client vCluster would refuse, an instance malformed, a
refinement of no client); 2: it cannot be read (the error names the platform and what it answered).
"""

from __future__ import annotations

import argparse

from bot.cli.console import Console, ConsoleCommand
from bot.cli.output import EXIT_USAGE, add_common_arguments, finish
from bot.errors import ConfigError, PlatformError
from bot.render.fleet import fleet_message
from config.fields import LocatedProblems
from config.loader import config_path, load_config


def fleet_subcommand(args: argparse.Namespace, console: Console) -> int:
    from bot.fleet.reading import read_once
    from bot.fleet.report import fleet_report, unreadable

    try:
        settings = load_config(config_path(args.config, console.env), env=console.env).settings
    except ConfigError as err:
        for problem in err.problems:
            console.warn(f"error: {problem}")
        return EXIT_USAGE
    try:
        _, fleet = read_once(settings)
    except (PlatformError, LocatedProblems) as err:
        report = unreadable(settings, str(err))
        finish(args, console, report.as_dict(), fleet_message(report))
        return EXIT_USAGE
    report = fleet_report(settings, fleet)
    return finish(args, console, report.as_dict(), fleet_message(report))


CONSOLE_COMMANDS: tuple[ConsoleCommand, ...] = (
    ConsoleCommand(name="fleet", add_arguments=add_common_arguments, run=fleet_subcommand),
)
