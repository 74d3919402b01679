"""The resolution summary end to end: a real Alertmanager (0.25) delivers to `proxybot serve`, which reads
the simulator's `/metrics/syncer` with the group's notifications and posts to the strict fake Slack.

The simulator's traffic is held still while the bot takes its first reading (the alert's post) and its last
(the resolve), and flows between them, so the window's failed requests are exactly what the simulator's own
counters gained in it: the summary's count must equal that.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from bot.domain.impact import failed
from bot.live import TTL
from sim.server import SimServer
from sim.slack_api import FakeSlack, Message, iter_texts
from sim.world import World
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import (
    CHANNEL,
    CLIENT,
    TARGET,
    WEBHOOK_TOKEN,
    BotProcess,
    now,
    proxy_alert,
    proxybot_command,
    rfc3339,
    summary_of,
    wait_degraded,
)
from tests.e2e.test_alertmanager_flow import ROUTE
from tests.harness.alertmanager import Alertmanager
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

TIMEOUT = 30.0
FAILED = re.compile(r"\*Impact:\* ([0-9,]+) failed requests")


def full_text(message: Message) -> str:
    return "\n".join([message.text, *iter_texts(message.blocks)])


class Traffic:
    """The simulator's traffic, held still or let flow (under the simulator's lock)."""

    def __init__(self, sim: SimServer) -> None:
        self.sim = sim
        self.flow: Callable[[World], None] | None = sim.world.traffic

    def hold(self) -> None:
        with self.sim.lock:
            self.sim.world.traffic = None

    def release(self) -> None:
        with self.sim.lock:
            self.sim.world.traffic = self.flow


def failed_requests(sim: SimServer, pod: str) -> float:
    """The simulator's own count of the target's failed requests on one replica (status 400 and up)."""
    with sim.lock:
        counter = sim.world.proxies[(CLIENT, pod)].metrics.requests.values
        return sum(n for (target, _, _, code, _), n in counter.items() if target == TARGET and failed(code))


def sim_seconds_pass(sim: SimServer, wall_seconds: float) -> None:
    """Until the simulator's clock moved on by `wall_seconds` at its speed (the bot's reads are cached
    that long in wall time)."""
    start = sim.world.now()
    wait_until(lambda: sim.world.now() - start >= wall_seconds * sim.speed, TIMEOUT, "the simulator's clock")


@pytest.fixture
def traffic(sim: SimServer) -> Iterator[Traffic]:
    held = Traffic(sim)
    yield held
    held.release()


@pytest.fixture
def bot(sim: SimServer, traffic: Traffic, bots: BotLauncher) -> BotProcess:
    wait_degraded(sim)
    traffic.hold()  # before the bot's first read: every reading until release sees the same counters
    return bots.start(command=proxybot_command())


@pytest.fixture
def alertmanager(tmp_path: Path, bot: BotProcess) -> Iterator[Alertmanager]:
    workdir = tmp_path / "alertmanager"
    workdir.mkdir()
    with Alertmanager(workdir, f"{bot.url}/alertmanager", WEBHOOK_TOKEN, route=ROUTE) as am:
        yield am


def test_the_summarys_failed_requests_equal_the_simulators_count_over_the_window(
    sim: SimServer, slack: FakeSlack, bot: BotProcess, alertmanager: Alertmanager, traffic: Traffic
) -> None:
    pod = sim.pods(CLIENT)[0]
    labels = proxy_alert(pod=pod, group_version="example.com/v1")
    alert = {"labels": labels, "annotations": {"summary": summary_of(labels)}}
    started = rfc3339(now() - timedelta(seconds=5))
    before = failed_requests(sim, pod)
    alertmanager.post_alerts([{**alert, "startsAt": started}])
    wait_until(lambda: slack.top_level(CHANNEL), TIMEOUT, "the group's message")
    [message] = slack.top_level(CHANNEL)

    traffic.release()  # the target is down: requests fail while the alert fires
    wait_until(lambda: failed_requests(sim, pod) > before, TIMEOUT, "failed requests in the simulator")
    sim_seconds_pass(sim, TTL + 1)  # the first reading is out of the bot's cache
    traffic.hold()
    after = failed_requests(sim, pod)
    sim_seconds_pass(sim, TTL + 1)  # any reading taken while it flowed is out of the cache too

    alertmanager.post_alerts(
        [{**alert, "startsAt": started, "endsAt": rfc3339(now() - timedelta(seconds=1))}]
    )
    wait_until(lambda: "RESOLVED" in message.text, TIMEOUT, "the message edited to resolved")
    summary = wait_until(
        lambda: next((r for r in slack.thread(CHANNEL, message.ts) if "Resolution summary" in r.text), None),
        TIMEOUT,
        "the resolution summary in the thread",
    )
    text = full_text(summary)
    found = FAILED.search(text)
    assert found is not None, text
    assert int(found.group(1).replace(",", "")) == after - before > 0
    assert "proxybot's own readings" in text
    assert "never acknowledged" in text
    assert "🧾 Fired" in full_text(message)
    assert sum(1 for r in slack.thread(CHANNEL, message.ts) if "Resolution summary" in r.text) == 1
