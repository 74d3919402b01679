"""DigestRunner judges the fleet from LiveState reads in-process, or from the pages in worker processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.digest.pool import digest_pool, warm_up
from bot.digest.runner import DigestRunner, DigestSources
from bot.live import LiveState
from bot.store import open_store
from tests.fakes.fleet import SETTINGS, SOURCES


@pytest.mark.parametrize("long_lived_pool", [False, True])
async def test_judging_the_pages_in_workers_gives_the_digest_of_live_reads(
    tmp_path: Path, long_lived_pool: bool
) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'bot.db'}")
    # serve keeps one warm pool (forkserver workers); without one, each digest starts its own.
    pool = digest_pool(1) if long_lived_pool else None
    try:
        if pool is not None:
            await warm_up(pool)
        live = LiveState(SOURCES)
        in_process = DigestRunner(SETTINGS, store, DigestSources(live.read), None, timeout=0.5)
        sources = DigestSources(live.read, pages=SOURCES, executor=pool)
        pooled = DigestRunner(SETTINGS, store, sources, None, timeout=0.5, clock=lambda: 1.0)
        want = await in_process.collect("p")
        got = await pooled.collect("p")
    finally:
        await store.close()
        if pool is not None:
            pool.shutdown()
    assert got.as_dict() | {"at": 0} == want.as_dict() | {"at": 0}
    assert got.summary() | {"at": 0} == want.summary() | {"at": 0}
    assert sorted(got.cluster_seconds) == sorted(want.cluster_seconds) == ["a", "b", "c", "d", "e"]
    assert [t.health.value for t in got.targets] == [*["unreachable"] * 3, "degraded", "healthy"]
