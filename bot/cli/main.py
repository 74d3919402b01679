"""The `proxybot` command line.

Each subcommand is a `Subcommand` in `SUBCOMMANDS`: a name, a help line, a function that declares its
arguments and a function that runs it with the parsed arguments and a `Console` (environment and output
streams), so tests run subcommands in-process with their own environment and no global state. ("Commands"
are `/proxy`'s, in handlers/commands.py.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

from bot.cli import check_vcluster, digest, logs, netpol, path, probe, status, verify
from bot.cli.console import Console, Subcommand
from bot.errors import ConfigError
from bot.render.words import counted
from config.loader import config_path, load_config

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2  # also: the configuration is invalid


def _add_config_argument(parser: argparse.ArgumentParser) -> None:
    default = "$PROXYBOT_CONFIG, else config/proxybot.yaml"
    parser.add_argument("--config", type=Path, metavar="F", help=f"config file (default: {default})")


def _add_json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def _check_config_arguments(parser: argparse.ArgumentParser) -> None:
    _add_config_argument(parser)
    _add_json_argument(parser)
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
        if args.json:
            console.say(json.dumps({"ok": False, "config": str(path), "problems": exc.problems}))
        else:
            for problem in exc.problems:
                console.warn(problem)
        return EXIT_USAGE
    settings = loaded.settings
    warnings = list(loaded.warnings)
    if args.serve:
        # Imported here: only --serve talks to the store and Slack.
        from bot.cli.check_live import live_checks

        live = asyncio.run(live_checks(settings))
        warnings += live.warnings
        if live.problems:
            if args.json:
                console.say(json.dumps({"ok": False, "config": str(path), "problems": live.problems}))
            else:
                for problem in live.problems:
                    console.warn(problem)
            return EXIT_USAGE
    if args.json:
        report = {
            "ok": True,
            "config": str(path),
            "clusters": len(settings.clusters),
            "targets": settings.target_count(),
            "warnings": warnings,
            "env_overrides": list(loaded.env_overrides),
        }
        console.say(json.dumps(report))
        return EXIT_OK
    for warning in warnings:
        console.warn(f"warning: {warning}")
    clusters = counted(len(settings.clusters), "cluster")
    console.say(f"ok: {clusters}, {counted(settings.target_count(), 'target')} ({path})")
    return EXIT_OK


def _serve_arguments(parser: argparse.ArgumentParser) -> None:
    _add_config_argument(parser)
    parser.add_argument("--host", help="address to listen on (default: server.host, 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default: server.port, 8080)")


def _serve(args: argparse.Namespace, console: Console) -> int:
    """The bot: HTTP server (webhook, Slack, health, metrics) and its workers, until stopped."""
    import logging

    from bot.cli.serve import run_serve

    loaded = load_config(config_path(args.config, console.env), env=console.env, purpose="serve")
    level = getattr(logging, loaded.settings.server.log_level.upper())
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for warning in loaded.warnings:
        console.warn(f"warning: {warning}")
    return run_serve(loaded.settings, args.host, args.port, console)


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


_OWN_SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand(
        name="check-config",
        help="validate the config and print every problem",
        add_arguments=_check_config_arguments,
        run=check_config,
    ),
    Subcommand(
        name="demo",
        help="run everything on this machine: simulated clusters, the bot, Slack shown in the terminal",
        add_arguments=_demo_arguments,
        run=_demo,
    ),
    Subcommand(
        name="serve",
        help="run the bot: webhook intake, Slack, health and metrics endpoints, workers",
        add_arguments=_serve_arguments,
        run=_serve,
    ),
    Subcommand(
        name="sim",
        help="run the simulated client/target tenant clusters alone; write kubeconfigs and a config",
        add_arguments=_sim_arguments,
        run=_sim,
    ),
)


# The checks' subcommands live in bot/cli/ beside this module; this is the one place that lists them.
SUBCOMMANDS: tuple[Subcommand, ...] = (
    *_OWN_SUBCOMMANDS,
    *status.SUBCOMMANDS,
    *probe.SUBCOMMANDS,
    *netpol.SUBCOMMANDS,
    *path.SUBCOMMANDS,
    *verify.SUBCOMMANDS,
    *digest.SUBCOMMANDS,
    *check_vcluster.SUBCOMMANDS,
    *logs.SUBCOMMANDS,
)


def version() -> str:
    """`proxybot <version>` of the installed package."""
    try:
        return f"proxybot {metadata.version('proxybot')}"
    except metadata.PackageNotFoundError:
        return "proxybot (version unknown: the package is not installed; pip install .)"


def build_parser(subcommands: Sequence[Subcommand] = SUBCOMMANDS) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="proxybot", description="Slack chat-ops for the vCluster Platform resource proxy."
    )
    parser.add_argument("--version", action="version", version=version(), help="print the version and exit")
    subparsers = parser.add_subparsers(dest="subcommand", metavar="COMMAND")
    for subcommand in subcommands:
        sub = subparsers.add_parser(subcommand.name, help=subcommand.help, description=subcommand.help)
        subcommand.add_arguments(sub)
        sub.set_defaults(run=subcommand.run)
    return parser


def main(argv: Sequence[str] | None = None, *, env: Mapping[str, str] | None = None) -> int:
    """Run one subcommand; returns the exit status (0 ok, 1 check failed, 2 usage or config error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
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
