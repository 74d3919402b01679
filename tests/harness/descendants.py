"""The processes under a process, read from /proc: what a test checks is gone after the process ends.

A process is named by its pid and its start time, so a pid the kernel reuses is not taken for the old
process. A zombie counts as gone: it has exited and holds no memory, only its exit status for a parent.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from tests.waiting import WaitTimeout, wait_until

PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class Proc:
    """One process: its pid and its start time (clock ticks after boot), with its parent when read."""

    pid: int
    started: int
    ppid: int = 0

    def running(self) -> bool:
        """Still this process, and not a zombie."""
        now = _read(self.pid)
        return now is not None and now.started == self.started

    def command(self) -> str:
        try:
            return (
                (PROC / str(self.pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            )
        except OSError:
            return "?"

    def describe(self) -> str:
        return f"pid {self.pid} (parent {self.ppid}): {self.command()[:200]}"


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat from its third field on (state, ppid, ...), or None when the process is gone."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself hold spaces or parentheses.
    return stat.rsplit(")", 1)[1].split()


def _read(pid: int) -> Proc | None:
    """The process now, or None when it is gone or a zombie."""
    fields = _stat(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return None
    return Proc(pid, started=int(fields[19]), ppid=int(fields[1]))


def processes() -> list[Proc]:
    """Every running process (zombies left out)."""
    found = (_read(int(entry.name)) for entry in PROC.iterdir() if entry.name.isdigit())
    return [proc for proc in found if proc is not None]


def descendants(root: int) -> set[Proc]:
    """Every running process under `root`: its children, theirs, and so on (not `root` itself)."""
    children: dict[int, list[Proc]] = {}
    for proc in processes():
        children.setdefault(proc.ppid, []).append(proc)
    found: set[Proc] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child.pid)
    return found


def still_running(procs: set[Proc], within: float = 0.0) -> set[Proc]:
    """Those of `procs` that are still running, after waiting up to `within` seconds for them to end."""
    with contextlib.suppress(WaitTimeout):  # what still runs is the answer, not a failure
        wait_until(lambda: not any(proc.running() for proc in procs), within, "the processes to end", 0.05)
    return {proc for proc in procs if proc.running()}


def reap_zombie_children() -> None:
    """Collect the exit status of this process's exited children that nothing else waits for.

    Only for the end of a session: a child a `subprocess.Popen` still waits for would lose its status.
    """
    me = os.getpid()
    for pid in (int(entry.name) for entry in PROC.iterdir() if entry.name.isdigit()):
        fields = _stat(pid)
        if fields is not None and fields[0] == "Z" and int(fields[1]) == me:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
