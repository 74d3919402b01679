"""On-call events on both backends: recorded once per key, read back per episode and per kind."""

from __future__ import annotations

from bot.domain.resolution import EventKind, OncallEvent
from bot.store import Store

CHANNEL, GROUP = "C1", '{}:{alertname="ResourceProxyNoHealthyPeers"}'


def event(key: str, kind: EventKind, at: float, episode: float = 100.0, detail: str = "") -> OncallEvent:
    return OncallEvent(key, CHANNEL, GROUP, episode, kind, at, "U1", detail)


async def test_an_event_is_recorded_once_per_key(store: Store) -> None:
    first = event("check:1", EventKind.PROBE, 120.0, detail="Probe team-a/db: ok")
    assert await store.record_event(first)
    assert not await store.record_event(event("check:1", EventKind.PROBE, 130.0, detail="again"))
    assert await store.episode_events(CHANNEL, GROUP, 100.0) == [first]


async def test_events_are_read_per_episode_and_per_kind_oldest_first(store: Store) -> None:
    later = event("esc:1", EventKind.ESCALATED, 700.0)
    earlier = event("check:2", EventKind.PATH_CHECK, 160.0)
    other_episode = event("check:3", EventKind.PROBE, 5000.0, episode=4000.0)
    resolved = event("resolved:1", EventKind.RESOLVED, 900.0, detail="{}")
    for e in (later, earlier, other_episode, resolved):
        assert await store.record_event(e)
    assert await store.episode_events(CHANNEL, GROUP, 100.0) == [earlier, later, resolved]
    assert await store.events_since(EventKind.RESOLVED, 800.0) == [resolved]
    assert await store.events_since(EventKind.RESOLVED, 901.0) == []
