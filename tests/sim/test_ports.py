"""sim.ports.free_port: below the kernel's ephemeral range, each port handed out once per process."""

from __future__ import annotations

import itertools
import socket
from pathlib import Path

import pytest

from sim import ports


def test_ports_are_below_the_ephemeral_range_distinct_and_bindable() -> None:
    low = ports._ephemeral_low()
    handed = [ports.free_port() for _ in range(50)]
    assert len(set(handed)) == 50
    assert all(ports.LOWEST <= port < low for port in handed)
    for port in handed[:5]:
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            with socket.socket(socket.AF_INET, kind) as sock:
                sock.bind(("127.0.0.1", port))


def test_a_port_in_use_is_skipped_and_none_free_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = ports.free_port(), ports.free_port()
    monkeypatch.setattr(ports, "_PORTS", [first, second])
    monkeypatch.setattr(ports, "_NEXT", itertools.cycle([first, second]))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as held:
        held.bind(("127.0.0.1", first))  # UDP alone: a gossip listener needs both
        assert ports.free_port() == second
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as also:
            also.bind(("127.0.0.1", second))
            with pytest.raises(OSError, match="no free loopback port"):
                ports.free_port()


@pytest.mark.parametrize(("worker", "index"), [("gw0", 0), ("gw3", 3), ("gw11", 3)])
def test_each_xdist_worker_has_its_own_slice(
    worker: str, index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    assert ports._slice_index() == index
    picked = ports._slice()
    span = len(picked)
    assert min(picked) == ports.LOWEST + index * span
    assert max(picked) == ports.LOWEST + (index + 1) * span - 1


def test_an_unreadable_range_is_linux_default(tmp_path: Path) -> None:
    assert ports._ephemeral_low(tmp_path / "missing") == 32768
    (tmp_path / "range").write_text("40000\t60999\n")
    assert ports._ephemeral_low(tmp_path / "range") == 40000
