"""The last fleet read from each platform, on both backends: replaced by each reading, one per platform."""

from __future__ import annotations

from bot.store import Store
from tests.bot.store.conftest import FakeClock

PLATFORM = "https://platform.example.com"


async def test_the_last_reading_of_a_platform_is_kept_and_replaced(store: Store, clock: FakeClock) -> None:
    assert await store.last_fleet_reading(PLATFORM) is None
    await store.save_fleet_reading(PLATFORM, "p-", '{"items": [1]}')
    clock.advance(60.0)
    await store.save_fleet_reading(PLATFORM, "loft-p-", '{"items": [2]}')
    await store.save_fleet_reading("https://other.example.com", "p-", '{"items": []}')
    last = await store.last_fleet_reading(PLATFORM)
    assert last is not None
    assert (last.prefix, last.instances, last.read_at) == ("loft-p-", '{"items": [2]}', clock())
