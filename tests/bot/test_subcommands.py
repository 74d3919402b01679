"""The one table of subcommands (bot/subcommands.py) against every front end: `/proxy`'s grammar, help,
access and planners, and `proxybot`'s commands. A subcommand missing from any of them fails here."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest
from pydantic import SecretStr

import bot.cli
from bot.cli.console import ConsoleCommand
from bot.cli.main import build_parser, console_subcommand
from bot.render.help import HELP, help_message
from bot.subcommands import BY_NAME, CONSOLE, SLASH, SUBCOMMANDS, Access
from config.settings import Requester, Settings
from handlers.command_access import allowed_subcommands
from handlers.command_args import USAGES, parse_invocation
from handlers.commands import PLANNERS, named
from tests.fakes.config_data import cluster, config

OPS = Requester("U0ALICE", "C0OPS", "ops", False)


def declared_console_commands() -> dict[str, str]:
    """Every `ConsoleCommand` any bot/cli module declares in its CONSOLE_COMMANDS: name -> module."""
    found: dict[str, str] = {}
    for info in pkgutil.iter_modules([str(Path(bot.cli.__file__).parent)]):
        module = importlib.import_module(f"bot.cli.{info.name}")
        for sub in getattr(module, "CONSOLE_COMMANDS", ()):
            assert isinstance(sub, ConsoleCommand)
            assert sub.name not in found, f"{sub.name} declared twice"
            found[sub.name] = module.__name__
    return found


def test_names_are_unique_and_each_has_a_front_end() -> None:
    names = [spec.name for spec in SUBCOMMANDS]
    assert len(names) == len(set(names))
    assert all(spec.slash is not None or spec.cli is not None for spec in SUBCOMMANDS)
    assert all(spec.console_help for spec in CONSOLE)


def test_every_slash_subcommand_has_a_planner_or_names_its_check_and_every_planner_a_subcommand() -> None:
    checked = {name for name, slash in SLASH.items() if slash.check is not None}
    assert set(PLANNERS) | checked == set(SLASH)
    assert not set(PLANNERS) & checked  # one way each
    for name in checked:
        slash = SLASH[name]
        assert slash.view is not None
        assert callable(named(slash.check))
        assert callable(named(slash.view))
        assert slash.grammar.positionals[0] == "TARGET", name  # the table's checks take one TARGET


def test_every_slash_subcommand_parses_by_its_grammar() -> None:
    assert set(USAGES) == set(SLASH)
    for name, slash in SLASH.items():
        words = [p.split("|")[0].lower() for p in slash.grammar.positionals if not p.endswith("?")]
        assert parse_invocation(" ".join([name, *words])).sub == name


def test_help_lists_every_slash_subcommand_but_help_itself() -> None:
    assert set(HELP) == set(SLASH) - {"help"}
    text = str(help_message(set(SLASH), channel="`#ops`").blocks)
    for name in HELP:
        assert f"/proxy {SLASH[name].usage.split()[0]}" in text


def test_access_grants_every_slash_subcommand_to_a_place_granted_everything() -> None:
    data = config(
        clusters=[cluster("prod"), cluster("stage")],
        access={"channels": [{"channel": "#ops", "clusters": ["*"]}], "silencers": [OPS.user]},
    )
    data["slack"]["bot_token"] = SecretStr("xoxb-test")
    settings = Settings.model_validate(data)
    assert allowed_subcommands(settings, OPS, silences=True, digest=True) == set(SLASH)
    nobody = Requester("U0BOB", "D0BOB", None, True)
    anyone = {name for name, slash in SLASH.items() if slash.access is Access.ANYONE}
    assert allowed_subcommands(settings, nobody, silences=True, digest=True) == anyone == {"help"}


def test_every_console_command_is_declared_by_the_module_the_table_names() -> None:
    declared = declared_console_commands()
    assert declared == {spec.name: spec.cli for spec in CONSOLE}
    for spec in CONSOLE:
        assert console_subcommand(spec).name == spec.name


@pytest.mark.parametrize("name", [spec.name for spec in CONSOLE])
def test_the_parser_of_one_command_imports_only_it_and_runs_it(name: str) -> None:
    parser = build_parser(argv=[name])
    [subparsers] = [a for a in parser._actions if a.dest == "subcommand"]
    assert set(subparsers.choices) == {spec.name for spec in CONSOLE}  # type: ignore[attr-defined]
    assert subparsers.choices[name].get_default("run") is console_subcommand(BY_NAME[name]).run  # type: ignore[attr-defined]
    others = [n for n in subparsers.choices if n != name]  # type: ignore[attr-defined]
    assert all(subparsers.choices[n].get_default("run") is None for n in others)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", [spec.name for spec in CONSOLE if spec.slash is not None])
def test_a_console_command_reads_the_words_of_its_slash_grammar(name: str) -> None:
    [subparsers] = [a for a in build_parser(argv=[name])._actions if a.dest == "subcommand"]
    actions = subparsers.choices[name]._actions  # type: ignore[attr-defined]
    grammar = SLASH[name].grammar
    flags = {flag for action in actions for flag in action.option_strings}
    assert set(grammar.options) <= flags
    positionals = [action.metavar for action in actions if not action.option_strings]
    assert positionals == [p.rstrip("?") for p in grammar.positionals]
    required = {flag for action in actions if action.required for flag in action.option_strings}
    assert required == {flag for flag, option in grammar.options.items() if option.required}
