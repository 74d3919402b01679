"""`proxybot demo`, the README's first command, run as a newcomer runs it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_demo_shows_an_alert_fire_and_resolve_in_place() -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "bot", "demo", "--speed", "40", "--duration", "45"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 0, result.stderr[-3000:]
    assert "simulator t=  240s: target pod restarts" in out
    firing = out.index("FIRING: ResourceProxyTargetUnavailable · platform/crd-store")
    resolved = out.index("RESOLVED: ResourceProxyTargetUnavailable · platform/crd-store")
    assert firing < resolved
    # One top-level post; the resolve is an edit of it plus a thread reply, never a second post.
    assert out.count("· posted") == 1
    assert "(edited)" in out[firing:]
    assert "thread reply" in out[resolved:]
    assert "[Silence…]" in out[:resolved]
    assert "\x1b[" not in out  # NO_COLOR
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_the_storm_demo_shows_the_summary_its_grouping_the_cause_and_the_table() -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "bot", "demo", "--scenario", "storm", "--speed", "40", "--duration", "14"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 0, result.stderr[-3000:]
    # The summary is posted once the groups pause (or at its latest, then edited with the table).
    summary = out.rindex("🌩️ Alert storm: 31 targets")
    shown = " ".join(out[summary:].split())  # the terminal wraps long lines
    assert "`team-a` · 31 targets: 2 no healthy peers" in shown
    assert "· 29 peer cache unsynced (peers from a stale list)" in shown
    assert "Common cause: `team-a`'s peer feed: `peer_cache_synced` is 0 on every one of the 31" in shown
    table = out.index("── file in thread")
    header = out.index("CLUSTER  TARGET", table)
    rows = out[header:].splitlines()[1:4]
    assert [row.split()[:2] for row in rows] == [
        ["team-a", "platform/shard-00"],
        ["team-a", "platform/shard-01"],
        ["team-a", "platform/crd-store"],
    ]
    assert "Traceback" not in result.stderr
