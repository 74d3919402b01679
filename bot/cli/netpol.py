"""`proxybot netpol --client NS/RELEASE --target NS/RELEASE [--cross-cluster CIDR...]`: pure, no cluster."""

from __future__ import annotations

import argparse

from bot.checks.netpol import cross_cluster, netpol, parse_endpoint
from bot.cli.console import Console, ConsoleCommand
from bot.cli.output import finish, from_grammar, refuse
from bot.domain.netpol_result import ANYWHERE_V4, DEFAULT_STUN_PORT, NetpolResult
from bot.errors import InputError


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
        # --config is accepted for uniformity; netpol reads no cluster.
        add_arguments=from_grammar("netpol", ANYWHERE_V4=ANYWHERE_V4, DEFAULT_STUN_PORT=DEFAULT_STUN_PORT),
        run=netpol_subcommand,
    ),
)
