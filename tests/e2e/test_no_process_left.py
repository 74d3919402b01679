"""`proxybot serve` leaves no process behind, however it ends: SIGTERM, SIGINT, SIGKILL, a failed start.

The digest's worker pool starts with `serve` (a forkserver, `digest.workers` workers under it, and
multiprocessing's resource tracker). Every process under the bot is collected from /proc while it runs;
after it ends each must be gone within a moment. Before the fix a SIGTERM left all of them running.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import REPO, BotProcess
from tests.harness.descendants import Proc, descendants, still_running
from tests.waiting import WaitTimeout, wait_until

WORKERS = 2
# Orphans notice within milliseconds that the bot is gone; this leaves room on a loaded machine.
GONE_WITHIN = 5.0


@pytest.fixture
def bots_with_pool(bot_config: Path, tmp_path: Path, bots: BotLauncher) -> BotLauncher:
    doc = yaml.safe_load(bot_config.read_text())
    doc["digest"]["workers"] = WORKERS
    bot_config.write_text(yaml.safe_dump(doc, sort_keys=False))
    return bots


def digest_workers(bot: int, under: set[Proc]) -> set[Proc]:
    """The processes under the bot's own children: the pool's workers, forked by its forkserver."""
    return {proc for proc in under if proc.ppid != bot}


def with_pool_started(bot: BotProcess) -> set[Proc]:
    """Every process under the bot once its digest workers are up (they start with `serve`)."""
    assert bot.pid is not None
    pid = bot.pid

    def started() -> set[Proc] | None:
        under = descendants(pid)
        return under if len(digest_workers(pid, under)) >= WORKERS else None

    return wait_until(started, 30.0, "the digest pool's workers", interval=0.05)


def assert_all_gone(procs: set[Proc]) -> None:
    left = still_running(procs, within=GONE_WITHIN)
    assert not left, "outlived proxybot serve:\n" + "\n".join(p.describe() for p in left)


@pytest.mark.parametrize(
    ("sig", "exit_status"),
    [(signal.SIGTERM, 0), (signal.SIGINT, 0), (signal.SIGKILL, -signal.SIGKILL)],
)
def test_no_process_outlives_serve(
    bots_with_pool: BotLauncher, sig: signal.Signals, exit_status: int
) -> None:
    bot = bots_with_pool.start()
    under = with_pool_started(bot)
    assert len(digest_workers(bot.pid or 0, under)) == WORKERS, "digest.workers sizes the pool"
    assert bot.stop(sig) == exit_status
    assert_all_gone(under)
    if sig != signal.SIGKILL:
        log = bot.log_text()
        assert f"stopped by {sig.name}" in log
        assert "Traceback" not in log


def test_no_process_outlives_a_failed_start(bots_with_pool: BotLauncher, bot_config: Path) -> None:
    # The port is taken: uvicorn has started the app (and so the pool) when binding fails.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = [sys.executable, "-m", "bot", "serve", "--config", str(bot_config), "--port", str(port)]
        serve = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        seen: dict[Proc, str] = {}  # each with its command line, read while it runs

        def exited() -> bool:
            seen.update({proc: proc.command() for proc in descendants(serve.pid) if proc not in seen})
            return serve.poll() is not None

        with contextlib.suppress(WaitTimeout):  # killed below if it still runs
            wait_until(exited, 60, "the failed start to exit", interval=0.005)
        if serve.poll() is None:
            serve.kill()
        out, _ = serve.communicate(timeout=10)
    assert serve.returncode == 2, out.decode(errors="replace")[-2000:]  # a failed start: exit 2
    assert b"address already in use" in out
    assert any("forkserver" in command for command in seen.values()), "the pool started before the failure"
    assert_all_gone(set(seen))
