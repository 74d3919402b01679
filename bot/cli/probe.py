"""`proxybot probe TARGET [--gv G/V --resource R --namespace N] [--repeat N]`: the guide's synthetic probe."""

from __future__ import annotations

import argparse

from bot.checks.probe import MAX_REPEAT, check_repeat, probe_request
from bot.checks.probe_run import run_probe
from bot.cli.console import Console, ConsoleCommand
from bot.cli.output import (
    add_common_arguments,
    add_target_argument,
    finish,
    load_settings_for,
    refuse,
    run_check,
)
from bot.errors import ConfigError, InputError
from bot.render.checks_probe import probe_message


def _probe_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)
    add_target_argument(parser)
    parser.add_argument("--gv", metavar="G/V", help="group/version (one of the target's group_versions)")
    parser.add_argument("--resource", metavar="R", help="plural resource name (default: the target's probe)")
    parser.add_argument("--namespace", metavar="N", help="namespace (default: the target's probe)")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help=f"requests in a series, 1-{MAX_REPEAT} (default 1)"
    )


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
        add_arguments=_probe_arguments,
        run=probe_subcommand,
    ),
)
