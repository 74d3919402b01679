"""The whole suite: no process a test started may outlive the session.

At the start pytest becomes a child subreaper, so a process orphaned by a test (the digest workers of a
`proxybot serve` killed with SIGKILL) is re-parented to pytest instead of PID 1 and stays visible here.
At the end every process still under pytest is reported, killed and fails the session, except pytest's
own `multiprocessing` helpers with nothing under them (the forkserver and resource tracker of the pools the
tests run in-process: they end when pytest does).

Under pytest-xdist each worker is such a pytest: it checks what its own tests left behind and hands its
report to the controller (`workeroutput`), which fails the run, since a worker's exit status alone does not.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import signal
import sys

import pytest

from tests.harness.descendants import Proc, descendants, reap_zombie_children
from tests.waiting import WaitTimeout, wait_until

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
# Orphans notice their maker is gone within milliseconds; this leaves room on a loaded machine (a bot's
# digest-pool forkserver was seen outliving 5 s with six agents sharing two cores). The check's own tests
# (tests/harness/test_leftover_processes.py) set a shorter one for the sessions they run, whose leftovers
# never end by themselves, through GRACE_ENV.
GRACE_ENV = "PROXYBOT_TEST_LEFTOVER_GRACE"
GRACE_SECONDS = float(os.environ.get(GRACE_ENV, "15"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The suites that wait on real processes and timers first, then the other slow tests: pytest-xdist
    hands the modules out in this order (`--dist loadscope`: a module's tests on one worker, so a
    module-scoped fixture, a simulator, a real Prometheus, the demo's tour, is set up once), so the
    longest start at once instead of ending the run alone."""
    items.sort(key=_start_order)  # stable: within a rank, collection order


# The modules that take longest (minutes of real timers: steady traffic, the demo's tour, the scenarios
# through a real Prometheus, two replicas on PostgreSQL), started before all others. Only the order
# depends on this list: a module missing from it still runs, just not first.
LONGEST_FIRST = (
    "tests/faults/test_steady_state.py",
    "tests/bot/cli/test_demo.py",
    "tests/e2e/test_demo_page.py",
    "tests/e2e/test_story_scenarios.py",
    "tests/e2e/test_replicas.py",
    "tests/sim/test_prometheus_scenarios.py",
    "tests/sim/test_alerting.py",
    "tests/faults/test_kill_nine.py",
)


def _start_order(item: pytest.Item) -> int:
    module = item.nodeid.split("::", 1)[0]
    if module in LONGEST_FIRST:
        return LONGEST_FIRST.index(module)
    rank = len(LONGEST_FIRST)
    if module.startswith(("tests/faults/", "tests/e2e/")):
        return rank
    return rank + (1 if item.get_closest_marker("slow") is not None else 2)


def pytest_sessionstart(session: pytest.Session) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


# The controller's report of what its workers found, filled as each worker ends.
_WORKERS_LEFT: list[str] = []
LEFT_KEY = "proxybot_left_behind"


@pytest.hookimpl(trylast=True)  # after pytest-xdist has ended its workers
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    lines = _kill_left_behind()
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller reports it
        workeroutput[LEFT_KEY] = lines
        return
    lines += _WORKERS_LEFT
    if not lines:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("\n".join(lines), red=True, bold=True)
    else:
        print("\n".join(lines), file=sys.stderr)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_testnodedown(node: object, error: object) -> None:
    """An xdist worker ended (only the controller sees this hook): keep what it found left behind."""
    output = getattr(node, "workeroutput", None) or {}
    _WORKERS_LEFT.extend(output.get(LEFT_KEY, []))


def _kill_left_behind() -> list[str]:
    """The report of every process the tests left behind, each killed; empty when there is none."""
    left = _outliving(GRACE_SECONDS)
    reap_zombie_children()
    if not left:
        return []
    lines = [f"{len(left)} process(es) started by the tests outlived them (killed now):"]
    lines += [f"  {proc.describe()}" for proc in sorted(left, key=lambda p: p.pid)]
    for proc in left:
        if proc.running():
            os.kill(proc.pid, signal.SIGKILL)
    reap_zombie_children()
    return lines


def _outliving(within: float) -> set[Proc]:
    """What is still left behind after waiting up to `within` seconds for it to end."""
    with contextlib.suppress(WaitTimeout):  # what is left is the answer, not a failure
        wait_until(lambda: not _left_behind(), within, "the processes left behind to end", interval=0.05)
    return _left_behind()


def _left_behind() -> set[Proc]:
    """Everything under pytest but its own idle multiprocessing helpers."""
    under = descendants(os.getpid())
    busy = {proc.ppid for proc in under}
    own = _own_helpers()
    return {proc for proc in under if not (proc.pid in own and proc.pid not in busy)}


def _own_helpers() -> set[int]:
    """The pids of this process's forkserver and resource tracker, when started (multiprocessing's own
    bookkeeping: no public API names them)."""
    forkserver = getattr(multiprocessing.forkserver._forkserver, "_forkserver_pid", None)
    tracker = getattr(multiprocessing.resource_tracker._resource_tracker, "_pid", None)
    return {pid for pid in (forkserver, tracker) if isinstance(pid, int)}
