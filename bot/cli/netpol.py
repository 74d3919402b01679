"""`proxybot netpol --client NS/RELEASE --target NS/RELEASE [--cross-cluster CIDR...]`: pure, no cluster."""

from __future__ import annotations

import argparse

from bot.checks.netpol import (
    ANYWHERE_V4,
    DEFAULT_STUN_PORT,
    NetpolResult,
    cross_cluster,
    netpol,
    parse_endpoint,
)
from bot.cli.console import Console, ConsoleCommand
from bot.cli.output import add_common_arguments, finish, refuse
from bot.errors import InputError


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)  # --config is accepted for uniformity; netpol reads no cluster
    parser.add_argument("--client", required=True, metavar="NS/RELEASE", help="the client's control plane")
    parser.add_argument("--target", required=True, metavar="NS/RELEASE", help="the target's control plane")
    parser.add_argument(
        "--cross-cluster",
        nargs="+",
        metavar="CIDR",
        help="the ends are on different control plane clusters: CIDRs of the peers' advertised endpoints",
    )
    parser.add_argument(
        "--stun", action="append", metavar="CIDR", help=f"STUN endpoint CIDR (default {ANYWHERE_V4})"
    )
    parser.add_argument(
        "--stun-port", action="append", metavar="PORT", help=f"STUN UDP port (default {DEFAULT_STUN_PORT})"
    )


def netpol_subcommand(args: argparse.Namespace, console: Console) -> int:
    """Both ends' vcluster.yaml NetworkPolicy values, with the reason for each part."""
    try:
        client = parse_endpoint("--client", args.client)
        target = parse_endpoint("--target", args.target)
        cross = cross_cluster(args.cross_cluster or (), args.stun or (), args.stun_port or ())
    except InputError as err:
        return refuse(args, console, "netpol", err)
    result = netpol(client, target, cross)
    return finish(args, console, result.as_dict(), terminal_text(result))


def terminal_text(result: NetpolResult) -> str:
    """The two snippets exactly as they go into vcluster.yaml (indentation matters), then the notes."""
    where = "different control plane clusters" if result.cross else "the same control plane cluster"
    return "\n".join(
        [
            f"# NetworkPolicy values for a direct proxy path ({where})",
            f"# --- client {result.client} ---",
            result.client_values,
            f"# --- target {result.target} ---",
            result.target_values,
            *(f"# {note}" for note in result.notes),
        ]
    )


CONSOLE_COMMANDS: tuple[ConsoleCommand, ...] = (
    ConsoleCommand(
        name="netpol",
        add_arguments=_arguments,
        run=netpol_subcommand,
    ),
)
