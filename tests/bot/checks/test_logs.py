"""The logs check's reads: every control-plane pod of the client's namespace, the right container, what
could not be read said per pod (RBAC named), nothing read when the control plane is not configured, and
the alerts' reader sharing one read per cluster. Against a fake API answering through the real
`KubeReader.get_ok` (statuses become the same errors as from a cluster)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from bot.checks.logs import check_logs
from bot.clients.kube import KubeReader, RawResponse
from bot.domain.paths import ApiPath
from bot.errors import ClusterError, InputError
from bot.reads.context import CheckContext, TargetRef, resolve_target
from bot.reads.control_plane_logs import (
    SINCE_MAX_LINES,
    TAIL_LINES,
    ControlPlaneLogReader,
    parse_since,
    read_control_plane,
)
from config.clusters import ControlPlaneSettings
from config.settings import Settings
from tests.fakes.config_data import cluster, config

NAMESPACE = "vcluster-prod"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
QUARANTINED = (
    "2024-05-01T10:00:00Z 2024-05-01 10:00:00\tERROR\tproxy/dialer.go\tall peer hosts for the proxy target "
    'are quarantined; requests fail fast\t{"target": "prod/ledger"}'
)
STARTED = '2024-05-01T09:00:00Z 2024-05-01 09:00:00\tINFO\tproxy/proxy.go\tStarting proxy server\t{"a": 1}'


def pod(name: str, *containers: str, default: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "labels": {"app": "vcluster"}}
    if default:
        meta["annotations"] = {"kubectl.kubernetes.io/default-container": default}
    return {"metadata": meta, "spec": {"containers": [{"name": c} for c in containers]}}


class FakeApi(KubeReader):
    """The control plane cluster's API: canned answers by path, every request kept."""

    def __init__(self, answers: dict[str, tuple[int, str]]) -> None:
        super().__init__("control plane of prod", api=None)  # type: ignore[arg-type]
        self.answers = answers
        self.asked: list[ApiPath] = []

    async def get(self, path: ApiPath, *, timeout: float) -> RawResponse:
        self.asked.append(path)
        status, body = self.answers.get(path.path, (404, '{"kind": "Status"}'))
        return RawResponse(status, body.encode(), {}, 0.001)


class FakeContext(CheckContext):
    """A check context whose control plane cluster is the fake."""

    api: FakeApi | None = None

    async def control_plane(self, name: str, access: ControlPlaneSettings) -> KubeReader:
        assert self.api is not None
        return self.api


def settings(tmp_path: Path, *, control_plane: bool = True) -> Settings:
    data = config(clusters=[cluster("prod")])
    if control_plane:
        data["clusters"][0]["control_plane"] = {"kubeconfig": str(tmp_path / "cp.yaml")}
    return Settings.model_validate(data)


def context(tmp_path: Path, answers: dict[str, tuple[int, str]], **kw: Any) -> tuple[FakeContext, TargetRef]:
    s = settings(tmp_path, **kw)
    ctx = FakeContext(s)
    ctx.api = FakeApi(answers)
    return ctx, resolve_target(s, "prod/ledger")


def listing(*pods: dict[str, Any]) -> tuple[int, str]:
    return 200, json.dumps({"kind": "PodList", "items": list(pods)})


async def test_every_pod_is_read_from_its_syncer_container_and_matched(tmp_path: Path) -> None:
    answers = {
        PODS: listing(pod("prod-1", "syncer", "sidecar"), pod("prod-0", "syncer")),
        f"{PODS}/prod-0/log": (200, STARTED + "\n" + QUARANTINED + "\n"),
        f"{PODS}/prod-1/log": (200, QUARANTINED + "\n"),
    }
    ctx, ref = context(tmp_path, answers)
    result = await check_logs(ctx, ref)
    assert ctx.api is not None
    listed, *logs = ctx.api.asked
    assert listed.query == (("labelSelector", "app=vcluster"),)
    assert [dict(p.query)["container"] for p in logs] == ["syncer", "syncer"]
    assert {dict(p.query)["tailLines"] for p in logs} == {str(TAIL_LINES)}
    assert all(dict(p.query)["timestamps"] == "true" for p in logs)
    ev = result.evidence
    assert [(m.pod, m.reference.key, m.count) for m in ev.matches] == [
        ("prod-0", "all_quarantined", 1),
        ("prod-1", "all_quarantined", 1),
        ("prod-0", "proxy_started", 1),
    ]
    assert ev.scope == "last 100 lines"
    assert not result.passed  # an incident-grade line
    report = result.as_dict()
    assert report["verdict"] == "critical"
    assert [p["pod"] for p in report["pods"]] == ["prod-0", "prod-1"]


async def test_the_default_container_annotation_or_the_only_container_is_read(tmp_path: Path) -> None:
    answers = {
        PODS: listing(pod("prod-0", "a", "b", default="b"), pod("prod-1", "only")),
        f"{PODS}/prod-0/log": (200, ""),
        f"{PODS}/prod-1/log": (200, STARTED),
    }
    ctx, ref = context(tmp_path, answers)
    result = await check_logs(ctx, ref)
    assert ctx.api is not None
    assert [dict(p.query).get("container") for p in ctx.api.asked[1:]] == ["b", None]
    assert result.passed  # every pod read, nothing worse than OK


async def test_since_reads_the_window_with_a_line_cap(tmp_path: Path) -> None:
    answers = {PODS: listing(pod("prod-0", "syncer")), f"{PODS}/prod-0/log": (200, "")}
    ctx, ref = context(tmp_path, answers)
    result = await check_logs(ctx, ref, since=600)
    assert ctx.api is not None
    query = dict(ctx.api.asked[1].query)
    assert (query["sinceSeconds"], query["tailLines"]) == ("600", str(SINCE_MAX_LINES))
    assert result.evidence.scope == "last 10m"


async def test_a_forbidden_list_names_the_missing_grant(tmp_path: Path) -> None:
    ctx, ref = context(tmp_path, {PODS: (403, '{"kind": "Status", "code": 403}')})
    result = await check_logs(ctx, ref)
    said = result.evidence.unavailable or ""
    assert "lacks list on pods in vcluster-prod" in said
    assert "rbac-control-plane.yaml" in said
    assert not result.passed
    assert result.as_dict()["verdict"] == "incomplete"


async def test_a_pod_that_cannot_be_read_does_not_hide_the_others(tmp_path: Path) -> None:
    answers = {
        PODS: listing(pod("prod-0", "syncer"), pod("prod-1", "syncer")),
        f"{PODS}/prod-0/log": (403, "{}"),
        f"{PODS}/prod-1/log": (200, STARTED),
    }
    ctx, ref = context(tmp_path, answers)
    result = await check_logs(ctx, ref)
    [failed, read] = result.evidence.pods
    assert failed.pod == "prod-0"
    assert "lacks get on pods/log" in (failed.error or "")
    assert (read.pod, read.lines, read.error) == ("prod-1", 1, None)
    assert [m.pod for m in result.evidence.matches] == ["prod-1"]
    assert not result.passed


async def test_no_pod_or_no_control_plane_reads_nothing_and_says_why(tmp_path: Path) -> None:
    ctx, ref = context(tmp_path, {PODS: listing()})
    empty = await check_logs(ctx, ref)
    assert (
        empty.evidence.unavailable
        == "no pod labelled app=vcluster in vcluster-prod of the control plane cluster"
    )
    ctx, ref = context(tmp_path, {}, control_plane=False)
    unset = await check_logs(ctx, ref)
    assert "clusters[prod].control_plane is not configured" in (unset.evidence.unavailable or "")
    assert ctx.api is not None
    assert ctx.api.asked == []


async def test_an_answer_that_is_no_pod_list_is_said(tmp_path: Path) -> None:
    ctx, ref = context(tmp_path, {PODS: (200, "<html>")})
    result = await check_logs(ctx, ref)
    assert "the pod list of vcluster-prod could not be read" in (result.evidence.unavailable or "")


async def test_the_alerts_reader_shares_one_read_per_cluster(tmp_path: Path) -> None:
    answers = {PODS: listing(pod("prod-0", "syncer")), f"{PODS}/prod-0/log": (200, STARTED)}
    ctx, ref = context(tmp_path, answers)
    reader = ControlPlaneLogReader(ctx, ttl=60)
    assert reader.ready(ref.cluster) is None  # nothing read yet: the alert's read is a task
    first, second = await asyncio.gather(reader.read(ref.cluster), reader.read(ref.cluster))
    assert reader.ready(ref.cluster) is first  # in hand for the next alert, read no more
    third = await reader.read(ref.cluster)
    assert first is second is third
    assert ctx.api is not None
    assert len(ctx.api.asked) == 2  # one list, one log


async def test_a_transport_failure_is_a_cluster_error_said_whole(tmp_path: Path) -> None:
    class Unreachable(FakeApi):
        async def get(self, path: ApiPath, *, timeout: float) -> RawResponse:
            raise ClusterError(self.name, "unreachable", "GET failed: connection refused")

    s = settings(tmp_path)
    ctx = FakeContext(s)
    ctx.api = Unreachable({})
    logs = await read_control_plane(ctx, s.clusters[0])
    assert logs.unavailable == "cluster control plane of prod: GET failed: connection refused"


def test_since_is_a_duration_within_bounds() -> None:
    assert parse_since(None) is None
    assert parse_since("10m") == 600
    for bad in ("0s", "9s", "8d", "10", "ten minutes", "10m?x"):
        with pytest.raises(InputError, match=r"^--since: "):
            parse_since(bad)


async def test_the_alerts_reader_reads_a_bounded_number_of_clusters_at_once(tmp_path: Path) -> None:
    class Counting(FakeApi):
        now = peak = 0

        async def get(self, path: ApiPath, *, timeout: float) -> RawResponse:
            Counting.now += 1
            Counting.peak = max(Counting.peak, Counting.now)
            await asyncio.sleep(0.01)  # the fake's read takes a while, so reads overlap
            Counting.now -= 1
            return await super().get(path, timeout=timeout)

    data = config(clusters=[cluster(f"c{i}", control_plane={"kubeconfig": "cp.yaml"}) for i in range(6)])
    s = Settings.model_validate(data)
    ctx = FakeContext(s)
    ctx.api = Counting({})
    reader = ControlPlaneLogReader(ctx, concurrent=2)
    found = await asyncio.gather(*(reader.read(c) for c in s.clusters))
    assert [f.cluster for f in found] == [f"c{i}" for i in range(6)]
    assert Counting.peak == 2
