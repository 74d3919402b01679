"""Each platform instance's history of what defines its proxy, on both backends: a version recorded only
when the facts change, numbered once whoever records it, bounded, and read back with the version before a
window."""

from __future__ import annotations

import asyncio

from bot.domain.changes import InstanceFacts
from bot.store import Store, open_store
from tests.bot.store.conftest import FakeClock, Raw

PLATFORM = "https://platform.example.com"
CLIENT, TARGET = "platform/team-a", "platform/crd-store"
DAY = 86_400.0


def facts(version: str) -> InstanceFacts:
    return InstanceFacts.of({"experimental": {"proxy": {"customResources": {}}}}, version)


async def record(store: Store, *versions: tuple[str, InstanceFacts], keep: int = 50) -> list[str]:
    return await store.record_instance_versions(PLATFORM, versions, keep=keep, keep_for=7 * DAY)


async def test_a_version_is_recorded_when_the_facts_change(store: Store, clock: FakeClock) -> None:
    assert await record(store, (CLIENT, facts("0.27.3")), (TARGET, facts("0.27.3"))) == [CLIENT, TARGET]
    clock.advance(60.0)
    assert await record(store, (CLIENT, facts("0.27.3")), (TARGET, facts("0.27.3"))) == []
    clock.advance(60.0)
    assert await record(store, (CLIENT, facts("0.27.3")), (TARGET, facts("0.28.1"))) == [TARGET]
    history = await store.instance_history(PLATFORM, TARGET, since=0.0)
    assert [(v.seq, v.at, v.facts) for v in history] == [
        (1, clock() - 120.0, facts("0.27.3")),
        (2, clock(), facts("0.28.1")),
    ]
    assert await store.instance_history(PLATFORM, "platform/unknown", since=0.0) == []
    assert await store.instance_history("https://other.example.com", TARGET, since=0.0) == []


async def test_the_history_since_a_moment_starts_with_the_version_before_it(
    store: Store, clock: FakeClock
) -> None:
    for version in ("1", "2", "3", "4"):
        await record(store, (CLIENT, facts(version)))
        clock.advance(600.0)
    since = clock() - 1300.0  # versions 3 and 4 were read after it
    history = await store.instance_history(PLATFORM, CLIENT, since=since)
    assert [v.facts.version for v in history] == ["2", "3", "4"]
    # Nothing read since: the newest version alone, what the window's state was.
    assert [v.facts.version for v in await store.instance_history(PLATFORM, CLIENT, clock())] == ["4"]


async def test_the_history_is_bounded_and_keeps_the_newest_version(
    store: Store, clock: FakeClock, raw: Raw
) -> None:
    for version in range(10):
        await record(store, (CLIENT, facts(str(version))), keep=3)
        clock.advance(60.0)
    rows = await raw("SELECT seq FROM instance_changes WHERE instance = ? ORDER BY seq", CLIENT)
    assert [r[0] for r in rows] == [8, 9, 10]
    await record(store, (TARGET, facts("old")))
    clock.advance(8 * DAY)
    await record(store, (CLIENT, facts("later")), (TARGET, facts("old")))
    rows = await raw("SELECT instance, seq FROM instance_changes ORDER BY instance, seq")
    # The client's versions older than the days kept are gone; the target's only version stays.
    assert rows == [(TARGET, 1), (CLIENT, 11)]


async def test_two_replicas_recording_one_change_number_it_once(store_url: str, clock: FakeClock) -> None:
    first = await open_store(store_url, clock=clock)
    second = await open_store(store_url, clock=clock)
    try:
        await record(first, (CLIENT, facts("0.27.3")))
        both = await asyncio.gather(
            record(first, (CLIENT, facts("0.28.1"))), record(second, (CLIENT, facts("0.28.1")))
        )
        assert sorted(map(len, both)) == [0, 1]
        history = await second.instance_history(PLATFORM, CLIENT, since=0.0)
        assert [(v.seq, v.facts.version) for v in history] == [(1, "0.27.3"), (2, "0.28.1")]
    finally:
        await first.close()
        await second.close()
