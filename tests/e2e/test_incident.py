"""One incident, one message, through a real Alertmanager (Debian's 0.25) and `proxybot serve`.

The client's peer watch drops (the simulator's peer-watch-dropped scenario) and the three alerts the guide's
rules then fire reach Alertmanager as three groups: PeerCacheUnsynced (both group/versions), then
DiscoveryDegraded (labelled by target and group/version only) and ProbeFailing (by namespace and CronJob
only). The bot reads the same cause in all three, the client's peer feed, and posts one message.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sim.kube.resources import PROBE_NAME
from sim.server import SimServer
from sim.slack_api import FakeSlack
from tests.e2e.conftest import BotLauncher
from tests.e2e.stack import CHANNEL, CLIENT, TARGET, WEBHOOK_TOKEN, BotProcess, now, rfc3339
from tests.e2e.test_alertmanager_flow import DELIVERY_TIMEOUT, ROUTE, am_alert, full_text, top_level_posts
from tests.harness.alertmanager import Alertmanager
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

BOTH_GVS = ("example.com/v1", "data.example.com/v1alpha1")


@pytest.fixture
def sim() -> Iterator[SimServer]:
    # At 20x the watch drops 3 s in and the cached peer list is distrusted from 6 s.
    with SimServer(scenario="peer-watch-dropped", speed=20) as srv:
        yield srv


def unsynced(sim: SimServer) -> bool:
    """Whether every peer cache of the client reports `peer_cache_synced` 0, read as the bot reads it."""
    url = sim.cluster_url(CLIENT) + "/metrics/syncer"
    trust = ssl.create_default_context(cafile=str(sim.ca_path))
    page = httpx.get(url, headers={"Authorization": f"Bearer {sim.token}"}, verify=trust, timeout=5.0)
    synced = [line for line in page.text.splitlines() if line.startswith("vcluster_proxy_peer_cache_synced{")]
    return bool(synced) and all(line.endswith(" 0") for line in synced)


@pytest.fixture
def bot(sim: SimServer, bots: BotLauncher) -> BotProcess:
    wait_until(lambda: unsynced(sim), 30.0, "the client's peer caches to go unsynced")
    return bots.start()


@pytest.fixture
def alertmanager(tmp_path: Path, bot: BotProcess) -> Iterator[Alertmanager]:
    workdir = tmp_path / "alertmanager"
    workdir.mkdir()
    with Alertmanager(workdir, f"{bot.url}/alertmanager", WEBHOOK_TOKEN, route=ROUTE) as am:
        yield am


def test_the_three_alerts_of_a_dropped_peer_watch_are_one_message(
    sim: SimServer, slack: FakeSlack, bot: BotProcess, alertmanager: Alertmanager
) -> None:
    # Started now, not minutes ago: Alertmanager flushes a new group at once when its first alert started
    # more than group_wait ago, so the second alert of the same POST could miss that flush and come as a
    # second notification (one more "new" reply; seen under load). Now, group_wait holds both.
    started = rfc3339(now())
    pod = sim.pods(CLIENT)[0]
    cache = {"alertname": "ResourceProxyPeerCacheUnsynced", "cluster": CLIENT, "target": TARGET, "pod": pod}
    alertmanager.post_alerts(
        [am_alert({**cache, "group_version": gv, "severity": "critical"}, started) for gv in BOTH_GVS]
    )
    wait_until(lambda: slack.top_level(CHANNEL), DELIVERY_TIMEOUT, "the incident's first message")
    [message] = slack.top_level(CHANNEL)

    degraded = {"alertname": "ResourceProxyDiscoveryDegraded", "target": TARGET, "severity": "warning"}
    probe = {
        "alertname": "ResourceProxyProbeFailing",
        "namespace": f"vcluster-{CLIENT}",
        "cronjob": PROBE_NAME,
        "job": "kube-state-metrics",
        "severity": "critical",
    }
    # Started now too: the first message took longer than group_wait, so `started` would flush the new
    # groups at once, and the second DiscoveryDegraded of this POST came as a notification of its own (a
    # "1 new" reply in the thread; seen in a whole-suite run).
    joined_at = rfc3339(now())
    alertmanager.post_alerts(
        [
            *(am_alert({**degraded, "group_version": gv}, joined_at) for gv in BOTH_GVS),
            am_alert(probe, joined_at),
        ],
    )

    def joined() -> list[str]:
        replies = [full_text(r) for r in slack.thread(CHANNEL, message.ts)]
        return [r for r in replies if "Joined this incident" in r]

    wait_until(lambda: len(joined()) == 2, DELIVERY_TIMEOUT, "a details reply for each alert that joined")
    shown = "the message edited to show them"
    wait_until(lambda: "3 alert rules, one cause" in full_text(message), DELIVERY_TIMEOUT, shown)
    text = full_text(message)
    assert "3 alert rules, one cause:* the client's peer feed" in text
    assert "also firing: 🟠 *ResourceProxyDiscoveryDegraded*" in text
    assert "also firing: 🔴 *ResourceProxyProbeFailing* (CronJob" in text
    assert slack.top_level() == [message]
    assert top_level_posts(slack) == 1
    # Each member's reply is its details reply: the full detail, under a header of its own.
    for reply in joined():
        assert "*Details:* " in reply
        assert "Same cause:* the client holds no current peer list" in reply

    # One member resolves while the incident fires on: its line and its details reply turn resolved, in
    # place; the thread gets nothing new (the incident has not resolved).
    alertmanager.post_alerts(
        [am_alert({**degraded, "group_version": gv}, joined_at, rfc3339(now())) for gv in BOTH_GVS]
    )

    def degraded_reply() -> str:
        # The reply's fallback text, its first line, names the member: "Details: firing <alertname>".
        return next((r for r in joined() if "DiscoveryDegraded" in r.splitlines()[0]), "")

    done = "the member's details reply edited to resolved"
    wait_until(lambda: "RESOLVED: ResourceProxyDiscoveryDegraded" in degraded_reply(), DELIVERY_TIMEOUT, done)
    wait_until(lambda: "↳ ✅ *ResourceProxyDiscoveryDegraded*" in full_text(message), DELIVERY_TIMEOUT, done)
    assert message.text.startswith("FIRING")
    assert len(joined()) == 2
    # The first group's details reply and one per member: no note per join, none per member's resolve.
    assert len(slack.thread(CHANNEL, message.ts)) == 3
    assert top_level_posts(slack) == 1
