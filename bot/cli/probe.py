"""`proxybot probe TARGET [--gv G/V --resource R --namespace N] [--repeat N]`, and what every check
command shares: `--config`/`--json`, refusing bad input with exit 2 before any request, a progress line
on stderr when the work takes more than a second, and one JSON object or the terminal view on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from bot.checks.context import CheckContext
from bot.checks.probe import MAX_REPEAT, check_repeat, probe_request, run_probe
from bot.cli.console import Command, Console
from bot.errors import ConfigError, InputError
from bot.render.blocks import Message
from bot.render.checks_probe import probe_message
from bot.render.terminal import Style, colour_enabled, show
from config.loader import config_path, load_config
from config.settings import Settings

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
PROGRESS_AFTER = 1.0
R = TypeVar("R")


# -- shared by the check commands ---------------------------------------------------------------------


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    default = "$PROXYBOT_CONFIG, else config/proxybot.yaml"
    parser.add_argument("--config", type=Path, metavar="F", help=f"config file (default: {default})")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def load_settings_for(args: argparse.Namespace, console: Console) -> Settings:
    return load_config(config_path(args.config, console.env), env=console.env, purpose="check").settings


def refuse(args: argparse.Namespace, console: Console, check: str, err: InputError | ConfigError) -> int:
    """Bad usage, config or target: say why and exit 2 (nothing was requested)."""
    problems = err.problems if isinstance(err, ConfigError) else [str(err)]
    if args.json:
        console.say(json.dumps({"check": check, "passed": False, "verdict": "refused", "errors": problems}))
    else:
        for problem in problems:
            console.warn(f"error: {problem}")
    return EXIT_USAGE


async def with_progress(work: Awaitable[R], console: Console, text: str, after: float = PROGRESS_AFTER) -> R:
    """`work`'s result; `text` goes to stderr if it takes longer than `after` seconds."""

    async def note() -> None:
        await asyncio.sleep(after)
        console.warn(text)

    task = asyncio.create_task(note())
    try:
        return await work
    finally:
        task.cancel()


def run_check(
    settings: Settings, console: Console, work: Callable[[CheckContext], Awaitable[R]], progress: str
) -> R:
    """Run one check with its own context (readers closed afterwards) on a fresh event loop."""

    async def main() -> R:
        ctx = CheckContext(settings)
        try:
            return await with_progress(work(ctx), console, progress)
        finally:
            await ctx.aclose()

    return asyncio.run(main())


def finish(args: argparse.Namespace, console: Console, report: dict[str, Any], view: Message | str) -> int:
    """Print the JSON report or the terminal view (the Slack message, or text of its own); exit 0 when
    the check passed, 1 when it failed.
    """
    if args.json:
        console.say(json.dumps(report, default=str))
    elif isinstance(view, str):
        console.say(view)
    else:
        console.say(show(view, style=Style(colour_enabled(console.out, console.env))))
    return EXIT_OK if report["passed"] else EXIT_FAILED


def now() -> datetime:
    return datetime.now(UTC)


# -- probe --------------------------------------------------------------------------------------------


def _probe_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)
    parser.add_argument("target", metavar="TARGET", help="a configured target, <project>/<name>")
    parser.add_argument("--gv", metavar="G/V", help="group/version (one of the target's group_versions)")
    parser.add_argument("--resource", metavar="R", help="plural resource name (default: the target's probe)")
    parser.add_argument("--namespace", metavar="N", help="namespace (default: the target's probe)")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help=f"requests in a series, 1-{MAX_REPEAT} (default 1)"
    )


def probe_command(args: argparse.Namespace, console: Console) -> int:
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


COMMANDS: tuple[Command, ...] = (
    Command(
        name="probe",
        help="the guide's synthetic probe: GET /apis/<gv>/namespaces/<ns>/<resource>?limit=1 via the client",
        add_arguments=_probe_arguments,
        run=probe_command,
    ),
)
