"""`proxybot demo`, the README's first command, run as a newcomer runs it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable

import pytest

from tests.harness.process import run_until

# The longest a demo test lets the demo run before judging what it printed.
DEMO_CEILING = 120.0


def run_demo_until(args: list[str], shows: Callable[[str], None]) -> subprocess.CompletedProcess[str]:
    """`proxybot demo ARGS` (no colour) stopped with Ctrl-C once `shows(stdout)` stops raising."""
    argv = [sys.executable, "-m", "bot", "demo", *args]
    return run_until(argv, shows, DEMO_CEILING + 30, env={**os.environ, "NO_COLOR": "1"})


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
    # The page's URL within the first lines (the page itself: tests/e2e/test_demo_page.py).
    assert re.search(r"^page: http://127\.0\.0\.1:\d+/ ", "\n".join(out.splitlines()[:3]), re.MULTILINE)
    assert "simulator t=  240s: target pod restarts" in out
    assert re.search(r"; Alertmanager on http://127\.0\.0\.1:\d+; bot on", out)  # the stand-in
    firing = out.index("FIRING: ResourceProxyTargetUnavailable · platform/crd-store")
    resolved = out.index("RESOLVED: ResourceProxyTargetUnavailable · platform/crd-store")
    assert firing < resolved
    # One top-level post; the resolve is an edit of it plus a thread reply, never a second post.
    assert out.count("· posted") == 1
    assert "(edited)" in out[firing:]
    assert "thread reply" in out[resolved:]
    # The resolve reply is the resolution summary: how long it fired, who had it, what it cost.
    assert re.search(r"🧾 \*?Resolution summary\*?: fired ", out[resolved:]), out[resolved:][:3000]
    assert "Impact:" in out[resolved:]
    assert "[Silence…]" in out[:resolved]
    assert "\x1b[" not in out  # NO_COLOR
    assert "Traceback" not in result.stderr


def shows_the_whole_storm(out: str) -> None:
    """The storm's last summary counts all 31 targets, names their grouping and cause; its table follows."""
    summary = out.rindex("🌩️ Alert storm: 31 targets")
    shown = " ".join(out[summary:].split())  # the terminal wraps long lines
    # The two targets that are down read as whatever they are doing at that moment (no healthy peer,
    # quarantined, a trial dial pending, resolved once healed), each its own: the simulator's clock runs on
    # while the storm grows, so they may be in one state or two.
    found = re.search(r"team-a · 31 targets: (.+?) By alert", shown)
    assert found, shown[:1500]
    # The probe CronJob's alert, which joined team-a's incident, names no target: said apart, if counted.
    listed = re.sub(r"; and 1 alert naming no target\s*$", "", found.group(1).strip())
    states = [part.strip() for part in listed.split(" · ")]
    assert "29 peer cache unsynced (peers from a stale list)" in states, states
    others = [s for s in states if s != "29 peer cache unsynced (peers from a stale list)"]
    assert sum(int(s.split()[0]) for s in others) == 2, states
    cause = "Common cause: team-a's peer feed: peer_cache_synced is 0 on every one of the 31"
    assert cause in shown, shown[:3000]  # the whole summary: which cause it named, or how many it judged
    # The table: Slack's own table block in the summary's thread, a row per target, worst first.
    header = out.index("│ CLUSTER │ TARGET │ ALERTS │ STATE NOW │")
    rows = re.findall(r"│ (team-a) │ (platform/[a-z0-9-]+) │", out[header:])[:3]
    assert [list(row) for row in rows] == [
        ["team-a", "platform/shard-00"],
        ["team-a", "platform/shard-01"],
        ["team-a", "platform/crd-store"],
    ]


@pytest.mark.slow
def test_the_storm_demo_shows_the_summary_its_grouping_the_cause_and_the_table() -> None:
    # The storm's pace is the bot's wall clock (pauses between groups, the summary's refresh), so how far a
    # fixed --duration gets depends on the machine's load: the demo runs until its output shows the whole
    # storm (at most DEMO_CEILING seconds), then is stopped with Ctrl-C, as a person would.
    demo = run_demo_until(
        ["--scenario", "storm", "--speed", "40", "--duration", f"{DEMO_CEILING:g}"], shows_the_whole_storm
    )
    assert demo.returncode == 0, demo.stderr[-20000:]  # all of a hang's stacks (tests.harness.process)
    shows_the_whole_storm(demo.stdout)
    assert "Traceback" not in demo.stderr
    # Stopped with Ctrl-C in the middle of its stop: the count is what was delivered, not 0.
    done = re.search(
        r"^done: (\d+) webhooks delivered, (\d+) Slack messages and edits shown$", demo.stdout, re.M
    )
    assert done, demo.stdout[-500:]
    assert int(done.group(1)) >= 31, "every group of the storm came by webhook"
    assert int(done.group(2)) > 0


def shows_a_message(out: str) -> None:
    assert re.search(r"^#proxy-alerts · \+ *[\d.]+s · posted$", out, re.M)


@pytest.mark.slow
def test_ctrl_c_on_the_demo_prints_no_traceback_and_the_true_counts() -> None:
    # Ctrl-C as a terminal sends it: to the demo's whole process group, the bot's worker processes too
    # (each used to print a KeyboardInterrupt traceback).
    demo = run_demo_until(["--speed", "40", "--duration", "60"], shows_a_message)
    both = demo.stdout + demo.stderr
    assert demo.returncode == 0, both[-5000:]
    assert "Traceback" not in both, both[-5000:]
    assert "KeyboardInterrupt" not in both, both[-5000:]
    done = re.search(
        r"^done: (\d+) webhooks delivered, (\d+) Slack messages and edits shown$", demo.stdout, re.M
    )
    assert done, demo.stdout[-500:]
    webhooks, shown = int(done.group(1)), int(done.group(2))
    # Every message or edit printed has its heading line; the count is theirs. A message came of a webhook.
    headings = re.findall(r"^(?:    │ )?#proxy-alerts · \+", demo.stdout, re.M)
    assert shown == len(headings) > 0, demo.stdout[-3000:]
    assert webhooks > 0
