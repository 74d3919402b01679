"""`check-config --serve`'s live checks: the store answers, Slack takes the token, the history scopes."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from bot.cli.check_live import live_checks
from bot.store import open_store
from bot.store.pg_schema import PG_SCHEMA_VERSION
from config.settings import Settings
from sim.slack_workspace import MANIFEST_SCOPES
from tests.fakes import postgres
from tests.fakes.config_data import config
from tests.fakes.slack_api import FakeSlack

postgres_server = postgres.postgres_server
TOKEN = "xoxb-live-check-token"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=TOKEN) as fake:
        yield fake


def settings(slack_api: str, store_url: str, token: str = TOKEN) -> Settings:
    data = config(store={"url": store_url})
    data["slack"].update(bot_token=token, api_url=slack_api)
    return Settings.model_validate(data)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_store_and_slack_that_answer_pass(slack: FakeSlack, tmp_path: Path) -> None:
    report = await live_checks(settings(slack.api_url, f"sqlite:///{tmp_path / 'bot.db'}"))
    assert (report.problems, report.warnings) == ([], [])


async def test_a_sqlite_store_in_a_directory_that_does_not_exist_is_a_problem(
    slack: FakeSlack, tmp_path: Path
) -> None:
    report = await live_checks(settings(slack.api_url, f"sqlite:///{tmp_path / 'nope' / 'bot.db'}"))
    [problem] = report.problems
    assert problem.startswith(f"store.url: the directory {tmp_path / 'nope'} does not exist")


async def test_a_postgresql_that_answers_passes_and_one_that_does_not_is_named(
    slack: FakeSlack, postgres_server: postgres.PostgresServer
) -> None:
    url = await postgres_server.new_database()
    assert (await live_checks(settings(slack.api_url, url))).problems == []
    down = f"postgresql://bot:hunter2@127.0.0.1:{closed_port()}/proxybot"
    [problem] = (await live_checks(settings(slack.api_url, down), timeout=2)).problems
    assert problem.startswith(f"store.url: cannot connect to postgresql at 127.0.0.1:{down.split(':')[3]}")
    assert "hunter2" not in problem


async def test_a_database_from_a_newer_proxybot_is_a_problem(
    slack: FakeSlack, postgres_server: postgres.PostgresServer
) -> None:
    url = await postgres_server.new_database()
    await (await open_store(url)).close()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("UPDATE proxybot_schema SET version = %s", (PG_SCHEMA_VERSION + 1,))
    [problem] = (await live_checks(settings(slack.api_url, url))).problems
    assert "newer than this proxybot" in problem


async def test_a_token_slack_refuses_is_a_problem(slack: FakeSlack, tmp_path: Path) -> None:
    report = await live_checks(settings(slack.api_url, f"sqlite:///{tmp_path / 'b.db'}", token="xoxb-wrong"))
    assert report.problems == ["slack.bot_token: Slack refused it (invalid_auth)"]
    assert "xoxb-wrong" not in str(report)


async def test_slack_out_of_reach_is_a_warning(tmp_path: Path) -> None:
    api = f"http://127.0.0.1:{closed_port()}/api/"
    report = await live_checks(settings(api, f"sqlite:///{tmp_path / 'b.db'}"), timeout=2)
    assert report.problems == []
    [warning] = report.warnings
    assert warning.startswith("could not reach Slack to check the bot token and its scopes")


async def test_an_app_without_the_history_scopes_is_warned_about(tmp_path: Path) -> None:
    scopes = MANIFEST_SCOPES - {"channels:history", "groups:history"}
    with FakeSlack(bot_token=TOKEN, scopes=scopes) as slack:
        report = await live_checks(settings(slack.api_url, f"sqlite:///{tmp_path / 'b.db'}"))
    [warning] = report.warnings
    assert warning.startswith("the Slack app lacks channels:history, groups:history")
