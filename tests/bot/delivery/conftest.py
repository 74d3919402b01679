"""Fixtures of the delivery tests: the fake Slack over HTTP (channels by name and by ID), a SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.store import Store, open_store
from tests.bot.delivery.test_worker import ALERTS, ALERTS_ID, TOKEN
from tests.fakes.slack_api import FakeSlack


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    channels = {"C1": ALERTS, "C2": "#other", "C0A": "#ca", "C0B": "#cb", ALERTS_ID: "#by-id"}
    with FakeSlack(bot_token=TOKEN, channels=channels) as slack:
        yield slack


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'proxybot.db'}"


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    opened = await open_store(db_url)
    yield opened
    await opened.close()
