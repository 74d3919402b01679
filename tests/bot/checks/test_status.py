"""status/peers and reasons checks: live state per target, the diagnosis, reasons (window or since start)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from bot.checks.status import (
    SINCE_START,
    parse_window,
    pinned_replica,
    reason_counts,
    run_reasons,
    run_status,
)
from bot.clients.prometheus import PrometheusClient
from bot.domain.findings import Severity
from bot.domain.parser import parse_syncer
from bot.domain.status_result import ReasonsResult, StatusResult
from bot.errors import InputError
from bot.reads.context import CheckContext
from bot.render.blocks import MAX_BLOCKS
from bot.render.checks_status import reasons_message, status_message
from config.loader import load_config
from config.settings import Settings
from tests.fakes.sim_scenarios import started

TARGET = "platform/crd-store"


def _settings(tmp: pytest.TempPathFactory, scenario: str) -> Iterator[Settings]:
    for _, config in started(tmp, scenario):
        yield load_config(config, env={}, purpose="demo").settings


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    yield from _settings(tmp_path_factory, "healthy")


@pytest.fixture(scope="module")
def target_down(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    yield from _settings(tmp_path_factory, "target-down")


@pytest.fixture(scope="module")
def masked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    yield from _settings(tmp_path_factory, "ownership-masked")


async def _status(settings: Settings, target: str | None = None) -> StatusResult:
    ctx = CheckContext(settings)
    try:
        return await run_status(ctx, target)
    finally:
        await ctx.aclose()


async def test_healthy_status_passes_with_peers_per_group_version(healthy: Settings) -> None:
    result = await _status(healthy)
    assert result.passed
    [target] = result.targets
    assert [g.group_version for g in target.group_versions] == ["example.com/v1", "data.example.com/v1alpha1"]
    assert all(g.peers is not None and g.peers.healthy >= 1 and g.cache_synced for g in target.group_versions)
    assert [f.kind for f in target.findings] == ["healthy"]
    # The simulator's config lists its replica: it is read by name.
    assert (result.reads[0].replica, target.replica) == ("team-a-0", "team-a-0")


@pytest.fixture(scope="module")
def ha_split(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    # Only team-a-1's peer watch drops at t=60 (stale from t=120); team-a-0 stays healthy.
    yield from _settings(tmp_path_factory, "ha-split")


async def test_each_ha_replica_reports_its_own_caches(ha_split: Settings) -> None:
    result = await _status(ha_split)
    by_replica = {t.replica: t for t in result.targets}
    assert set(by_replica) == {"team-a-0", "team-a-1"}
    assert [f.kind for f in by_replica["team-a-0"].findings] == ["healthy"]
    assert by_replica["team-a-1"].severity >= Severity.WARNING
    assert not result.passed


async def test_target_down_status_fails_on_no_healthy_peers(target_down: Settings) -> None:
    result = await _status(target_down, TARGET)
    assert not result.passed
    assert result.severity is Severity.CRITICAL
    assert {f.kind for f in result.targets[0].findings if f.severity is Severity.CRITICAL} == {
        "no_healthy_peers"
    }


async def test_ownership_masked_status_passes(masked: Settings) -> None:
    result = await _status(masked, TARGET)
    assert result.passed


async def test_unreadable_client_is_a_warning_not_health(healthy: Settings, tmp_path: Path) -> None:
    cluster = healthy.clusters[0].model_copy(update={"kubeconfig": tmp_path / "missing.yaml"})
    broken = healthy.model_copy(update={"clusters": (cluster,)})
    result = await _status(broken)
    assert not result.passed
    [target] = result.targets
    assert "missing.yaml" in (target.unavailable or "")
    assert [f.kind for f in target.findings] == ["live_state_unavailable"]
    text = status_message(result, datetime.now(UTC)).text
    assert "could not be read" in text


def test_pinned_replica_only_from_a_replica_context(healthy: Settings) -> None:
    cluster = healthy.clusters[0]
    assert pinned_replica(cluster) is None  # context `team-a`: the Service
    assert pinned_replica(cluster.model_copy(update={"context": "team-a-1"})) == "team-a-1"
    assert pinned_replica(cluster.model_copy(update={"context": "team-a-no-metrics"})) is None


async def test_status_message_stays_within_slack_limits(target_down: Settings) -> None:
    message = status_message(await _status(target_down), datetime.now(UTC))
    assert len(message.blocks) <= MAX_BLOCKS
    assert "no healthy peers" in message.text


# -- reasons ------------------------------------------------------------------------------------------


def test_parse_window() -> None:
    assert parse_window("15m") == 900
    assert parse_window("1h30m") == 5400
    assert parse_window("2d") == 172800
    for bad in ("", "15", "15 m", "m", "-5m", "30s", "8d", "15m?x", "1h/"):
        with pytest.raises(InputError, match="--window"):
            parse_window(bad)


async def _reasons(
    settings: Settings, prometheus: PrometheusClient | None = None, window: int | None = 900
) -> ReasonsResult:
    ctx = CheckContext(settings)
    try:
        return await run_reasons(ctx, TARGET, window=window, prometheus=prometheus)
    finally:
        await ctx.aclose()


async def test_reasons_since_start_for_target_down(target_down: Settings) -> None:
    result = await _reasons(target_down)
    assert result.scope == SINCE_START
    assert result.window_seconds is None
    assert not result.passed
    assert result.counts[0].is_fault  # faults first
    families = {c.family for c in result.faults}
    assert {"request", "dial failure"} <= families


async def test_reasons_ownership_masked_is_isolation(masked: Settings) -> None:
    result = await _reasons(masked)
    assert result.passed
    masked_count = next(c for c in result.counts if c.reason == "ownership_masked")
    assert not masked_count.is_fault
    assert masked_count.info.kind.value == "isolation"
    assert "isolation working as intended" in reasons_message(result).blocks[1]["text"]["text"]


def _prometheus(answer: list[dict[str, Any]], seen: list[str]) -> PrometheusClient:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(parse_qs(request.content.decode())["query"][0])
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "vector", "result": answer}}
        )

    return PrometheusClient("http://prometheus.invalid", transport=httpx.MockTransport(handle))


async def test_reasons_over_a_window_come_from_prometheus(healthy: Settings) -> None:
    sample = {
        "metric": {"proxybot_family": "vcluster_proxy_peer_dial_failures_total", "reason": "timeout"},
        "value": [1700000000, "7"],
    }
    seen: list[str] = []
    async with _prometheus([sample], seen) as prometheus:
        result = await _reasons(healthy, prometheus, 1800)
    assert result.scope == "in the last 30m (Prometheus increase())"
    assert result.window_seconds == 1800
    assert [(c.family, c.reason, c.count) for c in result.counts] == [("dial failure", "timeout", 7.0)]
    assert not result.passed
    # The cluster's match labels and the target select the series; the window is the one asked for.
    assert 'cluster="team-a"' in seen[0]
    assert 'target="platform/crd-store"' in seen[0]
    assert "[1800s]" in seen[0]


async def test_reasons_fall_back_to_totals_when_prometheus_fails(healthy: Settings) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, text="down")

    client = PrometheusClient("http://prometheus.invalid", transport=httpx.MockTransport(refuse))
    async with client:
        result = await _reasons(healthy, client)
    assert result.scope == SINCE_START
    assert result.passed
    assert any("Prometheus could not be read" in note for note in result.notes)


def test_reason_counts_skip_zero_and_sort_faults_first() -> None:
    gv = 'target="t/x",group_version="a.b/v1"'
    page = "\n".join(
        [
            f'vcluster_proxy_request_total{{{gv},verb="get",code="200",reason="upstream"}} 50',
            f'vcluster_proxy_request_total{{{gv},verb="get",code="503",reason="no_peer"}} 2',
            'vcluster_proxy_request_terminations_total{target="t/x",reason="upgrade_rejected"} 0',
            f'vcluster_proxy_discovery_fallbacks_total{{{gv},reason="brand_new"}} 1',
        ]
    )
    counts = reason_counts(parse_syncer(page + "\n"), "t/x")
    assert [(c.family, c.reason) for c in counts] == [
        ("request", "no_peer"),
        ("request", "upstream"),
        ("discovery fallback", "brand_new"),
    ]
    assert counts[2].info.known is False
