"""The shipped Slack app manifests (HTTP mode and Socket Mode): `/proxy` with a usage hint naming exactly the
subcommands Slack answers (generated from the table by scripts/slack_manifest.py), the five scopes and no
more, interactivity on, request URLs on /slack/events."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.inbound.slack import EVENTS_PATH
from bot.subcommands import CONSOLE, SLASH
from scripts import slack_manifest

SLACK = Path(__file__).resolve().parents[2] / "config" / "slack"
HTTP_MODE = SLACK / "manifest.yaml"
SOCKET_MODE = SLACK / "manifest.socket-mode.yaml"
MANIFESTS = [HTTP_MODE, SOCKET_MODE]
# The slash command, posting, the charts, and reading back the bot's own posts (public and private channels).
SCOPES = {"commands", "chat:write", "files:write", "channels:history", "groups:history"}
# CLI commands that only make sense on the operator's machine, never in a Slack channel.
LOCAL_ONLY = {"check-config", "check-vcluster", "demo", "serve", "sim"}
# PRODUCT.md: "the same subcommands as the CLI plus `help`, `silence`, `ack TARGET` and `unack TARGET`".
SLACK_ONLY = {"help", "silence", "ack", "unack"}

Json = dict[str, Any]


def load(path: Path) -> Json:
    loaded: Json = yaml.safe_load(path.read_text())
    return loaded


def slash_command(manifest: Json) -> Json:
    (command,) = manifest["features"]["slash_commands"]
    return dict(command)


def hinted_subcommands(hint: str) -> set[str]:
    """`status [TARGET] | peers TARGET | help` -> {status, peers, help}: each alternative's first word."""
    return {alternative.split()[0] for alternative in hint.split("|")}


def slack_subcommands() -> set[str]:
    return set(SLASH)


def test_the_local_and_slack_only_lists_match_the_table() -> None:
    assert {spec.name for spec in CONSOLE} - set(SLASH) == LOCAL_ONLY
    assert set(SLASH) - {spec.name for spec in CONSOLE} == SLACK_ONLY


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_one_slash_command_proxy_with_a_bot_user(path: Path) -> None:
    manifest = load(path)
    assert slash_command(manifest)["command"] == "/proxy"
    assert manifest["features"]["bot_user"]["display_name"]
    assert len(manifest["display_information"]["description"]) <= 140  # Slack's limit


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_usage_hint_names_exactly_what_slack_answers(path: Path) -> None:
    hint = slash_command(load(path))["usage_hint"]
    assert hinted_subcommands(hint) == slack_subcommands()
    assert len(hint) <= 1000  # Slack's limit


def test_hint_parser_reads_alternatives() -> None:
    assert hinted_subcommands("status [TARGET] | peers TARGET|help") == {"status", "peers", "help"}
    assert "serve" not in slack_subcommands()
    assert {"status", "probe", "help", "silence"} <= slack_subcommands()


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_scopes_are_exactly_the_ones_the_bot_uses(path: Path) -> None:
    scopes = load(path)["oauth_config"]["scopes"]
    assert set(scopes) == {"bot"}  # no user scopes at all
    assert set(scopes["bot"]) == SCOPES
    assert len(scopes["bot"]) == len(SCOPES)


def test_http_mode_sends_commands_and_buttons_to_slack_events() -> None:
    manifest = load(HTTP_MODE)
    settings = manifest["settings"]
    assert settings["socket_mode_enabled"] is False
    assert settings["interactivity"]["is_enabled"] is True
    for url in (slash_command(manifest)["url"], settings["interactivity"]["request_url"]):
        assert re.fullmatch(r"https://[^/\s]+" + re.escape(EVENTS_PATH), url), url


def test_socket_mode_has_no_request_urls() -> None:
    manifest = load(SOCKET_MODE)
    settings = manifest["settings"]
    assert settings["socket_mode_enabled"] is True
    assert settings["interactivity"]["is_enabled"] is True
    assert "url" not in slash_command(manifest)
    assert "request_url" not in settings["interactivity"]


def test_the_two_variants_differ_only_in_transport() -> None:
    http, socket = load(HTTP_MODE), load(SOCKET_MODE)
    for manifest in (http, socket):
        manifest["features"]["slash_commands"][0].pop("url", None)
        manifest["settings"]["interactivity"].pop("request_url", None)
        manifest["settings"].pop("socket_mode_enabled")
    assert http == socket


def test_the_committed_usage_hints_are_the_tables() -> None:
    # scripts/slack_manifest.py writes the hint from bot/subcommands.py: edit the table, then run
    # `python -m scripts.slack_manifest write`.
    assert list(slack_manifest.differences()) == []
    assert slack_manifest.main(["check"]) == 0


def test_the_check_names_a_hint_edited_by_hand(tmp_path: Path) -> None:
    edited = tmp_path / HTTP_MODE.name
    edited.write_text(HTTP_MODE.read_text().replace(" | digest", ""))
    [problem] = slack_manifest.differences([edited])
    assert problem.startswith(f"{edited}: usage_hint is not the table's")
    slack_manifest.write([edited])
    assert edited.read_text() == HTTP_MODE.read_text()


def test_the_hint_shows_each_subcommands_positionals_and_help_last() -> None:
    alternatives = slack_manifest.usage_hint().split(" | ")
    assert alternatives[0] == "status [TARGET]"
    assert "silence TARGET [DURATION]" in alternatives
    assert "netpol" in alternatives
    assert alternatives[-1] == "help [SUBCOMMAND]"
