"""Accepting notifications: stored once per identity, pending until processed, in arrival order."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bot.domain.alerts import AlertStatus, parse_webhook
from bot.store import AlertGroupState, Store, open_store
from tests.bot.domain import alertmanager_samples as samples
from tests.bot.store.conftest import FakeClock, Raw


async def accept(store: Store, raw: bytes, at: float = 100.0) -> tuple[int, bool]:
    accepted = await store.accept(raw, parse_webhook(raw), at)
    return accepted.id, accepted.duplicate


async def test_an_accepted_notification_is_pending_with_its_exact_body(store: Store) -> None:
    notification_id, duplicate = await accept(store, samples.FIRING, at=123.5)
    assert not duplicate
    [stored] = await store.pending()
    assert stored.id == notification_id
    assert stored.raw == samples.FIRING
    assert stored.received_at == 123.5
    assert stored.webhook == parse_webhook(samples.FIRING)
    assert stored.identity == parse_webhook(samples.FIRING).identity()
    assert await store.pending_count() == 1


async def test_the_same_body_twice_is_stored_once(store: Store, raw: Raw) -> None:
    first = await accept(store, samples.FIRING)
    again = await accept(store, samples.FIRING, at=130.0)
    assert again == (first[0], True)
    assert len(await store.pending()) == 1
    assert await raw("SELECT count(*), max(duplicates) FROM notifications") == [(1, 1)]


async def test_an_ha_peer_copy_is_a_duplicate(store: Store) -> None:
    first_id, _ = await accept(store, samples.FIRING)
    assert await accept(store, samples.ha_peer_copy(samples.FIRING)) == (first_id, True)
    [stored] = await store.pending()
    # The first delivery's body is the one kept.
    assert stored.raw == samples.FIRING


async def test_a_duplicate_of_a_processed_notification_stays_processed(store: Store) -> None:
    first_id, _ = await accept(store, samples.FIRING)
    assert await store.mark_processed(first_id)
    assert await accept(store, samples.FIRING) == (first_id, True)
    assert await store.pending() == []


async def test_pending_is_oldest_first_and_processed_ones_leave(store: Store, clock: FakeClock) -> None:
    ids = [
        (await accept(store, body))[0]
        for body in (samples.FIRING, samples.ONE_RESOLVED, samples.ALL_RESOLVED)
    ]
    assert [stored.id for stored in await store.pending()] == ids
    assert [stored.id for stored in await store.pending(limit=2)] == ids[:2]
    assert await store.mark_processed(ids[1])
    assert not await store.mark_processed(ids[1])
    assert not await store.mark_processed(9999)
    assert [stored.id for stored in await store.pending()] == [ids[0], ids[2]]


async def test_pending_besides_leaves_those_out_unparsed_and_the_limit_counts_the_others(
    store: Store, raw: Raw
) -> None:
    other = samples.as_dict(samples.FIRING)
    other["groupKey"] = '{}:{alertname="ResourceProxyNoHealthyPeers", target="team-b/search"}'
    bodies = (samples.FIRING, samples.ONE_RESOLVED, samples.ALL_RESOLVED, samples.encode(other))
    ids = [(await accept(store, body))[0] for body in bodies]
    held = {ids[0], ids[2]}  # what the alert worker already has (applied, held open for a storm's row)
    assert [stored.id for stored in await store.pending(besides=held)] == [ids[1], ids[3]]
    assert [stored.id for stored in await store.pending(limit=1, besides=held)] == [ids[1]]
    assert [stored.id for stored in await store.pending(limit=2, besides={ids[1]})] == [ids[0], ids[2]]
    # Left out means not parsed again: a row that would no longer validate is not set aside for it.
    await raw("UPDATE notifications SET body = ? WHERE id = ?", b'{"version": "4"}', ids[0])
    assert [stored.id for stored in await store.pending(besides={ids[0]})] == ids[1:]
    assert await raw("SELECT processed_at FROM notifications WHERE id = ?", ids[0]) == [(None,)]


async def test_truncated_alerts_are_recorded(store: Store, raw: Raw) -> None:
    payload = samples.as_dict(samples.FIRING)
    payload["truncatedAlerts"] = 12
    await accept(store, samples.encode(payload))
    [stored] = await store.pending()
    assert stored.webhook.truncated_alerts == 12
    assert await raw("SELECT truncated_alerts, alert_count, group_key FROM notifications") == [
        (12, 2, samples.GROUP_KEY)
    ]


async def test_a_stored_body_that_no_longer_validates_is_set_aside_with_the_reason(
    store: Store, raw: Raw, clock: FakeClock
) -> None:
    kept, _ = await accept(store, samples.FIRING)
    broken, _ = await accept(store, samples.ALL_RESOLVED)
    # What an older, looser proxybot could have stored: simulated by editing the row behind the store.
    await raw("UPDATE notifications SET body = ? WHERE id = ?", b'{"version": "4"}', broken)
    assert [stored.id for stored in await store.pending()] == [kept]
    [(processed_at, error)] = await raw("SELECT processed_at, error FROM notifications WHERE id = ?", broken)
    assert processed_at == clock.now
    assert error.startswith("groupKey: Field required")


async def test_prune_forgets_old_processed_notifications_only(store: Store, clock: FakeClock) -> None:
    old, _ = await accept(store, samples.FIRING)
    await store.mark_processed(old)
    clock.advance(3600)
    pending_id, _ = await accept(store, samples.ONE_RESOLVED)
    assert await store.prune(before=clock.now - 60) == 1
    assert [stored.id for stored in await store.pending()] == [pending_id]
    # Forgotten means a late copy is accepted again as new: retention is the deduplication window.
    assert (await accept(store, samples.FIRING))[1] is False


async def test_a_reopened_store_keeps_everything(store_url: str, clock: FakeClock) -> None:
    async with await open_store(store_url, clock=clock) as first:
        notification_id, _ = await accept(first, samples.FIRING)
    async with await open_store(store_url, clock=clock) as second:
        assert [stored.id for stored in await second.pending()] == [notification_id]
        assert (await accept(second, samples.FIRING))[1] is True


async def test_a_plain_path_is_a_sqlite_store(db_path: Path, clock: FakeClock) -> None:
    async with await open_store(str(db_path), clock=clock) as first:
        notification_id, _ = await accept(first, samples.FIRING)
    async with await open_store(f"sqlite:///{db_path}", clock=clock) as second:
        assert [stored.id for stored in await second.pending()] == [notification_id]


async def test_a_notification_is_read_by_id_processed_or_not(store: Store) -> None:
    first_id, _ = await accept(store, samples.FIRING)
    assert await store.mark_processed(first_id)
    found = await store.notification(first_id)
    assert found is not None
    assert (found.id, found.raw) == (first_id, samples.FIRING)
    assert found.webhook == parse_webhook(samples.FIRING)
    assert await store.notification(first_id + 1000) is None


async def test_a_group_saved_closing_its_notification_does_both_in_one_call(
    store: Store, clock: FakeClock
) -> None:
    first, _ = await accept(store, samples.FIRING)
    second, _ = await accept(store, samples.ONE_RESOLVED)
    state = AlertGroupState(
        channel="C0ALERTS", group_key=samples.GROUP_KEY, status=AlertStatus.FIRING, first_firing_at=50.0
    )
    saved = await store.save_group_closing(state, first)
    assert saved == replace(state, updated_at=clock.now)
    assert await store.get_group("C0ALERTS", samples.GROUP_KEY) == saved
    assert [stored.id for stored in await store.pending()] == [second]
    # Closing one already closed (a re-run after a crash) still saves the group and closes nothing else.
    again = await store.save_group_closing(replace(state, status=AlertStatus.RESOLVED), first)
    assert again.status is AlertStatus.RESOLVED
    assert [stored.id for stored in await store.pending()] == [second]
    assert not await store.mark_processed(first)
