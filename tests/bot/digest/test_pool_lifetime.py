"""The digest's worker processes end with the process that made the pool, even when it skips all cleanup.

`os._exit` (and SIGKILL, an OOM kill) runs no atexit hook and no finalizer: before each worker watched its
maker, the workers, their forkserver and the resource tracker all stayed, re-parented, holding memory.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.harness.descendants import descendants, still_running

REPO = Path(__file__).resolve().parents[3]
WORKERS = 2

# Warm a pool up, say so, then end as told: os._exit (no cleanup at all) or wait to be killed.
MAKER = textwrap.dedent(
    f"""
    import asyncio, os, sys
    from bot.digest.pool import digest_pool, warm_up

    async def main() -> None:
        pool = digest_pool({WORKERS})
        await warm_up(pool)
        print("ready", flush=True)
        if sys.stdin.readline().strip() == "os._exit":
            os._exit(0)
        await asyncio.sleep(3600)  # not a wait for time: it runs until it is killed

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("end", ["os._exit", "SIGKILL"])
def test_workers_and_forkserver_end_with_their_maker(end: str) -> None:
    maker = subprocess.Popen(
        [sys.executable, "-c", MAKER], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert maker.stdout is not None
        assert maker.stdin is not None
        assert maker.stdout.readline().strip() == "ready"
        under = descendants(maker.pid)
        # The forkserver, its workers, and the resource tracker.
        assert len([p for p in under if p.ppid != maker.pid]) == WORKERS
        if end == "os._exit":
            maker.stdin.write("os._exit\n")
            maker.stdin.flush()
        else:
            maker.kill()
        maker.wait(timeout=10)
    finally:
        if maker.poll() is None:
            maker.kill()
            maker.wait(timeout=10)
        for stream in (maker.stdin, maker.stdout):
            if stream is not None:
                stream.close()
    left = still_running(under, within=5.0)
    assert not left, "outlived their maker:\n" + "\n".join(p.describe() for p in left)
