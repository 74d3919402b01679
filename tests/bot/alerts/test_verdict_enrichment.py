"""The quick-triage verdict in alert messages: the target's pods read within the enrichment budget, once per
target however many alerts name it; late pods are marked, never waited for."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.alerts.pipeline import AlertPipeline
from bot.domain.verdict import PodState, TargetPods
from bot.store import open_store
from sim.slack_api import iter_texts
from tests.fakes.alert_pipeline import Clock, FakeLive, Harness, alert, settings, webhook


class FakePods:
    """Target pods by name; a target in `slow` answers only after the test opens its gate."""

    def __init__(self, pods: dict[str, TargetPods], slow: frozenset[str] = frozenset()) -> None:
        self.pods = pods
        self.slow = slow
        self.gate = asyncio.Event()
        self.asked: list[str] = []
        self.cancelled = False

    def ready(self, target: str) -> TargetPods | None:
        return None  # every read runs (asked, gated)

    async def read(self, target: str) -> TargetPods:
        self.asked.append(target)
        if target in self.slow:
            await self.gate.wait()
        return self.pods.get(target, TargetPods.missing("not a configured target"))

    async def cancel_pending(self) -> None:
        self.cancelled = True


async def shown(harness: Harness) -> str:
    """Every text of every message the pipeline queued."""
    return "\n".join(t for item in await harness.items() for t in iter_texts(item.payload.get("blocks", [])))


DOWN = TargetPods((PodState("db-0", False, "not Ready (Running, ContainersNotReady)"),))
READY = TargetPods((PodState("db-0", True, "Ready"),))


async def run_with(tmp_path: Path, pods: FakePods, timeout: float = 5.0) -> str:
    clock = Clock()
    store = await open_store(f"sqlite:///{tmp_path / 'proxybot.db'}", clock=clock)
    harness = Harness(store, clock, FakeLive(), settings(timeout))
    harness.pipeline = AlertPipeline(
        settings(timeout), store, harness.outbox, harness.live, clock=clock, pods=pods
    )
    try:
        alerts = [
            alert("a1"),
            alert("a2", "ResourceProxyPeerChurn"),
            alert("b1", cluster="beta", target="beta/db"),
        ]
        await harness.run(webhook(alerts))
        return await shown(harness)
    finally:
        await harness.pipeline.aclose()
        await store.close()


async def test_the_verdict_leads_each_alert_from_its_targets_pods(tmp_path: Path) -> None:
    pods = FakePods({"team-a/db": DOWN, "beta/db": READY})
    text = await run_with(tmp_path, pods)
    assert "*Verdict:* 🔴 target_down: none of the target's 1 control-plane pods is Ready" in text
    # beta's page (the fake's) has no healthy peer for team-a/db only: beta/db reports no series.
    assert "*Verdict:* ❔ unknown" in text  # beta's own message
    assert "*Rests on:* target pods: 0 of 1 Ready" in text
    assert sorted(pods.asked) == ["beta/db", "team-a/db"]  # once per target, not per alert


async def test_pods_later_than_the_budget_are_marked_not_waited_for(tmp_path: Path) -> None:
    pods = FakePods({"team-a/db": DOWN, "beta/db": READY}, slow=frozenset({"team-a/db"}))
    started = asyncio.get_running_loop().time()
    text = await run_with(tmp_path, pods, timeout=0.2)
    assert asyncio.get_running_loop().time() - started < 2.0
    assert "could not be read: enrichment took longer than 0.2s" in text
    assert pods.cancelled  # aclose stops what is still running


async def test_without_a_pods_source_there_is_no_verdict(harness: Harness) -> None:
    await harness.run(webhook([alert("a1")]))
    assert "*Verdict:*" not in await shown(harness)
