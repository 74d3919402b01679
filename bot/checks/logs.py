"""The logs check: the client control plane's log lines that the vendor's log reference explains, per pod.

    proxybot logs TARGET [--since 10m]     /proxy logs TARGET [--since 10m]

What is read and how: `bot.reads.control_plane_logs`.
"""

from __future__ import annotations

from collections.abc import Awaitable

from bot.domain.logs_result import LogsResult
from bot.reads.context import CheckContext, TargetRef
from bot.reads.control_plane_logs import evidence_for, parse_since, read_control_plane


async def check_logs(ctx: CheckContext, ref: TargetRef, *, since: int | None = None) -> LogsResult:
    """`proxybot logs TARGET` / `/proxy logs TARGET`."""
    logs = await read_control_plane(ctx, ref.cluster, since=since)
    return LogsResult(ref.cluster.name, evidence_for(logs, ref))


def logs_check(ctx: CheckContext, ref: TargetRef, *, since: str | None = None) -> Awaitable[LogsResult]:
    """`/proxy logs TARGET [--since D]` as the subcommand table calls it: `--since` refused now if bad."""
    return check_logs(ctx, ref, since=parse_since(since))
