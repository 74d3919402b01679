"""Every simulator scenario tells one story: `proxybot demo --scenario S` run in this process, and every
message it posted, as the demo's page shows it, checked against the story rules (tests.harness.story).

A scenario runs at a high speed for a few wall seconds (past the moment its alerts fire); what it posts
then depends on the machine's speed, but the rules hold for every message at every moment, so the test
does not depend on it. The scenarios that must post something are listed: one that posts nothing
there fails."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator

import pytest

from sim.scenarios import SCENARIOS
from tests.e2e import screenshots
from tests.harness.story import page_threads, problems
from tests.waiting import wait_until

SPEED = 60.0
SECONDS = 6.0  # 360 simulated seconds: most scenarios' alerts have fired
# The scenarios whose alerts fire later, run faster or longer: (speed, wall seconds).
LATER = {
    "discovery-degraded": (60.0, 9.0),  # from ~t=360
    "slow-target": (150.0, 8.0),  # the probe fails after t=900
    "watches-silent": (600.0, 11.0),  # from ~t=5460
    # The platform read every 5 s: at 20x the change (t=60) is kept before the alert after it (~t=90).
    "config-change": (20.0, 12.0),
}
# The scenarios that must post something in their run (the others are healthy, or their findings are not
# alerts).
POSTING = {
    "target-rolling-restart",
    "target-down",
    "peer-watch-dropped",
    "license-failure",
    "flapping",
    "discovery-degraded",
    "watches-silent",
    "ha-split",
    "slow-target",
    "shared-target-down",
    "config-change",
}


shots = screenshots.load()


class _Output(io.StringIO):
    """The demo's terminal, read from another thread."""

    def isatty(self) -> bool:
        return False


@pytest.fixture
def demo_page(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(page URL, terminal output) of `proxybot demo --scenario S`, held up once it is done."""
    from bot.cli.demo import run_demo
    from bot.render.terminal import Style

    scenario = str(request.param)
    out, hold, failed = _Output(), threading.Event(), []

    def run() -> None:
        try:
            speed, seconds = LATER.get(scenario, (SPEED, SECONDS))
            run_demo(scenario, speed, seconds, out, Style(False), hold=hold)
        except BaseException as err:  # reported to the waiting side
            failed.append(err)

    thread = threading.Thread(target=run, name=f"demo-{scenario}", daemon=True)
    thread.start()
    try:

        def shown() -> bool:
            assert not failed, failed  # the demo's own failure, not a timeout
            return "the page stays up" in out.getvalue()

        wait_until(shown, 120.0, f"the {scenario} demo to hold its page up", interval=0.2)
        page = shots._PAGE.search(out.getvalue())
        assert page is not None
        url = page.group(1)
        yield url, out.getvalue()
    finally:
        hold.set()
        thread.join(timeout=60)


def test_the_lists_name_scenarios() -> None:
    assert set(SCENARIOS) >= POSTING
    assert set(LATER) <= POSTING


def _tells_one_story(demo_page: tuple[str, str]) -> None:
    url, output = demo_page
    [(name, cid)] = shots.channels(url).items()
    threads = [
        page_threads(f"{name} {ts}", shots.message_text(url, cid, ts)) for ts in shots.top_level_ts(url, cid)
    ]
    scenario = output.split("scenario ", 1)[1].split(" ", 1)[0]
    if scenario in POSTING:
        assert threads, f"{scenario} posted nothing"
    found = problems(threads)
    assert not found, "\n".join(found)


# Two halves, each a scope of its own: pytest-xdist's `loadscope` gives each to a worker.
_ALL = sorted(SCENARIOS)


class TestFirstHalf:
    @pytest.mark.slow
    @pytest.mark.parametrize("demo_page", _ALL[::2], indirect=True)
    def test_every_message_of_the_scenario_tells_one_story(self, demo_page: tuple[str, str]) -> None:
        _tells_one_story(demo_page)


class TestSecondHalf:
    @pytest.mark.slow
    @pytest.mark.parametrize("demo_page", _ALL[1::2], indirect=True)
    def test_every_message_of_the_scenario_tells_one_story(self, demo_page: tuple[str, str]) -> None:
        _tells_one_story(demo_page)
