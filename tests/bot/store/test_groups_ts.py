"""A stored message ts survives a save from a state read before the post completed."""

from __future__ import annotations

from bot.domain.alerts import AlertStatus
from bot.store import AlertGroupState, Store


async def test_saving_a_stale_state_keeps_the_stored_ts(store: Store) -> None:
    stale = AlertGroupState(
        channel="C1", group_key="g", status=AlertStatus.FIRING, ts=None, first_firing_at=1.0
    )
    await store.save_group(stale)
    await store.save_group(AlertGroupState(channel="C1", group_key="g", status=AlertStatus.FIRING, ts="1.2"))
    await store.save_group(stale)  # the pipeline's copy, read before the post's ts was stored
    group = await store.get_group("C1", "g")
    assert group is not None
    assert group.ts == "1.2"
