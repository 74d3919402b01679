"""Running the probe: each outcome classified with its evidence (fake reader, then the simulator)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from bot.checks.probe import probe_request
from bot.checks.probe_run import probe_with, run_probe
from bot.clients.kube import RawResponse
from bot.domain.parser import parse_syncer
from bot.domain.paths import ApiPath
from bot.domain.probe_result import ProbeOutcome
from bot.errors import ClusterError, InputError
from bot.live import ClusterRead
from bot.reads.context import CheckContext
from config.loader import load_config
from config.settings import Settings
from sim.server import SimServer
from tests.fakes.manifests import ROOT
from tests.fakes.probe_settings import GV, PROBE, SETTINGS, TARGET

DISCOVERY = "/apis/example.com/v1"

Answer = RawResponse | ClusterError


def _json(
    status: int, body: Any, headers: Mapping[str, str] | None = None, seconds: float = 0.02
) -> RawResponse:
    return RawResponse(status, json.dumps(body).encode(), dict(headers or {}), seconds)


def _status(code: int, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code}


def _discovery(*rows: tuple[str, list[str], bool]) -> RawResponse:
    resources = [{"name": n, "verbs": v, "namespaced": ns, "kind": n.title()} for n, v, ns in rows]
    return _json(200, {"kind": "APIResourceList", "groupVersion": GV, "resources": resources})


class FakeReader:
    """Answers per path, in order (the last answer repeats); records every request."""

    def __init__(self, answers: Mapping[str, list[Answer]]) -> None:
        self.answers = {path: list(items) for path, items in answers.items()}
        self.requests: list[ApiPath] = []

    async def get(self, path: ApiPath, *, timeout: float) -> RawResponse:
        self.requests.append(path)
        queue = self.answers[path.path]
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, ClusterError):
            raise answer
        return answer


PAGE = """\
vcluster_proxy_peers{target="platform/crd-store",group_version="example.com/v1",state="healthy"} 0
vcluster_proxy_peers{target="platform/crd-store",group_version="example.com/v1",state="quarantined"} 2
vcluster_proxy_peers{target="platform/crd-store",group_version="example.com/v1",state="half_open"} 0
vcluster_proxy_peer_cache_synced{target="platform/crd-store",group_version="example.com/v1"} 1
"""


async def _live() -> ClusterRead:
    return ClusterRead("team-a", 0.0, parse_syncer(PAGE), None, None)


async def _probe(answers: Mapping[str, list[Answer]], repeat: int = 1) -> tuple[Any, FakeReader]:
    reader = FakeReader(answers)
    return await probe_with(reader, probe_request(SETTINGS, TARGET), _live, repeat=repeat), reader


async def test_repeat_is_bounded() -> None:
    for bad in (0, 11):
        with pytest.raises(InputError, match="--repeat"):
            await _probe({PROBE: [_json(200, {"items": []})]}, repeat=bad)


# -- outcomes -----------------------------------------------------------------------------------------


async def test_200_series_reports_min_p50_max() -> None:
    answers: list[Answer] = [_json(200, {"items": [{}]}, seconds=s) for s in (0.03, 0.01, 0.02)]
    result, reader = await _probe({PROBE: answers}, repeat=3)
    assert result.passed
    assert result.outcome is ProbeOutcome.OK
    assert result.latency is not None
    assert (result.latency.count, result.latency.min, result.latency.p50, result.latency.max) == (
        3,
        0.01,
        0.02,
        0.03,
    )
    assert [p.path for p in reader.requests] == [PROBE] * 3


async def test_503_from_the_proxy_shows_retry_after_and_peer_state() -> None:
    msg = 'target tenant cluster "crd-store" for example.com/v1 is unavailable'
    result, _ = await _probe({PROBE: [_json(503, _status(503, msg), {"Retry-After": "1"})]})
    assert not result.passed
    assert result.outcome is ProbeOutcome.UNAVAILABLE
    assert "503 from the proxy" in result.summary
    assert f"answer: {msg}" in result.evidence
    assert any(line.startswith("Retry-After: 1") for line in result.evidence)
    assert (
        "live example.com/v1: peers: healthy 0, quarantined 2, half_open 0; cache synced" in result.evidence
    )


async def test_a_503_without_retry_after_is_not_read_as_the_targets_own() -> None:
    """troubleshoot/resource-proxy.mdx, "Target tenant cluster returns 503 unavailable": a target's 5xx
    becomes the proxy's 503 with the generic text and `Retry-After: 1`, so a missing header does not show
    the target answered; the cause is read from the `reason` label or the logs."""
    result, _ = await _probe({PROBE: [_json(503, _status(503, "the target is down"))]})
    assert result.outcome is ProbeOutcome.UNAVAILABLE
    assert "answered 503 itself" not in result.summary
    assert "503 from the proxy" in result.summary
    assert "`reason` label" in result.next_step
    assert "/proxy logs platform/crd-store" in result.next_step
    assert not any("not a proxy-made 503" in line for line in result.evidence)
    assert any(
        line.startswith("no Retry-After header: the proxy sets it on every 503") for line in result.evidence
    )


async def test_a_503_says_what_the_live_peer_state_points_at() -> None:
    """troubleshoot/resource-proxy.mdx, "Quick triage": no healthy peers point at the peers (target or
    path); the answer itself, with or without Retry-After, never does."""
    msg = 'target tenant cluster "crd-store" for example.com/v1 is unavailable'
    result, _ = await _probe({PROBE: [_json(503, _status(503, msg), {"Retry-After": "1"})]})
    assert (
        "live state points at the peers: none healthy (the target down, or the path to it)" in result.evidence
    )


async def test_a_503_beside_no_healthy_peer_leads_its_next_step_with_the_target() -> None:
    """The tour's probe said "Next step: The answer cannot say why: ..." beside its own live line "points
    at the peers: none healthy": the step now starts from what the live state points at."""
    msg = 'target tenant cluster "crd-store" for example.com/v1 is unavailable'
    result, _ = await _probe({PROBE: [_json(503, _status(503, msg), {"Retry-After": "1"})]})
    assert result.next_step.startswith("No healthy peer now: check the target's control plane first")
    assert "cannot say why" not in result.next_step


async def test_a_single_failure_in_a_series_fails_it() -> None:
    answers: list[Answer] = [_json(200, {"items": []}), _json(503, _status(503, "x"), {"Retry-After": "1"})]
    result, _ = await _probe({PROBE: answers}, repeat=2)
    assert result.outcome is ProbeOutcome.UNAVAILABLE
    assert result.evidence[0] == "answers: 200 x1, 503 x1"


async def test_404_on_a_list_is_not_served_and_discovery_says_why() -> None:
    answers: dict[str, list[Answer]] = {
        PROBE: [_json(404, _status(404, "the server could not find the requested resource"))],
        DISCOVERY: [_discovery(("gadgets", ["get", "list"], True))],
    }
    result, reader = await _probe(answers)
    assert result.outcome is ProbeOutcome.NOT_SERVED
    assert "ownership masking never applies to lists" in result.summary
    assert (
        "discovery of example.com/v1 answered 200 but does not list 'widgets' (listed: gadgets)"
        in result.evidence
    )
    assert [p.path for p in reader.requests] == [PROBE, DISCOVERY]


async def test_404_with_the_fallback_document_is_named() -> None:
    answers: dict[str, list[Answer]] = {
        PROBE: [_json(404, _status(404, "not found"))],
        DISCOVERY: [_discovery(("widgets", ["get"], True))],
    }
    result, _ = await _probe(answers)
    assert any("only `get`" in line and "fallback document" in line for line in result.evidence)


async def test_404_with_the_group_version_not_served() -> None:
    answers: dict[str, list[Answer]] = {
        PROBE: [_json(404, _status(404, "not found"))],
        DISCOVERY: [_json(404, _status(404, "not found"))],
    }
    result, _ = await _probe(answers)
    assert "discovery GET /apis/example.com/v1 answered 404" in result.evidence


async def test_401_with_discovery_refused_too_is_the_bots_credentials() -> None:
    refused = _json(401, _status(401, "Unauthorized"))
    result, _ = await _probe({PROBE: [refused], DISCOVERY: [refused]})
    assert result.outcome is ProbeOutcome.UNAUTHORIZED
    assert "rejects the bot's own credentials" in result.summary


async def test_401_on_the_probe_only_is_passed_through_from_the_target() -> None:
    answers: dict[str, list[Answer]] = {
        PROBE: [_json(401, _status(401, "Unauthorized"))],
        DISCOVERY: [_discovery(("widgets", ["get", "list"], True))],
    }
    result, _ = await _probe(answers)
    assert "platform/crd-store refused the proxy's credentials (passed through)" in result.summary


async def test_403_names_the_refused_user_and_both_sides() -> None:
    msg = 'widgets.example.com is forbidden: User "bot" cannot list resource "widgets"'
    answers: dict[str, list[Answer]] = {
        PROBE: [_json(403, _status(403, msg))],
        DISCOVERY: [_discovery(("widgets", ["get", "list"], True))],
    }
    result, _ = await _probe(answers)
    assert result.outcome is ProbeOutcome.FORBIDDEN
    assert f"answer: {msg}" in result.evidence
    assert result.summary == "403: the bot's identity (bot) may not list widgets on team-a"
    assert "Grant the bot `list` on widgets.example.com in namespace " in result.next_step
    # The step names the shipped Role that grants it, as the tenant manifest spells it.
    assert "`proxybot-tenant-probe` in config/deploy/tenant-cluster/rbac.yaml" in result.next_step
    assert "name: proxybot-tenant-probe" in (ROOT / "config/deploy/tenant-cluster/rbac.yaml").read_text()


async def test_timeout_is_a_degraded_path_with_peer_state() -> None:
    result, _ = await _probe({PROBE: [ClusterError("team-a", "timeout", "GET timed out after 15s")]})
    assert result.outcome is ProbeOutcome.TIMEOUT
    assert "degraded" in result.summary
    assert result.latency is None
    assert any(line.startswith("live example.com/v1:") for line in result.evidence)


async def test_501_is_an_upgrade_rejected() -> None:
    result, _ = await _probe({PROBE: [_json(501, _status(501, "connection upgrades are not supported"))]})
    assert result.outcome is ProbeOutcome.UPGRADE_REJECTED


async def test_unreachable_client_says_nothing_is_known() -> None:
    result, _ = await _probe({PROBE: [ClusterError("team-a", "unreachable", "connection refused")]})
    assert result.outcome is ProbeOutcome.UNREACHABLE
    assert "could not be reached" in result.summary


async def test_as_dict_is_json_with_the_verdict() -> None:
    result, _ = await _probe({PROBE: [_json(200, {"items": []})]})
    report = json.loads(json.dumps(result.as_dict()))
    assert report["verdict"] == "ok"
    assert report["passed"] is True
    assert "the list came back empty" in " ".join(report["evidence"])


# -- against the simulator ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def down(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    with SimServer(scenario="target-down", speed=20) as srv:
        with srv.lock:
            srv.world.advance_to(240.0)
        yield load_config(
            srv.write_config(tmp_path_factory.mktemp("down") / "p.yaml"), env={}, purpose="demo"
        ).settings


async def test_run_probe_target_down_reads_live_peers(down: Settings) -> None:
    ctx = CheckContext(down)
    try:
        result = await run_probe(ctx, probe_request(down, TARGET))
    finally:
        await ctx.aclose()
    assert result.outcome is ProbeOutcome.UNAVAILABLE
    assert any(line.startswith("live example.com/v1: peers: healthy 0") for line in result.evidence)


async def test_run_probe_with_an_unloadable_kubeconfig_is_unreachable(down: Settings, tmp_path: Path) -> None:
    cluster = down.clusters[0].model_copy(update={"kubeconfig": tmp_path / "missing.yaml"})
    broken = down.model_copy(update={"clusters": (cluster,)})
    ctx = CheckContext(broken)
    try:
        result = await run_probe(ctx, probe_request(broken, TARGET))
    finally:
        await ctx.aclose()
    assert result.outcome is ProbeOutcome.UNREACHABLE
    assert "missing.yaml" in (result.attempts[0].message or "")
