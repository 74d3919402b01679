"""The `proxybot` command line.

Which subcommands there are, and their help lines, is bot/subcommands.py's table (shared with `/proxy`);
each names the bot/cli module whose `CONSOLE_COMMANDS` holds its `ConsoleCommand`: a function that
declares its arguments and one that runs it with the parsed arguments and a `Console` (environment and
output streams), so tests run subcommands in-process with their own environment and no global state.
Only the chosen subcommand's module is imported, so `proxybot --version` or `check-config` never loads
the Kubernetes, Slack, HTTP-server or charting libraries. ("Commands" are `/proxy`'s, in
handlers/commands.py.)
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from bot.cli.console import Console, ConsoleCommand
from bot.errors import ConfigError
from bot.subcommands import BY_NAME, CONSOLE, SubcommandSpec

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2  # also: the configuration is invalid


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    from sim.scenarios import DEMO_DEFAULT, SCENARIOS

    parser.add_argument(
        "--scenario",
        default=DEMO_DEFAULT,
        choices=sorted(SCENARIOS),
        metavar="S",
        help=f"simulated scenario (default: {DEMO_DEFAULT}; `proxybot sim --list` describes them)",
    )
    parser.add_argument(
        "--speed",
        type=float,
        default=None,
        help="simulated seconds per wall second (default 20; the flapping scenario 30)",
    )
    parser.add_argument("--duration", type=float, default=70.0, help="wall seconds to run (default 70)")
    parser.add_argument(
        "--tour", action="store_true", help="every scenario that matters in one run, each announced"
    )


def _demo(args: argparse.Namespace, console: Console) -> int:
    """The embedded default: simulated fleet + the real bot + Slack rendered in the terminal."""
    from bot.cli.demo import run_demo
    from bot.render.terminal import Style, colour_enabled

    if (args.speed is not None and args.speed <= 0) or args.duration <= 0:
        console.warn("--speed and --duration must be positive")
        return EXIT_USAGE
    style = Style(colour_enabled(console.out, console.env))
    return run_demo(args.scenario, args.speed, args.duration, console.out, style, tour=args.tour)


# `sim` is the simulator's own subcommand: imported only when `proxybot sim` is used, so the bot itself
# never depends on the simulator (STYLE.md's import direction).
def _sim_arguments(parser: argparse.ArgumentParser) -> None:
    from sim import cli as sim_cli

    sim_cli.add_arguments(parser)


def _sim(args: argparse.Namespace, console: Console) -> int:
    from sim import cli as sim_cli

    return sim_cli.run(args)


CONSOLE_COMMANDS: tuple[ConsoleCommand, ...] = (
    ConsoleCommand("demo", _demo_arguments, _demo),
    ConsoleCommand("sim", _sim_arguments, _sim),
)


def console_subcommand(spec: SubcommandSpec) -> ConsoleCommand:
    """`proxybot NAME` as its module declares it (imported now)."""
    module = importlib.import_module(spec.cli or "")
    declared: tuple[ConsoleCommand, ...] = getattr(module, "CONSOLE_COMMANDS", ())
    found = [sub for sub in declared if sub.name == spec.name]
    if len(found) != 1:
        raise LookupError(f"{spec.cli}.CONSOLE_COMMANDS has {len(found)} subcommands named {spec.name!r}")
    return found[0]


def console_subcommands() -> tuple[ConsoleCommand, ...]:
    """Every `proxybot` subcommand in the table, each module imported."""
    return tuple(console_subcommand(spec) for spec in CONSOLE)


def version() -> str:
    """`proxybot <version>` of the installed package."""
    from importlib import metadata

    try:
        return f"proxybot {metadata.version('proxybot')}"
    except metadata.PackageNotFoundError:
        return "proxybot (version unknown: the package is not installed; pip install .)"


class _Version(argparse.Action):
    """`--version`, its text read only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(version())  # on stdout, as argparse's own version action
        parser.exit()


def build_parser(
    subcommands: Sequence[ConsoleCommand] | None = None, *, argv: Sequence[str] | None = None
) -> argparse.ArgumentParser:
    """The parser of `subcommands` (default: the table's, every module imported); with `argv`, only the
    subcommand it names is imported and given its arguments (the others are listed by name and help)."""
    parser = argparse.ArgumentParser(
        prog="proxybot", description="Slack chat-ops for the vCluster Platform resource proxy."
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    subparsers = parser.add_subparsers(dest="subcommand", metavar="COMMAND")
    if subcommands is None and argv is None:
        subcommands = console_subcommands()
    chosen = {sub.name: sub for sub in subcommands or ()}
    if argv is not None:
        name = next((word for word in argv if not word.startswith("-")), "")
        if name in BY_NAME and BY_NAME[name].cli is not None:
            chosen[name] = console_subcommand(BY_NAME[name])
    for spec in CONSOLE if subcommands is None else (BY_NAME[sub.name] for sub in subcommands):
        help_line = spec.console_help
        sub = subparsers.add_parser(spec.name, help=help_line, description=help_line)
        if spec.name in chosen:
            chosen[spec.name].add_arguments(sub)
            sub.set_defaults(run=chosen[spec.name].run)
    return parser


def main(argv: Sequence[str] | None = None, *, env: Mapping[str, str] | None = None) -> int:
    """Run one subcommand; returns the exit status (0 ok, 1 check failed, 2 usage or config error)."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv=words)
    args = parser.parse_args(words)
    if args.subcommand is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    console = Console(env=os.environ if env is None else env, out=sys.stdout, err=sys.stderr)
    try:
        status: int = args.run(args, console)
    except ConfigError as exc:
        # Any subcommand that loads the config reports it the same way check-config does.
        for problem in exc.problems:
            console.warn(problem)
        return EXIT_USAGE
    return status
