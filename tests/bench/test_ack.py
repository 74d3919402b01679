"""bench/ack.py as an operator runs it (the buttons part small): every figure printed beside its baseline.

Its time bars are the benchmark's to judge, not a test's: what is asserted here holds whatever the
machine's speed: each press was measured (the press -> edited and views.open rows count them), the
ratios are the figures' own, and the part's verdict line is there.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def figure(out: str, pattern: str) -> list[float]:
    found = re.search(pattern, out)
    assert found is not None, f"{pattern!r} not in:\n{out}"
    return [float(g) for g in found.groups()]


# bench/ack.py prints every figure to one decimal, so a ratio of two printed figures is known only to
# within their rounding (a healthz p50 of 0.65 ms prints as 0.7: about 8% off).
PRINTED = 0.05


def agrees(ratio: float, numerator: float, denominator: float) -> bool:
    """Whether a printed ratio is the quotient of two printed figures, each known to +-PRINTED."""
    low = (numerator - PRINTED) / (denominator + PRINTED) - PRINTED
    # A denominator printed as 0.0 may be any amount below 0.05: no quotient is too high.
    high = math.inf if denominator <= PRINTED else (numerator + PRINTED) / (denominator - PRINTED) + PRINTED
    return low <= ratio <= high


def test_the_buttons_part_prints_press_to_edit_against_healthz_and_views_open_under_a_storm() -> None:
    done = subprocess.run(
        [sys.executable, "bench/ack.py", "--only", "buttons", "--presses", "4"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = done.stdout
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    count, h50, h99 = figure(
        out,
        r"GET /healthz between the presses \(the baseline\): (\d+) answers, p50 ([\d.]+) ms, p99 ([\d.]+) ms",
    )
    assert count == 20
    presses, e50, e99, _ = figure(
        out, r"press -> message edited .*: (\d+) presses, p50 ([\d.]+) ms, p99 ([\d.]+) ms, max ([\d.]+) ms"
    )
    assert presses == 4
    r50, r99 = figure(out, r"ratio press -> edited / healthz: p50 ([\d.]+), p99 ([\d.]+)")
    assert agrees(r50, e50, h50), (r50, e50, h50)
    assert agrees(r99, e99, h99), (r99, e99, h99)
    quiet, _, _ = figure(out, r"views.open, quiet: (\d+) presses, p50 ([\d.]+) ms, max ([\d.]+) ms")
    stormy, _, storm_max = figure(
        out, r"views.open, during a 1000-alert storm .*: (\d+) presses, p50 ([\d.]+) ms, max ([\d.]+) ms"
    )
    assert (quiet, stormy) == (3, 3)
    assert figure(out, r"views_open_max_ms: ([\d.]+)")[0] >= storm_max
    assert figure(out, r"edit_p99_ms: ([\d.]+)") == [e99]
    assert out.splitlines()[-1] in ("ack_buttons_ok: yes", "ack_buttons_ok: no")


def test_the_commands_part_prints_healthz_and_the_loops_longest_stall_quiet_and_in_the_storm() -> None:
    done = subprocess.run(
        [sys.executable, "bench/ack.py", "--only", "commands"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = done.stdout
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    windows = {}
    for name in ("idle", "quiet", "during the storm"):
        count, _, p99, stall, _, _ = figure(
            out,
            rf"GET /healthz every 10 ms, {name}[^:]*: (\d+) answers, p50 ([\d.]+) ms, p99 ([\d.]+) ms; "
            r"the event loop's longest stall ([\d.]+) ms \(the loop's thread ran ([\d.]+) ms of it, "
            r"waited for a CPU ([\d.]+) ms\)",
        )
        assert count > 0, name
        windows[name] = (p99, stall)
    assert figure(out, r"GET /healthz every 10 ms, idle .*: (\d+) answers")[0] == 200
    assert figure(out, r"GET /healthz every 10 ms, quiet .*: (\d+) answers")[0] == 400
    ratio, _ = figure(out, r"ratio /healthz p99 storm/quiet: ([\d.]+) \(goal <= 5\); storm/idle: ([\d.]+)")
    assert agrees(ratio, windows["during the storm"][0], windows["quiet"][0])
    stalls = figure(out, r"loop_stall_max_ms: quiet ([\d.]+), storm ([\d.]+)")
    assert stalls == [windows["quiet"][1], windows["during the storm"][1]]
    assert out.splitlines()[-1] in ("ack_commands_ok: yes", "ack_commands_ok: no")


def test_a_ratio_agrees_with_its_printed_figures_to_their_rounding_and_no_further() -> None:
    # A failed run printed 22.5 against figures whose quotient was 21.0: only a denominator printed as
    # 0.8 or less rounds that far (here 14.74 / 0.655 = 22.5, printed as 14.7 / 0.7 = 21.0).
    assert agrees(22.5, 14.7, 0.7)
    assert agrees(20.0, 400.0, 20.0)
    assert not agrees(20.2, 400.0, 20.0)  # a 1% error on large figures is an error
    assert not agrees(25.0, 14.7, 0.7)
    assert not agrees(19.8, 400.0, 20.0)  # too low, as well as too high
    assert not agrees(19.4, 14.7, 0.7)
    assert agrees(50.0, 0.5, 0.0)  # 0.5 / 0.01
