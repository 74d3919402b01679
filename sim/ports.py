"""Loopback ports for servers whose port must be named before they start (PostgreSQL, Alertmanager's gossip).

A port the kernel handed out for `bind(("127.0.0.1", 0))` and that was closed again is free only until the
next outgoing connection is given it: the kernel draws both from the same ephemeral range
(`net.ipv4.ip_local_port_range`, 32768-60999 by default), and a test suite opens thousands of connections.
An Alertmanager told to gossip on such a port failed with "address already in use" in a whole-suite run.
So `free_port` chooses below that range, where the kernel never allocates on its own: only another caller
choosing ports explicitly can take one. Each pytest-xdist worker draws from its own slice, and one process
walks its slice in order, so one process never hands out a port twice (two processes of one worker's
slice start at different offsets, which makes a clash unlikely, not impossible).
"""

from __future__ import annotations

import itertools
import os
import re
import socket
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
# Below the ephemeral range: the lowest port used, and how many slices (xdist workers) share the span.
LOWEST = 15000
SLICES = 8
_LOOPBACK = "127.0.0.1"


def _ephemeral_low(path: Path = EPHEMERAL_RANGE) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _slice_index() -> int:
    """This process's slice: its xdist worker number (`gw3` -> 3), else one chosen by its pid."""
    worker = re.fullmatch(r"gw(\d+)", os.environ.get("PYTEST_XDIST_WORKER", ""))
    return int(worker.group(1)) % SLICES if worker else os.getpid() % SLICES


def _slice() -> list[int]:
    """This process's ports, in the order it hands them out."""
    high = max(LOWEST + SLICES * 64, _ephemeral_low())
    span = (high - LOWEST) // SLICES
    first = LOWEST + _slice_index() * span
    start = os.getpid() % span  # a nested pytest run (same worker names) starts elsewhere in the slice
    return [first + (start + i) % span for i in range(span)]


_PORTS = _slice()
_NEXT = itertools.cycle(_PORTS)


def _bindable(port: int) -> bool:
    """Nothing holds `port` on loopback, for TCP or UDP (a gossip listener binds both)."""
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        with socket.socket(socket.AF_INET, kind) as sock:
            try:
                sock.bind((_LOOPBACK, port))
            except OSError:
                return False
    return True


def free_port() -> int:
    """A loopback port free now and outside the kernel's ephemeral range, not handed out before here."""
    for port in itertools.islice(_NEXT, len(_PORTS)):
        if _bindable(port):
            return port
    raise OSError(f"no free loopback port in {_PORTS[0]}-{_PORTS[-1]} (below the ephemeral range)")


__all__ = ["free_port"]
