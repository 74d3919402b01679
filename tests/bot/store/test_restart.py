"""Accepted means durable: a process that accepted and is then SIGKILLed loses nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from bot.domain.alerts import parse_webhook
from bot.store import open_store
from tests.bot.domain import alertmanager_samples as samples

REPO = Path(__file__).resolve().parents[3]

# Accept two notifications, mark one processed, say so, then hang with the store still open (no close,
# no checkpoint) until killed.
CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from bot.domain.alerts import parse_webhook
    from bot.store import open_store
    from tests.bot.domain import alertmanager_samples as samples

    async def main(path: str) -> None:
        store = await open_store(path)
        first = await store.accept(samples.FIRING, parse_webhook(samples.FIRING), 10.0)
        second = await store.accept(samples.ONE_RESOLVED, parse_webhook(samples.ONE_RESOLVED), 11.0)
        await store.mark_processed(first.id)
        print(first.id, second.id, flush=True)
        await asyncio.sleep(3600)  # not a wait for time: it runs until it is killed

    asyncio.run(main(sys.argv[1]))
    """
)


def accept_then_get_killed(db_path: Path) -> tuple[int, int]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db_path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
    first, second = (int(word) for word in line.split())
    return first, second


async def test_accepted_notifications_survive_sigkill_and_stay_pending(tmp_path: Path) -> None:
    db_path = tmp_path / "proxybot.db"
    processed_id, pending_id = accept_then_get_killed(db_path)
    # The WAL file is still there: nothing was checkpointed before the kill.
    assert Path(f"{db_path}-wal").exists()
    async with await open_store(str(db_path)) as store:
        [stored] = await store.pending()
        assert stored.id == pending_id
        assert stored.raw == samples.ONE_RESOLVED
        accepted = await store.accept(samples.FIRING, parse_webhook(samples.FIRING), 20.0)
        assert (accepted.id, accepted.duplicate) == (processed_id, True)
