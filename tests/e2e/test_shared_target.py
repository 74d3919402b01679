"""A target four clients use, three of them cut off (the simulator's shared-target-down), through a real
Alertmanager (Debian's 0.25) and `proxybot serve` on a config that names only the platform: the three
clients' groups are one message that names the three hit and the one still healthy."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from sim.scenarios import KEPT, SHARING
from sim.server import SimServer
from sim.slack_api import FakeSlack
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import (
    CHANNEL,
    CLIENT,
    WEBHOOK_TOKEN,
    BotProcess,
    StoreView,
    healthy_peers,
    now,
    proxy_alert,
    rfc3339,
    write_bot_config,
)
from tests.e2e.test_alertmanager_flow import DELIVERY_TIMEOUT, ROUTE, am_alert, full_text
from tests.harness.alertmanager import Alertmanager
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

TARGET = "platform/crd-store"
HIT = (CLIENT, *(c for c in SHARING if c != KEPT))


@pytest.fixture
def sim() -> Iterator[SimServer]:
    # At 20x crd-store admits team-d only from 3 s in; the others' dials time out and quarantine.
    with SimServer(scenario="shared-target-down", speed=20, platform=True) as srv:
        yield srv


@pytest.fixture
def bot(tmp_path: Path, sim: SimServer, slack: FakeSlack) -> Iterator[BotProcess]:
    def cut() -> bool:
        hit = all(peers and max(peers) == 0 for peers in (healthy_peers(sim, c) for c in HIT))
        return hit and min(healthy_peers(sim, KEPT)) > 0

    wait_until(cut, 60.0, "team-a..c to have no healthy peer of crd-store, team-d to keep one")
    launcher = BotLauncher(write_bot_config(sim, tmp_path, slack.api_url), tmp_path)
    try:
        yield launcher.start()
    finally:
        launcher.close()


@pytest.fixture
def alertmanager(tmp_path: Path, bot: BotProcess) -> Iterator[Alertmanager]:
    workdir = tmp_path / "alertmanager"
    workdir.mkdir()
    with Alertmanager(workdir, f"{bot.url}/alertmanager", WEBHOOK_TOKEN, route=ROUTE) as am:
        yield am


def _about_target(slack: FakeSlack) -> list[str]:
    return [full_text(m) for m in slack.top_level(CHANNEL) if TARGET in full_text(m)]


def test_three_clients_cut_off_one_target_are_one_message_naming_them_and_the_one_not(
    tmp_path: Path, sim: SimServer, slack: FakeSlack, bot: BotProcess, alertmanager: Alertmanager
) -> None:
    started = rfc3339(now() - timedelta(minutes=3))
    for client in HIT:  # as Prometheus sends them: each replica's series carry its control plane's namespace
        alerts = [
            proxy_alert(cluster=client, pod=f"{client}-0", group_version=gv)
            | {"namespace": f"vcluster-{client}"}
            for gv in ("example.com/v1", "data.example.com/v1alpha1")
        ]
        alertmanager.post_alerts([am_alert(labels, started) for labels in alerts])

    def told() -> str:
        texts = _about_target(slack)
        return texts[0] if len(texts) == 1 and all(f"`{c}`" in texts[0] for c in HIT) else ""

    text = wait_until(told, DELIVERY_TIMEOUT, "one message naming the three clients hit")
    assert f"3 of 4 clients cannot reach {TARGET}" in text
    assert f"{', '.join(HIT)}; {KEPT} still healthy" in text
    assert "no configured cluster" not in text
    # Every group is in: one message for the target, its thread with each group's details.
    store = StoreView(tmp_path / "bot.db")
    wait_until(
        lambda: store.notifications() >= len(HIT) and store.unprocessed() == 0,
        DELIVERY_TIMEOUT,
        "each client's group notified and processed",
    )
    assert len(_about_target(slack)) == 1
    [message] = [m for m in slack.top_level(CHANNEL) if TARGET in full_text(m)]

    def thread() -> str:
        replies = "\n".join(full_text(r) for r in slack.thread(CHANNEL, message.ts))
        return replies if replies.count("Joined this incident") == len(HIT) - 1 else ""

    replies = wait_until(thread, DELIVERY_TIMEOUT, "the details of the two clients that joined")
    assert f"`{KEPT}`: still healthy" in replies
