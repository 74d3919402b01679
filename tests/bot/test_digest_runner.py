"""DigestRunner judges the fleet from LiveState reads in-process, or from the pages in worker processes."""

from __future__ import annotations

from pathlib import Path

from bot.digest_runner import DigestRunner, DigestSources
from bot.live import LiveState
from bot.store import open_store
from tests.bot.test_digest_pool import SETTINGS, SOURCES


async def test_judging_the_pages_in_workers_gives_the_digest_of_live_reads(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'bot.db'}")
    try:
        live = LiveState(SOURCES)
        in_process = DigestRunner(SETTINGS, store, DigestSources(live.read), None, timeout=0.5)
        pooled = DigestRunner(
            SETTINGS, store, DigestSources(live.read, pages=SOURCES), None, timeout=0.5, clock=lambda: 1.0
        )
        want = await in_process.collect("p")
        got = await pooled.collect("p")
    finally:
        await store.close()
    assert got.as_dict() | {"at": 0} == want.as_dict() | {"at": 0}
    assert got.summary() | {"at": 0} == want.summary() | {"at": 0}
    assert sorted(got.cluster_seconds) == sorted(want.cluster_seconds) == ["a", "b", "c", "d", "e"]
    assert [t.health.value for t in got.targets] == [*["unreachable"] * 3, "degraded", "healthy"]
