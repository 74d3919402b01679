"""The session hook of tests/conftest.py: a process a test leaves behind fails the run and is killed.

Each case runs a small pytest session of its own in a subprocess, with the suite's conftest as a plugin.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import GRACE_ENV
from tests.harness.descendants import Proc, processes, still_running

REPO = Path(__file__).resolve().parents[2]

LEAKING = textwrap.dedent(
    """
    import subprocess
    from pathlib import Path

    from bot.digest.pool import digest_pool, warm_up

    KEPT = []

    def test_leaves_a_child_running():
        KEPT.append(subprocess.Popen(["sleep", "60"]))
        Path(PIDS, "child").write_text(str(KEPT[0].pid))

    def test_leaves_an_orphan_behind():
        # The shell exits at once; its `sleep` is orphaned (re-parented to the subreaper, pytest).
        subprocess.run(["sh", "-c", f"sleep 61 & echo $! > {PIDS}/orphan"], check=True)

    async def test_leaves_a_pool_running():
        KEPT.append(digest_pool(1))
        await warm_up(KEPT[1])
    """
)

CLEAN = textwrap.dedent(
    """
    import subprocess

    from bot.digest.pool import digest_pool, warm_up

    async def test_a_pool_shut_down_leaves_only_pytests_own_idle_helpers():
        pool = digest_pool(2)
        await warm_up(pool)
        pool.shutdown()

    def test_a_child_waited_for():
        subprocess.run(["true"], check=True)
    """
)


def run_session(
    tmp_path: Path, source: str, *extra: str, leaks: bool = False
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_inner.py").write_text(source)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider", *extra]
    argv += ["-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function"]
    argv += ["--rootdir", str(tmp_path), str(tmp_path / "test_inner.py")]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if leaks:  # what it leaks never ends by itself: the check need not give it the suite's full grace
        env[GRACE_ENV] = "3"
    return subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def running(pid: int) -> Proc | None:
    return next((proc for proc in processes() if proc.pid == pid), None)


def test_processes_left_running_fail_the_session_and_are_killed(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    result = run_session(tmp_path, f"PIDS = {str(pids)!r}\n{LEAKING}", leaks=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "3 passed" in result.stdout
    # The child, the orphan, and the pool's worker with its forkserver (now busy, so not exempt).
    assert "4 process(es) started by the tests outlived them (killed now):" in result.stdout
    assert "sleep 60" in result.stdout
    assert "sleep 61" in result.stdout
    assert result.stdout.count("multiprocessing.forkserver") == 2
    for name in ("child", "orphan"):
        proc = running(int((pids / name).read_text()))
        assert proc is None or not still_running({proc}, within=2.0), f"the {name} was killed"


def test_a_session_that_ends_what_it_started_passes(tmp_path: Path) -> None:
    result = run_session(tmp_path, CLEAN)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    assert "outlived" not in result.stdout


def test_under_xdist_each_worker_checks_and_the_run_fails(tmp_path: Path) -> None:
    # A worker's own exit status does not reach the controller: its report must, and fail the run.
    pids = tmp_path / "pids"
    pids.mkdir()
    result = run_session(tmp_path, f"PIDS = {str(pids)!r}\n{LEAKING}", "-n", "2", leaks=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "3 passed" in result.stdout
    assert "started by the tests outlived them (killed now):" in result.stdout
    assert "sleep 60" in result.stdout
    assert "sleep 61" in result.stdout
    for name in ("child", "orphan"):
        proc = running(int((pids / name).read_text()))
        assert proc is None or not still_running({proc}, within=2.0), f"the {name} was killed"


def test_under_xdist_a_session_that_ends_what_it_started_passes(tmp_path: Path) -> None:
    result = run_session(tmp_path, CLEAN, "-n", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    assert "outlived" not in result.stdout
