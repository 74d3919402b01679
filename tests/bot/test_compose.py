"""The composition root: one reader per source and one live state for every consumer, clients swapped for
fakes reaching every consumer, and `close()` closing what was opened, once."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import httpx
import pytest
import yaml

from bot import compose
from bot.clients.prometheus import PrometheusClient
from bot.clients.slack import SlackClient
from bot.reads.context import live_sources
from bot.store import StoreError
from config.loader import load_config
from config.settings import Settings, SlackSettings
from handlers import commands
from sim.slack_api import FakeSlack
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
from tests.fakes.sim_scenarios import RecordingSimServer
from tests.fakes.slack_requests import asgi, command_body
from tests.waiting import eventually

OPS = "C0OPS0001"
TARGET = "platform/crd-store"
PROMETHEUS = "http://prometheus.test:9090"


@pytest.fixture(scope="module")
def sim() -> Iterator[RecordingSimServer]:
    with RecordingSimServer(scenario="healthy", speed=10) as server:
        yield server


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL, "#ops"]) as slack:
        yield slack


@pytest.fixture
def settings(sim: RecordingSimServer, fake: FakeSlack, tmp_path: Path) -> Settings:
    path = write_bot_config(sim, tmp_path, fake.api_url)
    doc = yaml.safe_load(path.read_text())
    doc["access"] = {"channels": [{"channel": "#ops", "clusters": ["*"]}]}
    doc["prometheus"] = {"url": PROMETHEUS}
    path.write_text(yaml.safe_dump(doc))
    return load_config(path, env={}, purpose="serve").settings


@pytest.fixture
async def clients(settings: Settings) -> AsyncIterator[compose.Clients]:
    opened = await compose.open_clients(settings)
    yield opened
    await opened.close()


async def ask(bot: compose.Bot, text: str) -> list[dict[str, Any]]:
    """`/proxy text` from #ops, straight into the command handler; every answer it gave."""
    answers: list[dict[str, Any]] = []

    async def respond(**answer: Any) -> None:
        answers.append(answer)

    body = command_body(
        text, "http://slack.invalid/response", user="U0OPS0001", channel=OPS, channel_name="ops"
    )
    await commands.answer(bot.commands, dict(parse_qsl(body)), respond)  # type: ignore[arg-type]
    return answers


def syncer_reads(sim: RecordingSimServer, since: int) -> list[str]:
    return [path for _, path, _ in sim.requests[since:] if path.endswith("/metrics/syncer")]


# -- one reader per source, one live state ----------------------------------------------------------------


async def test_every_consumer_reads_each_source_through_one_reader(
    settings: Settings, clients: compose.Clients
) -> None:
    assert set(clients.readers) == {source.name for source in live_sources(settings)}
    bot = compose.build_bot(settings, clients)
    try:
        ctx = bot.commands.ctx
        assert await ctx.live() is bot.live
        for cluster in settings.clusters:
            assert await ctx.client(cluster) is clients.readers[cluster.name]
    finally:
        await bot.close()


async def test_alerts_and_proxy_share_one_live_state(
    sim: RecordingSimServer, fake: FakeSlack, settings: Settings, clients: compose.Clients
) -> None:
    bot = compose.build_bot(settings, clients, warm_interval=3600)
    try:
        async with bot.app.router.lifespan_context(bot.app), asgi(bot.app) as http:
            for source in clients.readers:  # joins the warm-up's first reads, or finds them cached
                assert (await bot.live.read(source)).ok
            mark = len(sim.requests)
            body = json.dumps(notification([alert_entry(proxy_alert(), now())])).encode()
            headers = {**auth(), "Content-Type": "application/json"}
            assert (await http.post("/alertmanager", content=body, headers=headers)).status_code == 202
            await eventually(lambda: fake.top_level(CHANNEL), "the alert's message")
            answers = await ask(bot, f"status {TARGET}")
    finally:
        await bot.close()
    assert "Status of platform/crd-store" in answers[-1]["text"]
    # The alert and the command were both answered from the reads the bot had already made.
    assert syncer_reads(sim, mark) == []


async def test_the_digest_links_the_alert_firing_now_to_its_message_in_slack(
    fake: FakeSlack, settings: Settings, clients: compose.Clients
) -> None:
    bot = compose.build_bot(settings, clients, warm_interval=3600)
    try:
        async with bot.app.router.lifespan_context(bot.app), asgi(bot.app) as http:
            body = json.dumps(notification([alert_entry(proxy_alert(), now())])).encode()
            headers = {**auth(), "Content-Type": "application/json"}
            assert (await http.post("/alertmanager", content=body, headers=headers)).status_code == 202
            [alert] = await eventually(lambda: fake.top_level(CHANNEL), "the alert's message")
            # Its details reply is sent once the message's address is stored: the digest can read it.
            await eventually(lambda: fake.thread(CHANNEL, alert.ts), "the alert's details reply")
            assert bot.commands.digest is not None
            await bot.commands.digest()
            found = await eventually(lambda: fake.top_level(CHANNEL)[1:], "the digest's message")
    finally:
        await bot.close()
    link = f"<https://proxybot-sim.slack.com/archives/{alert.channel}/p{alert.ts.replace('.', '')}|"
    assert link in json.dumps(found[0].blocks, ensure_ascii=False)


# -- a fake swapped in -------------------------------------------------------------------------------------


class FakePrometheus(httpx.AsyncBaseTransport):
    """Prometheus' HTTP API answering every query with nothing; records which endpoints were asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        endpoint = request.url.path.removeprefix("/api/v1/")
        self.asked.append(endpoint)
        data: Any = {"groups": []} if endpoint == "rules" else {"activeTargets": []}
        if endpoint.startswith("query"):
            data = {"resultType": "matrix" if endpoint == "query_range" else "vector", "result": []}
        return httpx.Response(200, json={"status": "success", "data": data})


async def test_a_client_swapped_for_a_fake_reaches_every_consumer(
    settings: Settings, clients: compose.Clients
) -> None:
    prometheus = FakePrometheus()
    swapped = replace(clients, prometheus=PrometheusClient(PROMETHEUS, transport=prometheus))
    bot = compose.build_bot(settings, swapped)
    try:
        await ask(bot, "verify")
        assert {"rules", "targets"} <= set(prometheus.asked)
        prometheus.asked.clear()
        await ask(bot, f"reasons {TARGET} --window 30m")
        assert prometheus.asked, "/proxy reasons asked the fake"
        prometheus.asked.clear()
        assert bot.commands.digest is not None
        await bot.commands.digest()
        assert "query_range" in prometheus.asked, "the digest's charts asked the fake"
        assert bot.enricher is not None
        assert bot.enricher.client is swapped.prometheus, "the alerts' enrichment asks the fake"
        assert bot.enricher.executor is bot.pool, "the alerts' charts are drawn in the worker processes"
    finally:
        await bot.close()
        await swapped.prometheus.aclose()


# -- arrivals: what the storm table's caught-up rule reads -----------------------------------------------


async def test_the_alert_worker_and_the_silenced_ends_share_the_intakes_arrivals(
    settings: Settings, clients: compose.Clients, monkeypatch: pytest.MonkeyPatch
) -> None:
    given: dict[str, Any] = {}
    signals: list[Any] = []
    register, silenced_ends = compose.alerts.register, compose.SilencedEnds

    def registered(*args: Any, **kwargs: Any) -> Any:
        given.update(kwargs)
        return register(*args, **kwargs)

    def ends(*args: Any) -> Any:
        signals.append(args[2])
        return silenced_ends(*args)

    monkeypatch.setattr(compose.alerts, "register", registered)
    monkeypatch.setattr(compose, "SilencedEnds", ends)
    instants = iter(range(1000, 2000))
    bot = compose.build_bot(settings, replace(clients, pacing=lambda: float(next(instants))))
    try:
        newest = given["arrivals"]
        assert newest is not None, "one replica on SQLite knows every arrival"
        assert newest() is None
        async with asgi(bot.app) as http:  # no lifespan: the worker does not take it away
            body = json.dumps(notification([alert_entry(proxy_alert(), now())])).encode()
            headers = {**auth(), "Content-Type": "application/json"}
            assert (await http.post("/alertmanager", content=body, headers=headers)).status_code == 202
        [stored] = await clients.store.pending()
        assert 1000 <= stored.received_at < 2000, "received on the clock work is paced by"
        assert newest() == stored.received_at, "the intake notes each webhook it stores"
        [arrived] = signals
        bot.deps.wake.clear()
        arrived()
        assert newest() > stored.received_at, "a silenced group's end stored again is an arrival"
        assert bot.deps.wake.is_set()
    finally:
        await bot.close()


# -- closing ---------------------------------------------------------------------------------------------


class FakeSilences:
    """Alertmanager's silences, counting how often anything closed it."""

    def __init__(self) -> None:
        self.closed = 0

    async def create_silence(self, *args: Any, **kwargs: Any) -> str:
        return "silence-1"

    async def silences(self) -> list[Any]:
        return []

    async def expire_silence(self, silence: str) -> None:
        return None

    async def aclose(self) -> None:
        self.closed += 1


async def test_close_closes_what_was_opened_and_leaves_a_fake_to_its_test(settings: Settings) -> None:
    opened = await compose.open_clients(settings)
    real_alertmanager = opened.alertmanager
    assert real_alertmanager is not None
    silences = FakeSilences()
    bot = compose.build_bot(settings, replace(opened, alertmanager=silences))
    await bot.close()
    with pytest.raises(StoreError, match="closed"):
        await opened.store.pending()
    assert opened.prometheus is not None
    with pytest.raises(RuntimeError, match="closed"):
        await opened.prometheus.query("up")
    with pytest.raises(RuntimeError, match="closed"):
        await real_alertmanager.silences()  # swapped out, and still closed: it was opened
    assert silences.closed == 0
    await asyncio.wait_for(opened.close(), timeout=5)  # nothing left to close: a second close is a no-op


async def test_a_source_whose_kubeconfig_fails_says_why_in_the_shared_live_state(
    settings: Settings, tmp_path: Path
) -> None:
    missing = tmp_path / "missing.yaml"
    broken = settings.clusters[0].model_copy(update={"kubeconfig": missing})
    settings = settings.model_copy(update={"clusters": (broken, *settings.clusters[1:])})
    clients = await compose.open_clients(settings)
    bot = compose.build_bot(settings, clients)
    try:
        assert "team-a" in clients.unreadable
        assert "team-a" not in clients.readers
        read = await bot.live.read("team-a")
        assert read.unavailable is not None
        assert "missing.yaml" in read.unavailable
        answers = await ask(bot, f"status {TARGET}")
        assert "Traceback" not in answers[-1]["text"]
    finally:
        await bot.close()


# -- Slack at start: in the log, never in readiness ------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "said"), [("xoxb-right", "posting as proxybot"), ("xoxb-wrong", "invalid_auth")]
)
async def test_start_says_in_the_log_whether_slack_takes_the_token(
    caplog: pytest.LogCaptureFixture, token: str, said: str
) -> None:
    caplog.set_level(logging.INFO, logger="bot.compose")
    with FakeSlack(bot_token="xoxb-right") as slack:
        client = SlackClient.from_settings(SlackSettings(bot_token=token, api_url=slack.api_url), timeout=2.0)
        await compose.say_who_posts(client)
    assert any(said in r.getMessage() for r in caplog.records)
    assert token not in caplog.text
