"""The digest's quick triage (bot/digest/judge.py `with_triage`, bot/digest/fleet.py `triage_reads`): each
target's verdict from its pods, the clusters' APIService and version flags, and the digest that shows them."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from bot.digest.fleet import triage_reads
from bot.digest.judge import assemble_digest, judge_reads, with_triage
from bot.domain.apiservices import ApiService, ClientApiServices
from bot.domain.triage import ClusterTriage, TargetTriage
from bot.domain.verdict import PodState, TargetPods, Verdict
from bot.domain.versions import Role, TenantVersion, parse_version
from bot.render.blocks import Message
from bot.render.digest import digest_message
from config.clusters import ClusterSettings
from tests.bot.digest.test_judge import reads
from tests.fakes.fleet import fleet, snapshot

READY = TargetPods((PodState("x-0", True, "Ready"),))
DOWN = TargetPods((PodState("x-0", False, "not Ready (Running, ContainersNotReady)"),))
ORPHAN = ApiService("v1.old.example.com", "old.example.com/v1", False, "Available False", None, True)


def triage(
    cluster: str, pods: dict[str, TargetPods], client: str = "0.37.1", orphan: bool = False
) -> ClusterTriage:
    versions = {t: TenantVersion(t, Role.TARGET, parse_version("0.37.1")) for t in pods}
    targets = {t: TargetTriage(t, p, versions[t]) for t, p in pods.items()}
    apiservices = ClientApiServices(cluster, (), frozenset(), (ORPHAN,) if orphan else ())
    return ClusterTriage(
        cluster, TenantVersion(cluster, Role.CLIENT, parse_version(client)), targets, apiservices
    )


def text(message: Message) -> str:
    return str(message.blocks)


def test_each_target_gets_its_verdict_from_its_pods_and_page() -> None:
    settings = fleet(("a", ["p/up", "p/down"]), ("b", ["p/unread"]), ("c", ["p/late"]))
    outcomes = reads(a=snapshot("p/up", 2), b=snapshot("p/unread", 0, failures=4), c=snapshot("p/late", 2))
    judged, _ = judge_reads(settings.clusters, outcomes)
    # a: the second target's snapshot names only p/up, so p/down has no series (unknown on the metrics' side)
    triages = {"a": triage("a", {"p/up": READY, "p/down": DOWN}), "c": None}
    out, findings, versions = with_triage(judged, triages, 4.0)
    verdicts = {t.target: t.verdict for t in out}
    assert verdicts["p/up"] is not None
    assert verdicts["p/up"].verdict is Verdict.HEALTHY
    assert verdicts["p/down"] is not None
    assert verdicts["p/down"].verdict is Verdict.TARGET_DOWN
    unread = verdicts["p/unread"]
    assert unread is not None
    assert unread.verdict is Verdict.UNKNOWN
    assert "the digest reads no control planes" in unread.why
    late = verdicts["p/late"]
    assert late is not None
    assert "did not answer within 4 s" in late.why
    assert findings == ()
    assert [v.name for v in versions] == ["a", "p/up", "p/down"]


def test_an_unreadable_client_too_old_for_metrics_is_said_so() -> None:
    settings = fleet(("a", ["p/x"]))
    judged, _ = judge_reads(settings.clusters, reads(a=None))
    [target], findings, _ = with_triage(judged, {"a": triage("a", {"p/x": READY}, client="0.36.4")}, 4.0)
    assert target.verdict is not None
    assert "too old, not down" in target.verdict.why
    assert {f.kind for f in findings} >= {"client_too_old", "version_skew"}


def test_the_digest_leads_with_the_verdicts_and_lists_the_objects_and_versions() -> None:
    settings = fleet(("a", ["p/x"]))
    judged, seconds = judge_reads(settings.clusters, reads(a=snapshot("p/x", 0, failures=5)))
    out, findings, versions = with_triage(judged, {"a": triage("a", {"p/x": DOWN}, orphan=True)}, 4.0)
    d = assemble_digest(out, seconds, period="p", at=1000.0, triage_findings=findings, versions=versions)
    assert not d.quiet
    report = d.as_dict()
    assert report["targets"][0]["verdict"] == "target_down"
    assert [f["kind"] for f in report["triage_findings"]] == ["apiservice_orphan"]
    shown = text(digest_message(d))
    assert shown.index("Quick triage:* 🔴 target_down 1") < shown.index("Degraded, worst first")
    assert "_Verdict:_ 🔴 target_down: none of the target" in shown
    assert "Fix the target tenant cluster" in shown  # the verdict's next step leads a broken target
    assert "APIService v1.old.example.com is left over" in shown
    assert "vCluster versions: 0.37.1 on 2 tenant clusters" in shown


def test_an_orphan_alone_makes_the_digest_speak() -> None:
    settings = fleet(("a", ["p/x"]))
    judged, seconds = judge_reads(settings.clusters, reads(a=snapshot("p/x", 2)))
    calm, none, _ = with_triage(judged, {"a": triage("a", {"p/x": READY})}, 4.0)
    assert assemble_digest(calm, seconds, period="p", at=1.0, triage_findings=none).quiet
    out, findings, _ = with_triage(judged, {"a": triage("a", {"p/x": READY}, orphan=True)}, 4.0)
    assert not assemble_digest(out, seconds, period="p", at=1.0, triage_findings=findings).quiet


class SlowTriage:
    """Answers every cluster but one, which hangs."""

    def __init__(self, hung: str) -> None:
        self.hung = hung

    async def read(self, cluster: ClusterSettings) -> ClusterTriage:
        if cluster.name == self.hung:
            await asyncio.sleep(10)  # the fake's hung control plane
        return triage(cluster.name, {t.name: READY for t in cluster.targets})


async def test_triage_reads_are_bounded_and_a_hung_control_plane_costs_its_timeout() -> None:
    settings = fleet(("a", ["p/a"]), ("b", ["p/b"]))
    started = datetime.now(UTC)
    found = await triage_reads(settings.clusters, SlowTriage("b"), timeout=0.1)
    assert (datetime.now(UTC) - started).total_seconds() < 2
    assert found["b"] is None
    assert found["a"] is not None
    assert found["a"].cluster == "a"
    assert await triage_reads(settings.clusters, None) == {}
