"""`serve`'s fleet watch: each reading kept in the store, so replicas sharing it serve the same fleet, and a
replica starting while the platform fails serves the reading another kept; a refused key is never served
around."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bot.errors import PlatformError
from bot.fleet.watch import FleetWatch
from config.loader import load_config
from config.settings import Settings
from sim.server import ApiFault, SimServer
from tests.fakes import postgres

postgres_server = postgres.postgres_server


@pytest.fixture(scope="module")
def platform_sim() -> Iterator[SimServer]:
    with SimServer(scenario="healthy", speed=20, platform=True) as srv:
        yield srv


async def settings_on(srv: SimServer, tmp_path: Path, store_url: str) -> Settings:
    config = srv.write_config(tmp_path / "proxybot.yaml")
    doc = yaml.safe_load(config.read_text())
    doc["store"] = {"url": store_url}
    config.write_text(yaml.safe_dump(doc))
    return load_config(config, env={}).settings


def shape(watch: FleetWatch) -> list[tuple[str, tuple[str, ...]]]:
    assert watch.current is not None
    return [
        (c.name, tuple(t.name for t in c.settings.targets) if c.settings else ())
        for c in watch.current.clients
    ]


async def test_two_replicas_on_one_store_serve_the_same_fleet_the_platform_down_for_the_second(
    platform_sim: SimServer, postgres_server: postgres.PostgresServer, tmp_path: Path
) -> None:
    settings = await settings_on(platform_sim, tmp_path, await postgres_server.new_database())
    first, second = FleetWatch(settings, clock=lambda: 1_000.0), FleetWatch(settings, clock=lambda: 2_000.0)
    try:
        await first.first()
        platform_sim.set_platform_fault(ApiFault("error"))
        try:
            await second.first()  # the platform answers 500: the reading the first replica kept
        finally:
            platform_sim.set_platform_fault(None)
        assert shape(second) == shape(first)
        assert [c.name for c in second.current.clients if c.settings] == ["team-a"]  # type: ignore[union-attr]
        health = second.health()
        assert (health.read_at, health.failing_since, health.up) == (1_000.0, 2_000.0, False)
    finally:
        await first.aclose()
        await second.aclose()


async def test_a_refused_key_is_not_served_around_with_a_kept_fleet(
    platform_sim: SimServer, tmp_path: Path
) -> None:
    settings = await settings_on(platform_sim, tmp_path, f"sqlite:///{tmp_path / 'bot.db'}")
    kept = FleetWatch(settings)
    try:
        await kept.first()
    finally:
        await kept.aclose()
    assert settings.platform is not None
    assert settings.platform.access_key_file is not None
    settings.platform.access_key_file.write_text("not-the-key\n")
    refused = FleetWatch(settings)
    try:
        with pytest.raises(PlatformError) as caught:
            await refused.first()
        assert caught.value.status == 401
    finally:
        await refused.aclose()


async def test_without_a_kept_fleet_an_unreachable_platform_stops_the_start(
    platform_sim: SimServer, tmp_path: Path
) -> None:
    settings = await settings_on(platform_sim, tmp_path, f"sqlite:///{tmp_path / 'bot.db'}")
    watch = FleetWatch(settings)
    platform_sim.set_platform_fault(ApiFault("error"))
    try:
        with pytest.raises(PlatformError, match="no fleet read earlier is kept"):
            await watch.first()
    finally:
        platform_sim.set_platform_fault(None)
        await watch.aclose()


async def test_a_slow_platform_is_cut_at_its_timeout_and_the_kept_fleet_served(
    platform_sim: SimServer, tmp_path: Path
) -> None:
    settings = await settings_on(platform_sim, tmp_path, f"sqlite:///{tmp_path / 'bot.db'}")
    assert settings.platform is not None
    settings = settings.model_copy(update={"platform": settings.platform.model_copy(update={"timeout": 1.0})})
    kept = FleetWatch(settings)
    try:
        await kept.first()
    finally:
        await kept.aclose()
    platform_sim.set_platform_fault(ApiFault("slow", seconds=3.0))
    slow = FleetWatch(settings)
    try:
        await slow.first()  # cut after platform.timeout (1 s), not the 3 s the platform takes
        assert shape(slow) == shape(kept)
        assert not slow.health().up
    finally:
        platform_sim.set_platform_fault(None)
        await slow.aclose()
