"""bench/scale.py --quick as an operator runs it: one small size of each part, every figure printed.

Its time and memory bars are the benchmark's to judge, not a test's: what is asserted here is that each
part ran whole (its table, its verdict line) and what holds whatever the machine's speed: no webhook lost,
parses identical, the hung cluster reported unreachable.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_a_quick_run_prints_every_part_and_loses_nothing() -> None:
    done = subprocess.run(
        [sys.executable, "bench/scale.py", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    out = done.stdout
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    for part in ("storm", "digest", "parse"):
        assert f"== {part}" in out
        assert f"scale_{part}_ok: " in out
    assert "every webhook accepted, none lost, every alert in the summary's count: True" in out
    assert "hung cluster reported unreachable at every size: True" in out
    assert "results identical to prometheus_client at every size: True" in out
    # One row per size under each table's header: 200 alerts, 20 clusters, a 2 000-line page.
    rows = [line.split() for line in out.splitlines()]
    assert ["200", "100"] in [r[:2] for r in rows]
    assert ["20", "100"] in [r[:2] for r in rows]
    assert any(r[:1] == ["2000"] for r in rows)
