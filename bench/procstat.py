"""What the kernel says a process used: peak and current resident memory, CPU seconds (Linux /proc).

`peak_rss_mb` is `VmHWM` of /proc/PID/status, the most the process ever had resident. `reset_peak` sets
that mark back to the current RSS (writing 5 to /proc/PID/clear_refs, Linux 4.0 or later), so one process
can measure the peak of each of several runs in turn.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

PROC = Path("/proc")
SELF = os.getpid()


def _status_kb(pid: int, field: str) -> int:
    for line in (PROC / str(pid) / "status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == field:
            return int(value.split()[0])
    raise RuntimeError(f"/proc/{pid}/status has no {field} (a kernel thread, or not Linux)")


def peak_rss_mb(pid: int = SELF) -> float:
    """The process's peak resident memory so far (since it started or since `reset_peak`), in MB."""
    return _status_kb(pid, "VmHWM") / 1024


def rss_mb(pid: int = SELF) -> float:
    """The process's resident memory now, in MB."""
    return _status_kb(pid, "VmRSS") / 1024


def reset_peak(pid: int = SELF) -> None:
    """Set the process's peak resident memory back to what it holds now."""
    (PROC / str(pid) / "clear_refs").write_text("5")


def cpu_seconds(pid: int = SELF) -> float:
    """User plus system CPU seconds the process has used (its own, not its children's)."""
    fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    # After the command name: state is field 3 of stat(5), utime 14 and stime 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def total_peak_rss_mb(pids: Iterable[int]) -> float:
    """The sum of the processes' peaks (those that have ended meanwhile count nothing)."""
    total = 0.0
    for pid in pids:
        try:
            total += peak_rss_mb(pid)
        except (OSError, RuntimeError):
            continue
    return total
