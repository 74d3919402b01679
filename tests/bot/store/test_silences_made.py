"""The silences proxybot made, on both backends: recorded once per id, read back for the ids asked."""

from __future__ import annotations

from bot.store import Store

MADE = "7d3c6a4e-0000-4000-8000-000000000001"
OTHER = "7d3c6a4e-0000-4000-8000-000000000002"


async def test_a_silence_made_is_read_back_by_id_with_the_author_proxybot_wrote(store: Store) -> None:
    assert await store.silences_made([MADE, OTHER]) == {}
    await store.record_silence_made(MADE, "alice (Slack U0ALICE01)")
    await store.record_silence_made(MADE, "mallory (Slack U0MALLORY)")  # kept once: the first author
    assert await store.silences_made([MADE, OTHER]) == {MADE: "alice (Slack U0ALICE01)"}
    assert await store.silences_made([OTHER]) == {}
    assert await store.silences_made([]) == {}
