"""Alert group lifecycle per channel: saved, read back, replaced, listed."""

from __future__ import annotations

from dataclasses import replace

from bot.domain.alerts import AlertStatus
from bot.store import AlertGroupState, Store
from tests.bot.domain import alertmanager_samples as samples
from tests.bot.store.conftest import FakeClock

FIRING = AlertGroupState(
    channel="C0ALERTS",
    group_key=samples.GROUP_KEY,
    status=AlertStatus.FIRING,
    first_firing_at=50.0,
    firing_fingerprints=frozenset({samples.FINGERPRINT_A, samples.FINGERPRINT_B}),
)


async def test_an_unknown_group_is_none(store: Store) -> None:
    assert await store.get_group("C0ALERTS", samples.GROUP_KEY) is None


async def test_a_saved_group_reads_back_with_the_time_it_was_saved(store: Store, clock: FakeClock) -> None:
    saved = await store.save_group(FIRING)
    assert saved == replace(FIRING, updated_at=clock.now)
    assert await store.get_group("C0ALERTS", samples.GROUP_KEY) == saved


async def test_the_group_lives_through_post_update_and_resolve(store: Store, clock: FakeClock) -> None:
    await store.save_group(FIRING)
    clock.advance(5)
    posted = await store.save_group(replace(FIRING, ts="1700000000.000100", details={"thread_replies": 0}))
    clock.advance(60)
    one_left = replace(
        posted, firing_fingerprints=frozenset({samples.FINGERPRINT_B}), details={"thread_replies": 1}
    )
    await store.save_group(one_left)
    clock.advance(60)
    resolved = replace(
        one_left, status=AlertStatus.RESOLVED, firing_fingerprints=frozenset(), resolved_at=clock.now
    )
    await store.save_group(resolved)
    read = await store.get_group("C0ALERTS", samples.GROUP_KEY)
    assert read == replace(resolved, updated_at=clock.now)
    assert read is not None
    assert read.ts == "1700000000.000100"
    assert read.first_firing_at == 50.0
    assert read.details == {"thread_replies": 1}


async def test_the_same_group_in_two_channels_is_two_lifecycles(store: Store) -> None:
    await store.save_group(FIRING)
    await store.save_group(replace(FIRING, channel="C0OTHER", status=AlertStatus.RESOLVED))
    first = await store.get_group("C0ALERTS", samples.GROUP_KEY)
    other = await store.get_group("C0OTHER", samples.GROUP_KEY)
    assert first is not None
    assert other is not None
    assert (first.status, other.status) == (AlertStatus.FIRING, AlertStatus.RESOLVED)


async def test_groups_are_listed_by_channel_and_status_least_recently_updated_first(
    store: Store, clock: FakeClock
) -> None:
    keys = ["g1", "g2", "g3"]
    for key in keys:
        clock.advance(1)
        await store.save_group(replace(FIRING, group_key=key))
    clock.advance(1)
    await store.save_group(replace(FIRING, group_key="g1", status=AlertStatus.RESOLVED))
    await store.save_group(replace(FIRING, channel="C0OTHER", group_key="g9"))
    assert [group.group_key for group in await store.groups("C0ALERTS")] == ["g2", "g3", "g1"]
    assert [group.group_key for group in await store.groups("C0ALERTS", AlertStatus.FIRING)] == ["g2", "g3"]
    assert [group.group_key for group in await store.groups(status=AlertStatus.FIRING)] == ["g2", "g3", "g9"]
    assert [group.group_key for group in await store.groups()] == ["g2", "g3", "g1", "g9"]
