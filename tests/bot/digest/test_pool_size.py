"""The digest's worker pool follows the pod's CPU quota, not the node's cores, and stays bounded."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.digest.pool import MAX_DEFAULT_WORKERS, default_workers, digest_pool, quota_cores
from config.settings import DigestSettings

NODE_CORES = 16
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def sixteen_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """A big node: every one of its 16 cores is in this process's affinity."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(NODE_CORES)))


def cgroup(
    tmp_path: Path, *, cpu_max: str | None = None, v1: tuple[str, str] | None = None
) -> tuple[Path, Path]:
    """A fake /sys/fs/cgroup: v2's cpu.max and/or v1's cpu controller directory."""
    v2_file = tmp_path / "cpu.max"
    if cpu_max is not None:
        v2_file.write_text(cpu_max + "\n")
    v1_dir = tmp_path / "cpu"
    if v1 is not None:
        v1_dir.mkdir()
        (v1_dir / "cpu.cfs_quota_us").write_text(v1[0] + "\n")
        (v1_dir / "cpu.cfs_period_us").write_text(v1[1] + "\n")
    return v2_file, v1_dir


@pytest.mark.parametrize(
    ("cpu_max", "v1", "cores"),
    [
        ("max 100000", None, None),  # v2, unlimited
        ("200000 100000", None, 2.0),  # v2, limits.cpu: 2
        ("50000 100000", None, 0.5),  # v2, limits.cpu: 500m
        ("150000 100000", ("-1", "100000"), 1.5),  # v2 wins where both are mounted
        (None, ("-1", "100000"), None),  # v1, unlimited
        (None, ("300000", "100000"), 3.0),  # v1, limits.cpu: 3
        (None, None, None),  # no cgroup files at all
        ("garbage", None, None),
        ("0 100000", None, None),
    ],
)
def test_the_quota_is_read_from_cgroup_v2_or_v1(
    tmp_path: Path, cpu_max: str | None, v1: tuple[str, str] | None, cores: float | None
) -> None:
    assert quota_cores(*cgroup(tmp_path, cpu_max=cpu_max, v1=v1)) == cores


@pytest.mark.usefixtures("sixteen_cores")
@pytest.mark.parametrize(
    ("cpu_max", "workers"),
    [
        ("max 100000", MAX_DEFAULT_WORKERS),  # no limit: capped, not one per node core
        ("200000 100000", 2),
        ("150000 100000", 2),  # a part of a core still gets its worker
        ("50000 100000", 1),
        ("800000 100000", MAX_DEFAULT_WORKERS),
    ],
)
def test_a_16_core_node_gets_workers_by_the_pods_quota_capped(
    tmp_path: Path, cpu_max: str, workers: int
) -> None:
    assert default_workers(*cgroup(tmp_path, cpu_max=cpu_max)) == workers


def test_the_affinity_bounds_a_bigger_quota(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert default_workers(*cgroup(tmp_path, cpu_max="800000 100000")) == 1


def _pid_after_a_while() -> int:
    time.sleep(0.2)  # the fake task takes a while, so the pool hands one to every worker
    return os.getpid()


@pytest.mark.usefixtures("sixteen_cores")
async def test_the_pool_on_a_16_core_node_stays_bounded() -> None:
    pool = digest_pool()
    try:
        assert 1 <= pool.workers <= MAX_DEFAULT_WORKERS
        loop = asyncio.get_running_loop()
        # Many more tasks than workers, all at once: the pool never starts a worker per task or per core.
        pids = await asyncio.gather(*(loop.run_in_executor(pool, _pid_after_a_while) for _ in range(16)))
    finally:
        pool.shutdown()
    assert len(set(pids)) == pool.workers
    assert os.getpid() not in pids


# Run as `python -c`: its workers import no main module, so they start (and answer) fastest.
WARM_TWICE = textwrap.dedent(
    """
    import asyncio, os
    from bot.digest.pool import digest_pool, warm_up
    from tests.harness.descendants import descendants

    async def main() -> None:
        for workers in (1, 8, 8):  # the first starts the forkserver; the others find it running
            pool = digest_pool(workers)
            await warm_up(pool)
            started = [p for p in descendants(os.getpid()) if p.ppid != os.getpid()]
            print(len(started), flush=True)
            pool.shutdown()

    asyncio.run(main())
    """
)


def test_warm_up_starts_every_worker_at_once() -> None:
    # Before: an instant warm-up task freed its worker before the next was submitted, and of 8 workers
    # only 3 to 5 were started (of 4, 1 to 3).
    result = subprocess.run(
        [sys.executable, "-c", WARM_TWICE], cwd=REPO, capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.split() == ["1", "8", "8"]


def test_the_configured_count_wins_and_is_checked() -> None:
    assert DigestSettings().workers is None
    assert DigestSettings(workers=3).workers == 3
    pool = digest_pool(DigestSettings(workers=3).workers)
    try:
        assert pool.workers == 3
    finally:
        pool.shutdown()
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        DigestSettings(workers=0)
