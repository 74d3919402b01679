"""What every check subcommand shares: its arguments from its grammar (bot/subcommands.py) and `--config`/
`--json`, refusing bad input with exit 2 before any request, a progress line on stderr when the work takes
more than a second, and one JSON object or the terminal view on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from bot.cli.console import Console
from bot.errors import ConfigError, InputError, PlatformError
from bot.render.blocks import Message
from bot.render.terminal import Style, colour_enabled, show
from bot.subcommands import ABOUT, SLASH, Option, Takes
from config.fields import LocatedProblems
from config.loader import config_path, load_config
from config.settings import Settings

if TYPE_CHECKING:
    from bot.reads.context import CheckContext

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
PROGRESS_AFTER = 1.0
R = TypeVar("R")
AddArguments = Callable[[argparse.ArgumentParser], None]


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    default = "$PROXYBOT_CONFIG, else config/proxybot.yaml"
    parser.add_argument("--config", type=Path, metavar="F", help=f"config file (default: {default})")


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def from_grammar(name: str, extra: AddArguments | None = None, **facts: object) -> AddArguments:
    """`--config`, `--json`, then the arguments of `name`'s grammar in bot/subcommands.py (the words
    `/proxy NAME` reads too), then `extra`'s own. `facts` are the check's values its help texts name."""
    usage = SLASH[name].grammar

    def add_arguments(parser: argparse.ArgumentParser) -> None:
        add_common_arguments(parser)
        for word in usage.positionals:
            shown = word.rstrip("?")
            nargs = "?" if word.endswith("?") else None
            about = usage.about.get(shown, ABOUT.get(shown, "")).format_map(facts)
            parser.add_argument(shown.lower(), metavar=shown, nargs=nargs, help=about)
        for flag, option in usage.options.items():
            parser.add_argument(flag, **_console_option(option, facts))
        if extra is not None:
            extra(parser)

    return add_arguments


# How argparse reads each `Takes` (a WORDS option on the console: its words, as the shell split them).
_SHAPES: dict[Takes, dict[str, Any]] = {
    Takes.ONE: {},
    Takes.REPEATED: {"action": "append"},
    Takes.SEVERAL: {"nargs": "+"},
    Takes.WORDS: {"nargs": "+"},
}


def _console_option(option: Option, facts: Mapping[str, object]) -> dict[str, Any]:
    kwargs = {**_SHAPES[option.takes], "help": option.help.format_map(facts)}
    if option.metavar is not None:
        kwargs["metavar"] = option.metavar
    if option.number:
        kwargs["type"] = int
    if option.default is not None:
        default = option.default.format_map(facts)
        kwargs["default"] = int(default) if option.number else default
    if option.required:
        kwargs["required"] = True
    return kwargs


def load_settings_for(args: argparse.Namespace, console: Console) -> Settings:
    """The settings a check runs on: the file's, over the platform's fleet when it names one."""
    settings = load_config(config_path(args.config, console.env), env=console.env, purpose="check").settings
    if settings.platform is None:
        return settings
    from bot.fleet.reading import read_once  # the platform's client, only for a platform's config

    try:
        return read_once(settings)[0]
    except (PlatformError, LocatedProblems) as err:
        raise ConfigError([str(err)]) from None


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

    from bot.reads.context import CheckContext  # the kube client, only for a check that reads clusters

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
