"""`proxybot path TARGET [--samples N]`: direct-vs-relay evidence and the NetworkPolicy check.

Exit 0 when the verdict is *likely direct*, 1 for *likely relayed* or *unknown*, 2 for bad usage.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from bot.checks.path import DEFAULT_SAMPLES, MAX_SAMPLES, check_path, check_samples
from bot.cli.console import Console, ConsoleCommand
from bot.cli.output import finish, from_grammar, load_settings_for, refuse, run_check
from bot.domain.path_result import EndVerdict, LatencySeries, PathResult
from bot.errors import ConfigError, InputError
from bot.reads.context import resolve_target
from bot.render.checks_path import path_message


def _series(series: LatencySeries | None) -> dict[str, Any] | None:
    if series is None:
        return None
    return {
        "answered": len(series.seconds),
        "failures": list(series.failures),
        "min": series.minimum,
        "p50": series.quantile(0.5),
        "p99": series.quantile(0.99),
        "seconds": list(series.seconds),
    }


def _end(end: EndVerdict) -> dict[str, Any]:
    return {
        "namespace": end.pods.namespace,
        "release": end.pods.release,
        "state": end.state.value,
        "permits": end.permits,
        "selecting_policies": list(end.selecting),
        "allowing_rule": end.allowing,
        "detail": end.detail,
    }


def path_report(result: PathResult) -> dict[str, Any]:
    """The result as one JSON-ready object."""
    return {
        "check": "path",
        "passed": result.passed,
        "verdict": result.verdict.value,
        "target": result.target,
        "cluster": result.cluster,
        "request": result.request,
        "client": _series(result.client),
        "direct": _series(result.direct),
        "floor_seconds": result.floor,
        "dial": asdict(result.dial),
        "netpol": {
            "same_control_plane_cluster": result.netpol.same_cluster,
            "permits": result.netpol.permits,
            "client_egress": _end(result.netpol.egress),
            "target_ingress": _end(result.netpol.ingress),
            "platform_egress": list(result.netpol.platform_egress),
        },
        "dial_direct": {"off": result.dial_direct.off, "detail": result.dial_direct.detail},
        "evidence": list(result.evidence),
        "fix": list(result.fix),
    }


def path_subcommand(args: argparse.Namespace, console: Console) -> int:
    """Sample both sides, read the dial histogram and both ends' NetworkPolicies, and weigh them."""
    try:
        settings = load_settings_for(args, console)
        ref = resolve_target(settings, args.target)
        samples = check_samples(args.samples)
    except (InputError, ConfigError) as err:
        return refuse(args, console, "path", err)
    result = run_check(
        settings,
        console,
        lambda ctx: check_path(ctx, ref, samples=samples),
        f"checking the path to {ref.name} (samples, dial latency, NetworkPolicies)…",
    )
    return finish(args, console, path_report(result), path_message(result))


CONSOLE_COMMANDS: tuple[ConsoleCommand, ...] = (
    ConsoleCommand(
        name="path",
        add_arguments=from_grammar("path", MAX_SAMPLES=MAX_SAMPLES, DEFAULT_SAMPLES=DEFAULT_SAMPLES),
        run=path_subcommand,
    ),
)
