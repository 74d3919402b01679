"""`proxybot verify [--cluster NAME]`: the guide's "Verify the monitoring works", one line per piece.

Exit 0 only when every line passes; 1 when any line fails or could not be checked (no `prometheus.url`,
no `control_plane`): unverified monitoring is not a pass. 2 for bad usage or config.
"""

from __future__ import annotations

import argparse
from typing import Any

from bot.checks.verify import check_verify, chosen_clusters, open_prometheus
from bot.cli.console import Console, ConsoleCommand
from bot.cli.output import finish, from_grammar, load_settings_for, refuse, run_check
from bot.domain.verify_result import VerifyResult
from bot.errors import ConfigError, InputError
from bot.reads.context import CheckContext
from bot.render.checks_verify import verify_message
from config.clusters import ClusterSettings


def verify_report(result: VerifyResult) -> dict[str, Any]:
    """The result as one JSON-ready object."""
    return {
        "check": "verify",
        "passed": result.passed,
        "verdict": result.outcome.value,
        "lines": [
            {
                "key": line.key,
                "cluster": line.cluster,
                "outcome": line.outcome.value,
                "summary": line.summary,
                "evidence": list(line.evidence),
                "fix": line.fix,
            }
            for line in result.lines
        ],
    }


async def _verify(ctx: CheckContext, clusters: tuple[ClusterSettings, ...]) -> VerifyResult:
    prometheus = open_prometheus(ctx.settings, ctx.timeout)
    try:
        return await check_verify(ctx, prometheus, clusters=clusters)
    finally:
        if prometheus is not None:
            await prometheus.aclose()


def verify_subcommand(args: argparse.Namespace, console: Console) -> int:
    """Scrape up, rules loaded, probe CronJob running and visible, /metrics/syncer readable."""
    try:
        settings = load_settings_for(args, console)
        clusters = chosen_clusters(settings, args.cluster)
    except (InputError, ConfigError) as err:
        return refuse(args, console, "verify", err)
    result = run_check(settings, console, lambda ctx: _verify(ctx, clusters), "verifying the monitoring…")
    return finish(args, console, verify_report(result), verify_message(result))


CONSOLE_COMMANDS: tuple[ConsoleCommand, ...] = (
    ConsoleCommand(
        name="verify",
        add_arguments=from_grammar("verify"),
        run=verify_subcommand,
    ),
)
