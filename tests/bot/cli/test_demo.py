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
    assert "[Silence 1h]" in out[:resolved]
    assert "\x1b[" not in out  # NO_COLOR
    assert "Traceback" not in result.stderr
