"""The pipeline harness as a fixture, for the pipeline's and the storm's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.store import open_store
from tests.fakes.alert_pipeline import Clock, FakeLive, Harness, settings


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    clock = Clock()
    store = await open_store(f"sqlite:///{tmp_path / 'proxybot.db'}", clock=clock)
    h = Harness(store, clock, FakeLive(), settings())
    yield h
    await h.pipeline.aclose()
    await store.close()
