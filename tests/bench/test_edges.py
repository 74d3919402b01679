"""bench/edges.py's cli part as an operator runs it, once: every command timed beside the baseline.

Its time bars are the benchmark's to judge, not a test's: what is asserted here holds whatever the
machine's speed: a row per command with its figure and its distance from the baseline, the commands
answered (exit 0), and the part's verdict line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

COMMANDS = (
    "proxybot --version",
    "proxybot --help",
    "proxybot check-config (example)",
    "proxybot status TARGET --json",
)


def test_the_cli_part_times_every_command_beside_the_baseline() -> None:
    done = subprocess.run(
        [sys.executable, "bench/edges.py", "--only", "cli", "--runs", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = done.stdout
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert out.splitlines()[0].startswith("load before: load average")
    rows: dict[str, list[str]] = {}
    for line in out.splitlines():
        for name in ("python -c pass (baseline)", *COMMANDS):
            if line.strip().startswith(name):
                rows[name] = line.strip().removeprefix(name).split()
    assert set(rows) == {"python -c pass (baseline)", *COMMANDS}, out
    baseline = float(rows["python -c pass (baseline)"][0])
    for name in COMMANDS:
        seconds, over, exit_code = rows[name][:3]
        assert float(over) == pytest.approx(float(seconds) - baseline, abs=0.002), name
        assert exit_code == "0", f"{name} exited {exit_code}"
    verdicts = [line for line in out.splitlines() if line.startswith("edges_")]
    assert verdicts in (["edges_cli_ok: yes"], ["edges_cli_ok: no"])
