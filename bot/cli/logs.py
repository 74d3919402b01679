"""`proxybot logs TARGET [--since 10m]`: the client control plane's log lines that the vendor's log reference
explains, per pod, with their meaning and the action to take.

Exit 0 when every pod was read and no line calls for action, 1 when a line does or a pod could not be
read, 2 for bad usage (nothing is requested then).
"""

from __future__ import annotations

import argparse

from bot.checks.logs import check_logs
from bot.cli.console import Console, ConsoleCommand
from bot.cli.output import finish, from_grammar, load_settings_for, refuse, run_check
from bot.errors import ConfigError, InputError
from bot.reads.context import resolve_target
from bot.reads.control_plane_logs import SINCE_MAX_LINES, TAIL_LINES, parse_since
from bot.render.checks_logs import logs_message


def logs_subcommand(args: argparse.Namespace, console: Console) -> int:
    """Read every control-plane pod of TARGET's client and match the log reference."""
    try:
        settings = load_settings_for(args, console)
        ref = resolve_target(settings, args.target)
        since = parse_since(args.since)
    except (InputError, ConfigError) as err:
        return refuse(args, console, "logs", err)
    result = run_check(
        settings,
        console,
        lambda ctx: check_logs(ctx, ref, since=since),
        f"reading the control-plane logs of {ref.cluster.name}…",
    )
    return finish(args, console, result.as_dict(), logs_message(result))


CONSOLE_COMMANDS: tuple[ConsoleCommand, ...] = (
    ConsoleCommand(
        name="logs",
        add_arguments=from_grammar("logs", SINCE_MAX_LINES=SINCE_MAX_LINES, TAIL_LINES=TAIL_LINES),
        run=logs_subcommand,
    ),
)
