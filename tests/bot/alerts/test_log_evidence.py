"""Log evidence in alert messages.

Through the whole bot (`compose.build_bot` over real clients, the webhook intake, the pipeline, the outbox,
a fake Slack) against the simulator: the alerts of the target-down, peer-watch-dropped and license-failure
scenarios show the client control plane's matching log lines, with pod, count and meaning. Through the
pipeline harness: the log read keeps to the enrichment budget (late is marked, not waited for), a failed
read says why, a cluster without a configured control plane gets no log line, and one read serves every
alert of a cluster.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot import compose
from bot.alerts.pipeline import AlertPipeline
from bot.domain.log_reference import PodLog
from bot.reads.control_plane_logs import ControlPlaneLogs
from config.clusters import ClusterSettings
from config.loader import load_config
from config.settings import Settings
from sim.slack_api import FakeSlack, iter_texts
from tests.e2e.stack import (
    BOT_TOKEN,
    CHANNEL,
    alert_entry,
    auth,
    notification,
    now,
    proxy_alert,
    write_bot_config,
)
from tests.fakes.alert_pipeline import Harness, alert, cluster_config, details_of, text_of, webhook
from tests.fakes.sim_scenarios import RecordingSimServer, started
from tests.fakes.slack_requests import asgi
from tests.waiting import eventually

# scenario -> (the alert it fires, what its message must show of the logs)
SCENARIOS: dict[str, tuple[str, list[str]]] = {
    "target-down": (
        "ResourceProxyNoHealthyPeers",
        [
            "Control-plane logs (last 100 lines of 1 pod in vcluster-team-a): ",
            "team-a-0: all peer hosts for the proxy target are quarantined (",
            "; quarantining proxy target peer host after consecutive dial failures (",
        ],
    ),
    "peer-watch-dropped": (
        "ResourceProxyPeerCacheUnsynced",
        # The alert's own group/version's line: the other one belongs to that group/version's alert.
        ["team-a-0: peer watch subscription is down and no fresh netmap is available (1 line)"],
    ),
    "license-failure": (
        "ResourceProxyPeerCacheUnsynced",
        [
            "team-a-0: peer cache did not sync in time for the startup probe (1 line)",
            "; initial probe of proxy target failed, requests will keep retrying (1 line)",
        ],
    ),
}


@pytest.fixture(params=list(SCENARIOS))
def running(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    for server, _ in started(tmp_path_factory, request.param):
        yield request.param, server


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL]) as slack:
        yield slack


async def test_the_scenarios_alert_shows_its_log_lines(
    running: tuple[str, RecordingSimServer], fake: FakeSlack, tmp_path: Path
) -> None:
    scenario, sim = running
    alertname, expected = SCENARIOS[scenario]
    settings = load_config(write_bot_config(sim, tmp_path, fake.api_url), env={}, purpose="serve").settings
    clients = await compose.open_clients(settings)
    bot = compose.build_bot(settings, clients, warm_interval=3600)
    try:
        async with bot.app.router.lifespan_context(bot.app), asgi(bot.app) as http:
            body = json.dumps(notification([alert_entry(proxy_alert(alertname), now())])).encode()
            headers = {**auth(), "Content-Type": "application/json"}
            assert (await http.post("/alertmanager", content=body, headers=headers)).status_code == 202
            [posted] = await eventually(lambda: fake.top_level(CHANNEL), "the alert's message")
            [details] = await eventually(lambda: fake.thread(CHANNEL, posted.ts), "its details reply")
    finally:
        await bot.close()
    # The log lines are evidence, counted: the details reply in the message's thread carries them.
    text = "\n".join(iter_texts(details.blocks))
    for words in expected:
        assert words in text, f"{words!r} not in the {scenario} message:\n{text}"
    # One reading: the logs shown as evidence are what the verdict rests on (it said "not read").
    assert "client logs: last 100 lines of 1 pod" in text
    assert "client logs: not read" not in text
    # Read from the control plane cluster: the client's pod list and its one pod's log (the logs), and the
    # target's pods (the verdict); nothing else.
    paths = {path for _, path, _ in sim.requests if "/clusters/control-plane/api/v1/" in path}
    pods = "/clusters/control-plane/api/v1/namespaces/vcluster-team-a/pods"
    target_pods = "/clusters/control-plane/api/v1/namespaces/vcluster-crd-store/pods"
    assert paths == {pods, f"{pods}/team-a-0/log", target_pods}


# -- the budget, through the pipeline harness ------------------------------------------------------------


def configured(timeout: float = 5.0) -> Settings:
    alpha = cluster_config("alpha", None)
    alpha["control_plane"] = {"kubeconfig": "/etc/proxybot/control-plane.yaml"}
    return Settings.model_validate(
        {
            "slack": {"default_channel": "#proxy-alerts"},
            "clusters": [alpha, cluster_config("beta", None)],
            "enrichment": {"timeout_seconds": timeout},
        }
    )


LINE = (
    "2024-05-01T10:00:00Z 2024-05-01 10:00:00\tERROR\tproxy/dialer.go\tall peer hosts for the proxy "
    'target are quarantined\t{"target": "alpha/db"}'
)


class FakeLogs:
    """The control plane's logs: one pod's lines, counted reads, an optional gate that holds them."""

    def __init__(self, *, fail: BaseException | None = None) -> None:
        self.reads: list[str] = []
        self.gate: asyncio.Event | None = None
        self.fail = fail

    def ready(self, cluster: ClusterSettings) -> ControlPlaneLogs | None:
        return None  # every read runs (counted, gated)

    async def read(self, cluster: ClusterSettings) -> ControlPlaneLogs:
        self.reads.append(cluster.name)
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        pods = (PodLog(f"{cluster.name}-0", (LINE, "unrelated line")),)
        return ControlPlaneLogs(cluster.name, cluster.control_plane_namespace, None, pods)

    async def cancel_pending(self) -> None:
        """Nothing outlives a caller here."""


@pytest.fixture
def with_logs(harness: Harness) -> tuple[Harness, FakeLogs]:
    logs = FakeLogs()
    harness.pipeline = pipeline(harness, configured(), logs)
    return harness, logs


def pipeline(harness: Harness, settings: Settings, logs: FakeLogs) -> AlertPipeline:
    return AlertPipeline(
        settings, harness.store, harness.outbox, harness.live, clock=harness.clock, logs=logs
    )


async def test_alerts_of_a_cluster_with_a_control_plane_show_its_lines(
    with_logs: tuple[Harness, FakeLogs],
) -> None:
    harness, logs = with_logs
    second = {**alert("a2"), "labels": {**alert("a2")["labels"], "group_version": "example.com/v2"}}
    await harness.run(webhook([alert("a1", target="alpha/db"), second]))
    text = text_of(details_of(await harness.items()))
    assert "Control-plane logs (last 100 lines of 1 pod in vcluster-alpha):" in text
    assert "alpha-0: all peer hosts for the proxy target are quarantined (1 line)" in text
    assert "Incident-grade" not in text, "counted, not quoted: the line's meaning is `proxybot logs`'"
    assert logs.reads == ["alpha"]  # one read for every alert of the cluster


async def test_a_cluster_without_a_control_plane_gets_no_log_line(
    with_logs: tuple[Harness, FakeLogs],
) -> None:
    harness, logs = with_logs
    await harness.run(webhook([alert("b1", cluster="beta", target="beta/db")]))
    assert "Control-plane logs" not in text_of(details_of(await harness.items()))
    assert logs.reads == []


async def test_late_logs_are_marked_and_not_waited_for(with_logs: tuple[Harness, FakeLogs]) -> None:
    harness, logs = with_logs
    logs.gate = asyncio.Event()  # never opened: the read hangs
    harness.pipeline = pipeline(harness, configured(timeout=0.05), logs)
    async with asyncio.timeout(2):
        await harness.run(webhook([alert("a1", target="alpha/db")]))
    text = text_of(details_of(await harness.items()))
    assert "Control-plane logs: unavailable: took longer than 0.05s" in text
    assert "Live state read" in text  # the live read was on time and is used


async def test_a_failed_log_read_says_why_and_posts_anyway(harness: Harness) -> None:
    harness.pipeline = pipeline(harness, configured(), FakeLogs(fail=RuntimeError("boom")))
    await harness.run(webhook([alert("a1", target="alpha/db")]))
    assert "Control-plane logs: unavailable: RuntimeError" in text_of(details_of(await harness.items()))


async def test_an_unreadable_control_plane_is_said_in_the_alert(harness: Harness) -> None:
    class Forbidden(FakeLogs):
        async def read(self, cluster: ClusterSettings) -> ControlPlaneLogs:
            why = "the bot's identity lacks list on pods in vcluster-alpha"
            return ControlPlaneLogs(cluster.name, "vcluster-alpha", None, unavailable=why)

    harness.pipeline = pipeline(harness, configured(), Forbidden())
    await harness.run(webhook([alert("a1", target="alpha/db")]))
    text = text_of(details_of(await harness.items()))
    assert "Control-plane logs: unavailable: the bot's identity lacks list on pods in vcluster-alpha" in text


async def test_an_alert_shows_only_its_own_group_versions_lines(harness: Harness) -> None:
    class TwoVersions(FakeLogs):
        async def read(self, cluster: ClusterSettings) -> ControlPlaneLogs:
            lines = tuple(
                LINE.replace('{"target": "alpha/db"}', f'{{"target": "alpha/db", "groupVersion": "{gv}"}}')
                for gv in ("example.com/v1", "example.com/v2", "example.com/v2")
            )
            return ControlPlaneLogs(cluster.name, "vcluster-alpha", None, (PodLog("alpha-0", lines),))

    harness.pipeline = pipeline(harness, configured(), TwoVersions())
    await harness.run(webhook([alert("a1", target="alpha/db")]))  # group_version example.com/v1
    text = text_of(details_of(await harness.items()))
    assert "alpha-0: all peer hosts for the proxy target are quarantined (1 line)" in text
