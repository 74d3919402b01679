"""bench/fleet.py at 50 instances, as an operator runs it: every figure printed, one list call a refresh.

Its time and memory bars are the benchmark's to judge, not a test's: what is asserted here is the output's
shape and what holds whatever the machine's speed: every client discovered, every alert matched to its own
client, one Self and one list call a reading and nothing else asked of the platform.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

FIGURES = (
    "static_load_s",
    "first_discovery_s",
    "discovery_vs_static",
    "refresh_s",
    "refresh_vs_first",
    "static_retained_MB",
    "fleet_retained_MB",
    "fleet_vs_static_retained",
    "fleet_traced_peak_MB",
    "static_rss_rise_MB",
    "discovery_rss_rise_MB",
    "rss_rise_vs_static_MB",
    "match_growth",
)


def test_a_small_platform_prints_every_figure_and_one_list_call_a_refresh() -> None:
    done = subprocess.run(
        [sys.executable, "bench/fleet.py", "--instances", "50"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = done.stdout
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = out.splitlines()
    figures = dict(line.split(": ", 1) for line in lines if ": " in line and not line.startswith(" "))
    assert lines[0] == "== fleet: 50 instances (15 clients, 35 targets), the list 0.06 MB of JSON"
    assert figures["clients discovered"] == "15 of 15; fleet sound: True"
    for name in FIGURES:
        assert name in figures, name
    assert figures["list_calls"] == "first 1, refreshes 1 1 1  (goal: 1 a refresh)"
    assert figures["self_calls"] == "first 1, refreshes 1 1 1"
    assert figures["other_calls"] == "0"
    # The matching table: a tenth of the fleet (at least the warm-up's 10 instances: 3 clients), then all.
    head = lines.index("  clients  with_fleet_ms  match_us  target_only_us  dict_us  match_vs_dict  wrong")
    rows = [line.split() for line in lines[head + 1 : head + 3]]
    assert [(r[0], r[-1]) for r in rows] == [("3", "0"), ("15", "0")]
    for goal in ("discovery", "one_list", "rss", "lookup"):
        assert figures[f"fleet_{goal}_ok"] in ("yes", "no"), goal
    assert figures["fleet_discovery_ok"] == figures["fleet_one_list_ok"] == "yes"
