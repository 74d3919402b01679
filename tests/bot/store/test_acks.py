"""Acknowledgements on both backends: the first press of an episode wins, a new episode starts clear."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from bot.delivery.keys import post_key, update_key
from bot.domain.alerts import AlertStatus
from bot.store import AlertGroupState, OutboxKind, Store, open_store
from bot.store.models import Acknowledgement

CHANNEL, GROUP = "C1", '{}:{alertname="ResourceProxyNoHealthyPeers"}'


def group(first_firing_at: float, status: AlertStatus = AlertStatus.FIRING) -> AlertGroupState:
    return AlertGroupState(
        channel=CHANNEL, group_key=GROUP, status=status, ts="1.1", first_firing_at=first_firing_at
    )


def ack(user: str, episode: float = 100.0, at: float = 160.0) -> Acknowledgement:
    return Acknowledgement(CHANNEL, GROUP, episode, user, user.lower(), at)


async def test_the_first_acknowledgement_of_an_episode_is_kept(store: Store) -> None:
    await store.save_group(group(100.0))
    assert await store.acknowledgement(CHANNEL, GROUP) is None
    assert await store.acknowledge(ack("U1")) == ack("U1")
    # The second press of the same episode is told who has it, and changes nothing.
    assert await store.acknowledge(ack("U2", at=170.0)) == ack("U1")
    assert await store.acknowledgement(CHANNEL, GROUP) == ack("U1")


async def test_two_presses_at_once_leave_one_holder(store: Store) -> None:
    await store.save_group(group(100.0))
    held = await asyncio.gather(*(store.acknowledge(ack(f"U{i}")) for i in range(8)))
    assert len({h.user for h in held}) == 1
    assert await store.acknowledgement(CHANNEL, GROUP) == held[0]


async def test_a_group_firing_again_after_it_resolved_is_not_acknowledged(store: Store) -> None:
    await store.save_group(group(100.0))
    await store.acknowledge(ack("U1"))
    await store.save_group(group(100.0, AlertStatus.RESOLVED))
    assert await store.acknowledgement(CHANNEL, GROUP) == ack("U1"), "shown on the resolved message"
    await store.save_group(group(900.0))  # a new episode
    assert await store.acknowledgement(CHANNEL, GROUP) is None
    # Its first press replaces the old episode's row.
    assert await store.acknowledge(ack("U2", episode=900.0)) == ack("U2", episode=900.0)
    assert await store.acknowledgement(CHANNEL, GROUP) == ack("U2", episode=900.0)


async def test_unacknowledge_drops_only_the_episode_named(store: Store) -> None:
    await store.save_group(group(100.0))
    await store.acknowledge(ack("U1"))
    assert not await store.unacknowledge(CHANNEL, GROUP, 55.0)
    assert await store.acknowledgement(CHANNEL, GROUP) == ack("U1")
    assert await store.unacknowledge(CHANNEL, GROUP, 100.0)
    assert await store.acknowledgement(CHANNEL, GROUP) is None
    assert not await store.unacknowledge(CHANNEL, GROUP, 100.0)
    assert await store.acknowledge(ack("U2")) == ack("U2")


async def test_an_acknowledgement_survives_reopening(store_url: str) -> None:
    async with await open_store(store_url) as first:
        await first.save_group(group(100.0))
        await first.acknowledge(ack("U1"))
    async with await open_store(store_url) as second:
        assert await second.acknowledgement(CHANNEL, GROUP) == ack("U1")


async def test_last_payload_is_the_newest_post_or_edit_of_the_message(store: Store) -> None:
    post, prefix = post_key(CHANNEL, GROUP), update_key(CHANNEL, GROUP, "")
    assert await store.last_payload(CHANNEL, post, prefix) is None
    await store.enqueue(post, CHANNEL, OutboxKind.POST, {"text": "posted"})
    await store.enqueue(update_key(CHANNEL, GROUP, "n1"), CHANNEL, OutboxKind.UPDATE, {"text": "edit 1"})
    # Neither another group's edit, nor a reply, nor another channel's row is the message's content.
    await store.enqueue(update_key(CHANNEL, GROUP + "x", "n2"), CHANNEL, OutboxKind.UPDATE, {"text": "x"})
    await store.enqueue(f"reply:{CHANNEL}:{GROUP}:n2", CHANNEL, OutboxKind.REPLY, {"text": "reply"})
    await store.enqueue(update_key("C2", GROUP, "n3"), "C2", OutboxKind.UPDATE, {"text": "other"})
    assert await store.last_payload(CHANNEL, post, prefix) == {"text": "edit 1"}


async def test_an_acknowledgement_does_not_touch_the_group(store: Store) -> None:
    saved = await store.save_group(group(100.0))
    await store.acknowledge(ack("U1"))
    found = await store.get_group(CHANNEL, GROUP)
    assert found is not None
    assert replace(found, updated_at=None) == replace(saved, updated_at=None)
