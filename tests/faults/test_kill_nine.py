"""kill -9 of `proxybot serve` at 10 random moments of a storm, restarted each time on the same SQLite store:
after the last restart everything accepted is delivered, and no top-level message was posted twice.

The moments are drawn from a seeded random generator (the seed is printed; `PROXYBOT_FAULT_SEED` replays
one): each kill comes 0.2-2 s after the bot answers `/healthz` again, so they fall while webhooks arrive,
while notifications are processed and while the outbox sends. Slack answers in 0.2 s, so kills also land
between a post reaching Slack and its answer being stored (the exactly-once marks of
`bot/delivery/send.py` must find those posts). What the load generator got no 2xx for is sent again
afterwards, as Alertmanager retries it.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest
import yaml

from sim.ports import free_port
from sim.slack_api import FakeSlack
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import BotProcess
from tests.faults.slack_faults import (
    STORM_TITLE,
    FaultStore,
    Storm,
    assert_all_delivered_in_order,
    assert_never_crashed,
    duplicate_posts,
    posted_twice,
)

pytestmark = pytest.mark.slow

KILLS = 10
GROUPS = 60
STORM_SECONDS = 10.0


def kill_and_restart(
    bots: BotLauncher, bot: BotProcess, rng: random.Random, port: int
) -> tuple[float, BotProcess]:
    """Wait a random moment, SIGKILL the bot (which must still be running: it never died by itself), start
    a new one on the same store and port; the moment, in seconds after the last start."""
    moment = rng.uniform(0.2, 2.0)
    time.sleep(moment)  # the random moment is the point: the kill lands wherever the bot is then
    assert bot.running, f"proxybot serve died by itself:\n{bot.log_tail()}"
    bot.kill()
    return moment, bots.start(port=port)


@pytest.fixture
def one_worker(bot_config: Path, slack: FakeSlack) -> None:
    """One digest worker process (no digest runs here): each of the eleven starts costs less. The channel
    is configured by its ID (the README's paragraph on channels): a post to a channel named `#alerts` whose
    ID the bot has not learnt yet (no post there was answered) cannot be looked for in its history, and is
    sent again after a crash, with a warning saying so (a kill 0.21 s after the first start did that)."""
    doc = yaml.safe_load(bot_config.read_text())
    doc["digest"]["workers"] = 1
    doc["slack"]["default_channel"] = slack.channel_id(doc["slack"]["default_channel"])
    bot_config.write_text(yaml.safe_dump(doc, sort_keys=False))


@pytest.mark.usefixtures("one_worker")
def test_kill_nine_at_random_moments_loses_nothing_and_posts_nothing_twice(
    tmp_path: Path, bots: BotLauncher, slack: FakeSlack
) -> None:
    # Other moments each run; a failing run prints its seed, and PROXYBOT_FAULT_SEED replays it.
    seed = int(os.environ.get("PROXYBOT_FAULT_SEED") or random.SystemRandom().randrange(2**32))
    print(f"\nkill -9 moments seeded with PROXYBOT_FAULT_SEED={seed}")
    rng = random.Random(seed)
    slack.latency = 0.2
    port = free_port()
    store = FaultStore(tmp_path / "bot.db")
    storm = Storm(GROUPS, seconds=STORM_SECONDS)
    started = [bots.start(port=port)]
    moments = []
    with storm.load(started[0].url, timeout=5.0) as load:
        load.started()
        for _ in range(KILLS):
            moment, bot = kill_and_restart(bots, started[-1], rng, port)
            moments.append(moment)
            started.append(bot)
        storm.record(load.outcomes())
    print("killed after " + ", ".join(f"{m:.2f}" for m in moments) + " s of each run")

    last = started[-1]
    resent = storm.resend_unaccepted(last.url)
    store.wait_drained(120.0)
    duplicates = duplicate_posts(slack, store)
    storms = [m for m in slack.top_level() if m.text.startswith(STORM_TITLE)]
    print(
        f"{resent} webhooks re-sent; {len(storms)} storm summaries; duplicate top-level posts: {duplicates}"
    )

    assert store.bodies() >= storm.accepted_bodies(), "something answered 2xx was not stored"
    assert store.outbox_failed() == 0
    assert_all_delivered_in_order(slack, storm.target_names)
    assert duplicates == 0, posted_twice(slack, store)
    assert last.running
    assert_never_crashed(*started)
