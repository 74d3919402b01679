"""Every alert of the guide, in every simulator scenario, is read in five seconds: its top-level message
(firing and resolved) takes at most 15 terminal lines and 1 500 characters of visible text, and its one
details reply is posted with it and edited in place (what the reply carries: `tests/bot/render/`).

Through the real alert path against the running simulator: the pipeline with the bot's own live state
(reading `/metrics/syncer` twice, so counts are over a window), the control plane's logs and the target's
pods for the verdict, a real SQLite store and the delivery outbox; what would reach Slack is taken from
the outbox and printed by the terminal renderer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.alerts.pipeline import AlertPipeline
from bot.compose import open_clients
from bot.delivery.worker import Delivery
from bot.domain.alerts import AlertmanagerWebhook
from bot.domain.alerts_catalog import ALERTS, AlertScope
from bot.live import LiveState
from bot.reads.context import CheckContext
from bot.reads.control_plane_logs import ControlPlaneLogReader
from bot.reads.triage import SharedTargetPods
from bot.render.alert_message import MAX_LINES, MAX_VISIBLE
from bot.render.blocks import Message, block_units
from bot.render.terminal import show
from bot.store import OutboxItem, OutboxKind
from config.loader import load_config
from sim.defaults import CLIENT, PRIMARY_GV, SECONDARY_GV, TARGET_LABEL
from sim.scenarios import SCENARIOS
from tests.e2e.stack import alert_entry, notification, write_bot_config
from tests.fakes.alert_pipeline import NoSlack
from tests.fakes.sim_scenarios import AT, RecordingSimServer, started

START = datetime(2023, 11, 14, 22, 0, tzinfo=UTC)
END = datetime(2023, 11, 14, 22, 14, tzinfo=UTC)
WINDOW = 30.0  # simulated seconds between the bot's two reads


class Ticks:
    """A monotonic clock moved by the test: the live state's cache and window follow it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=sorted(SCENARIOS))
def running(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, RecordingSimServer, Path]]:
    speed, at = AT.get(request.param, (20, 240.0))
    for server, _ in started(tmp_path_factory, request.param, speed, at):
        yield request.param, server, tmp_path_factory.mktemp("bot")


def alerts_of(name: str, pods: list[str], *, resolved: bool = False) -> list[dict[str, Any]]:
    """Every instance of one guide alert the scenario's fleet can fire, as Prometheus labels them."""
    scope = ALERTS[name].scope
    severity = ALERTS[name].severity.label
    if scope is AlertScope.PROBE:
        sets = [{"namespace": f"vcluster-{CLIENT}", "cronjob": "proxy-probe"}]
    else:
        gvs = [PRIMARY_GV, SECONDARY_GV] if scope is AlertScope.GROUP_VERSION else [None]
        sets = [
            {"target": TARGET_LABEL, "cluster": CLIENT, "pod": pod, **({"group_version": gv} if gv else {})}
            for gv in gvs
            for pod in pods
        ]
    return [
        alert_entry({"alertname": name, "severity": severity, **labels}, START, END if resolved else None)
        for labels in sets
    ]


async def test_every_guide_alert_fits_the_budget_and_its_details_carry_the_rest(
    running: tuple[str, RecordingSimServer, Path],
) -> None:
    scenario, sim, workdir = running
    config = write_bot_config(sim, workdir, "http://127.0.0.1:9/api/")
    settings = load_config(config, env={}, purpose="serve").settings
    clients = await open_clients(settings)
    ticks = Ticks()
    live = LiveState({**clients.readers}, monotonic=ticks, wall=clients.clock)
    ctx = CheckContext(settings, wall=clients.clock, shared=clients.readers, live_state=live)
    outbox = Delivery(clients.store, NoSlack())
    pipeline = AlertPipeline(
        settings, clients.store, outbox, live, logs=ControlPlaneLogReader(ctx), pods=SharedTargetPods(ctx)
    )
    try:
        for source in clients.readers:
            await live.read(source)  # the first read: the next one has a window
        with sim.lock:
            sim.world.advance(WINDOW)
        ticks.now += WINDOW
        pods = sim.pods(CLIENT)
        for name in sorted(ALERTS):
            for resolved in (False, True):
                raw = json.dumps(notification(alerts_of(name, pods, resolved=resolved))).encode()
                await clients.store.accept(raw, AlertmanagerWebhook.model_validate_json(raw), clients.clock())
                for pending in await clients.store.pending():
                    await pipeline.process(pending, settle=True)
        items = await clients.store.due(clients.clock() + 86400, limit=10_000)
    finally:
        await pipeline.aclose()
        await ctx.aclose()
        await clients.close()
    checked = 0
    for item in items:
        if item.kind in (OutboxKind.POST, OutboxKind.UPDATE):
            assert_within_budget(scenario, item)
            checked += 1
    assert checked == 2 * len(ALERTS)  # every alert's message, firing and resolved
    assert_one_details_reply_per_group(scenario, items)


def message_of(item: OutboxItem) -> Message:
    return Message(item.payload["text"], tuple(item.payload.get("blocks", [])))


def assert_within_budget(scenario: str, item: OutboxItem) -> None:
    msg = message_of(item)
    shown = show(msg)
    lines = shown.split("\n")
    assert len(lines) <= MAX_LINES, f"{scenario}: {len(lines)} lines:\n{shown}"
    visible = sum(block_units(b) for b in msg.blocks)
    assert visible <= MAX_VISIBLE, f"{scenario}: {visible} characters:\n{shown}"


def assert_one_details_reply_per_group(scenario: str, items: list[OutboxItem]) -> None:
    """Posted with the first message, edited in place by the resolve: never a second reply."""
    details = [i for i in items if i.kind is OutboxKind.REPLY and i.payload["text"].startswith("Details")]
    edits = [i for i in items if i.kind is OutboxKind.REPLY_EDIT]
    groups = {i.payload["group_key"] for i in items if i.kind is OutboxKind.POST}
    assert sorted(i.payload["group_key"] for i in details) == sorted(groups), scenario
    assert sorted(i.payload["group_key"] for i in edits) == sorted(groups), scenario
    assert all(i.payload["text"].startswith("Details: resolved") for i in edits), scenario
