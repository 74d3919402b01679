"""`proxybot probe TARGET [--gv G/V --resource R --namespace N] [--repeat N]`: the guide's synthetic probe."""

from __future__ import annotations

import argparse

from bot.checks.probe import MAX_REPEAT, check_repeat, probe_request
from bot.checks.probe_run import run_probe
from bot.cli.console import Console, ConsoleCommand
from bot.cli.output import finish, from_grammar, load_settings_for, refuse, run_check
from bot.errors import ConfigError, InputError
from bot.render.checks_probe import probe_message


def probe_subcommand(args: argparse.Namespace, console: Console) -> int:
    """The guide's synthetic probe through the client cluster, classified with evidence."""
    try:
        settings = load_settings_for(args, console)
        request = probe_request(
            settings, args.target, group_version=args.gv, resource=args.resource, namespace=args.namespace
        )
        repeat = check_repeat(args.repeat)
    except (InputError, ConfigError) as err:
        return refuse(args, console, "probe", err)
    result = run_check(
        settings, console, lambda ctx: run_probe(ctx, request, repeat=repeat), f"probing {request.target}…"
    )
    return finish(args, console, result.as_dict(), probe_message(result))


CONSOLE_COMMANDS: tuple[ConsoleCommand, ...] = (
    ConsoleCommand(
        name="probe",
        add_arguments=from_grammar("probe", MAX_REPEAT=MAX_REPEAT),
        run=probe_subcommand,
    ),
)
