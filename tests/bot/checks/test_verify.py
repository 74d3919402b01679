"""The verify check against real Prometheus scraping the simulator, with and without the shipped rules.

`verify`'s APIService and version lines (bot/checks/verify.py), from triage reads built here.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.checks.verify import (
    CLUSTER_ROLE_FIX,
    GUIDE_ALERTS,
    apiservices_line,
    check_verify,
    chosen_clusters,
    is_syncer_scrape,
    judge_scrape,
    open_prometheus,
    versions_line,
)
from bot.clients.prometheus import Sample, ScrapeTarget
from bot.domain.apiservices import ApiService, ApiServiceRead, ClientApiServices, ServiceLookup, ServiceRef
from bot.domain.triage import ClusterTriage, TargetTriage
from bot.domain.verdict import TargetPods
from bot.domain.verify_result import Outcome, VerifyLine, VerifyResult
from bot.domain.versions import Role, TenantVersion, parse_version
from bot.errors import InputError
from bot.reads.context import CheckContext
from config.loader import load_config, parse_config
from config.settings import Settings
from sim.defaults import CLIENT
from sim.server import KSM_PATH, METRICS_PATH, SimServer
from tests.fakes.manifests import ROOT
from tests.harness.prometheus import Prometheus, ScrapeJob

RULES = Path(__file__).resolve().parents[3] / "config" / "rules" / "proxy-alerts.yaml"
NOW = 1_800_000_000.0


def _settings(srv: SimServer, directory: Path, **changes: Any) -> Settings:
    """The simulator's config, with `prometheus.url` and cluster fields changed as asked."""
    path = srv.write_config(directory / "proxybot.yaml")
    data = yaml.safe_load(path.read_text())
    if "prometheus" in changes:
        data["prometheus"] = {"url": changes["prometheus"]}
    if "context" in changes:
        data["clusters"][0]["context"] = changes["context"]
    if "match" in changes:
        data["clusters"][0]["match"] = changes["match"]
    path.write_text(yaml.safe_dump(data))
    return load_config(path, env={}, purpose="demo").settings


def _jobs(srv: SimServer) -> list[ScrapeJob]:
    """Each client replica's /metrics/syncer with the cluster's `match` labels, and kube-state-metrics."""
    address = f"{srv.host}:{srv.port}"
    syncers = [
        ScrapeJob(
            f"syncer-{pod}",
            address,
            f"/clusters/{CLIENT}/pods/{pod}{METRICS_PATH}",
            "https",
            srv.token,
            srv.ca_path,
            labels={"cluster": CLIENT, "pod": pod},
        )
        for pod in srv.pods(CLIENT)
    ]
    return [*syncers, ScrapeJob("kube-state-metrics", address, KSM_PATH, "https", srv.token, srv.ca_path)]


def _verify(settings: Settings, with_prometheus: bool = True) -> VerifyResult:
    async def main() -> VerifyResult:
        ctx = CheckContext(settings)
        prometheus = open_prometheus(settings) if with_prometheus else None
        try:
            return await check_verify(ctx, prometheus)
        finally:
            await ctx.aclose()
            if prometheus is not None:
                await prometheus.aclose()

    return asyncio.run(main())


def _line(result: VerifyResult, key: str) -> VerifyLine:
    (found,) = [line for line in result.lines if line.key == key]
    return found


@dataclass
class Runs:
    with_rules: VerifyResult
    without_rules: VerifyResult
    without_region: VerifyResult  # `match` also asks for a `region` label that no scrape puts on
    pods: tuple[str, ...]


def _scraped(prom: Prometheus) -> bool | None:
    return bool(prom.query('kube_cronjob_created{cronjob="proxy-probe"}')) or None


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    tmp = tmp_path_factory.mktemp("verify")
    with SimServer(scenario="healthy", speed=5) as srv:
        (tmp / "a").mkdir()
        (tmp / "b").mkdir()
        rules = {"proxy-alerts.yaml": RULES.read_text()}
        with Prometheus(tmp / "a", _jobs(srv), rules) as ruled, Prometheus(tmp / "b", _jobs(srv)) as bare:
            for prom in (ruled, bare):
                prom.wait_for_scrapes()
                prom.wait_until(_scraped, 20, "kube_cronjob_created to be scraped")
            (tmp / "c").mkdir()
            regional = {"cluster": CLIENT, "region": "eu"}
            yield Runs(
                _verify(_settings(srv, tmp / "a", prometheus=ruled.url)),
                _verify(_settings(srv, tmp / "b", prometheus=bare.url)),
                _verify(_settings(srv, tmp / "c", prometheus=bare.url, match=regional)),
                tuple(srv.pods(CLIENT)),
            )


def test_everything_passes_with_the_shipped_rules(runs: Runs) -> None:
    result = runs.with_rules
    assert [(line.key, line.outcome) for line in result.lines] == [
        ("rules", Outcome.PASS),
        ("scrape", Outcome.PASS),
        ("probe-cronjob", Outcome.PASS),
        ("probe-series", Outcome.PASS),
        ("syncer", Outcome.PASS),
        ("apiservices", Outcome.PASS),
        ("versions", Outcome.PASS),
    ]
    assert result.passed
    assert "syncer-team-a-0" in _line(result, "scrape").evidence[0]


def test_without_rules_only_the_rules_line_fails(runs: Runs) -> None:
    result = runs.without_rules
    rules = _line(result, "rules")
    assert rules.outcome is Outcome.FAIL
    assert rules.fix is not None
    assert "promtool check rules" in rules.fix
    assert all(name in " ".join(rules.evidence) for name in GUIDE_ALERTS)
    assert {line.key for line in result.lines if line.outcome is not Outcome.PASS} == {"rules"}
    assert result.outcome is Outcome.FAIL


def test_a_scrape_without_one_of_the_match_labels_is_named_as_such(runs: Runs) -> None:
    line = _line(runs.without_region, "scrape")
    assert line.outcome is Outcome.FAIL
    assert line.summary == (
        "scraped without the label `region`: its alerts match no cluster (they go to the default channel)"
    )
    # One sample per replica's scrape, read from the real Prometheus without the `match` selector.
    shape = (
        rf"vcluster_proxy_peers of job syncer-{CLIENT}-\d, instance [\d.]+:\d+: "
        rf'without region; with {{cluster="{CLIENT}"}}'
    )
    assert len(line.evidence) == len(runs.pods)
    assert all(re.fullmatch(shape, shown) for shown in line.evidence), line.evidence
    assert line.fix is not None
    assert line.fix.startswith('add {region="eu"} to the scrape of team-a\'s /metrics/syncer')


@pytest.fixture(scope="module")
def probe_failing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[VerifyResult, VerifyResult]]:
    tmp = tmp_path_factory.mktemp("probe-failing")
    with SimServer(scenario="probe-failing", speed=5) as srv:
        (tmp / "m").mkdir()
        yield (
            _verify(_settings(srv, tmp), False),
            _verify(_settings(srv, tmp / "m", context=f"{CLIENT}-no-metrics"), False),
        )


def test_a_probe_that_never_succeeds_fails_the_cronjob_line(
    probe_failing: tuple[VerifyResult, VerifyResult],
) -> None:
    result, _ = probe_failing
    line = _line(result, "probe-cronjob")
    assert line.outcome is Outcome.FAIL
    assert "no successful run within 900 s" in line.summary
    assert "last succeeded: never" in line.evidence
    assert _line(result, "syncer").outcome is Outcome.PASS


def test_without_prometheus_lines_are_not_checked_and_nothing_passes_silently(
    probe_failing: tuple[VerifyResult, VerifyResult],
) -> None:
    result, _ = probe_failing
    skipped = {line.key for line in result.lines if line.outcome is Outcome.NOT_CHECKED}
    assert skipped == {"rules", "scrape", "probe-series"}
    assert all("no prometheus.url" in line.summary for line in result.lines if line.key in skipped)
    assert not result.passed


def test_no_metrics_identity_fails_the_syncer_line_with_the_cluster_role(
    probe_failing: tuple[VerifyResult, VerifyResult],
) -> None:
    _, limited = probe_failing
    line = _line(limited, "syncer")
    assert line.outcome is Outcome.FAIL
    assert line.fix == CLUSTER_ROLE_FIX
    assert "forbidden" in line.summary


def test_the_cluster_role_fix_names_what_the_tenant_manifest_ships() -> None:
    shipped = list(yaml.safe_load_all((ROOT / "config/deploy/tenant-cluster/rbac.yaml").read_text()))
    (role,) = [d for d in shipped if d["kind"] == "ClusterRole"]
    assert {"nonResourceURLs": ["/metrics/syncer"], "verbs": ["get"]} in role["rules"]
    assert f"`{role['metadata']['name']}`" in CLUSTER_ROLE_FIX
    accounts = [d["metadata"]["name"] for d in shipped if d["kind"] == "ServiceAccount"]
    assert any(f"`{name}`" in CLUSTER_ROLE_FIX for name in accounts)


# -- the pure judgements ---------------------------------------------------------------------------------


def test_chosen_clusters_are_all_or_one_configured_cluster(tmp_path: Path) -> None:
    settings = parse_config(CONFIG, base_dir=tmp_path, env={}, purpose="demo").settings
    assert chosen_clusters(settings, None) == settings.clusters
    assert [c.name for c in chosen_clusters(settings, "team-a")] == ["team-a"]
    with pytest.raises(
        InputError, match=r"^--cluster: 'team-b' is not a configured cluster \(configured: team-a\)$"
    ):
        chosen_clusters(settings, "team-b")


CONFIG = """
slack: {default_channel: "#ops"}
clusters:
  - name: team-a
    kubeconfig: team-a.yaml
    match: {cluster: team-a}
    targets:
      - name: platform/crd-store
        group_versions: [example.com/v1]
        probe: {group_version: example.com/v1, resource: widgets}
"""


def _target(labels: dict[str, str], url: str, health: str = "up") -> ScrapeTarget:
    return ScrapeTarget(labels, labels.get("job", ""), url, health, None)


def _up(job: str, value: float) -> Sample:
    return Sample({"job": job, "instance": "10.0.0.1:443", "cluster": "team-a"}, value, NOW)


def test_judge_scrape_needs_the_cluster_labels_and_up_1(tmp_path: Path) -> None:
    cluster = parse_config(CONFIG, base_dir=tmp_path, env={}, purpose="demo").settings.clusters[0]
    syncer = "https://10.0.0.1:443/metrics/syncer"
    labelled = {"job": "syncer", "instance": "10.0.0.1:443", "cluster": "team-a"}
    other = {"job": "syncer", "instance": "10.0.0.1:443", "cluster": "team-b"}
    assert not is_syncer_scrape(_target(other, syncer), cluster.match)
    assert not is_syncer_scrape(_target(labelled, "https://10.0.0.1:443/metrics"), cluster.match)
    assert is_syncer_scrape(_target({**labelled, "job": "vcluster-cp"}, "https://x/metrics"), cluster.match)
    absent = judge_scrape(cluster, [], [])
    assert absent.outcome is Outcome.FAIL
    assert "indistinguishable from a healthy proxy" in absent.summary
    assert judge_scrape(cluster, [_target(labelled, syncer)], [_up("syncer", 1.0)]).outcome is Outcome.PASS
    down = judge_scrape(cluster, [_target(labelled, syncer, "down")], [_up("syncer", 0.0)])
    assert down.outcome is Outcome.FAIL
    assert down.evidence == ("syncer https://10.0.0.1:443/metrics/syncer: up=0, health down",)


def _peers(**labels: str) -> Sample:
    return Sample({"job": "vcluster", "instance": "10.0.0.2:8443", **labels}, 1.0, NOW)


def test_judge_scrape_tells_not_scraped_from_scraped_without_the_labels(tmp_path: Path) -> None:
    cluster = parse_config(CONFIG, base_dir=tmp_path, env={}, purpose="demo").settings.clusters[0]
    nothing = judge_scrape(cluster, [], [], [])
    assert nothing.summary.startswith("not scraped: ")
    assert "no vcluster_proxy_peers series at all" in nothing.evidence
    unlabelled = judge_scrape(cluster, [], [], [_peers(), _peers(cluster="team-b")])
    assert unlabelled.summary.startswith("scraped without the label `cluster`: its alerts match no cluster")
    # team-b's series contradicts the match: it is not offered as this cluster's.
    assert unlabelled.evidence == (
        "vcluster_proxy_peers of job vcluster, instance 10.0.0.2:8443: without cluster",
    )
    assert unlabelled.fix is not None
    assert unlabelled.fix.startswith('add {cluster="team-a"} to the scrape of team-a\'s /metrics/syncer')
    others = judge_scrape(cluster, [], [], [_peers(cluster="team-b")])
    assert (
        others.summary
        == 'not scraped with {cluster="team-a"}: every vcluster_proxy_peers series carries other values'
    )
    assert others.evidence == (
        'vcluster_proxy_peers of job vcluster, instance 10.0.0.2:8443: with {cluster="team-b"}',
    )
    relabelled = judge_scrape(cluster, [], [], [_peers(cluster="team-a")])
    assert relabelled.summary == (
        'vcluster_proxy_peers carries {cluster="team-a"}, but no active scrape target of /metrics/syncer does'
    )
    many = judge_scrape(cluster, [], [], [_peers(pod=f"p{i}") for i in range(8)])
    assert many.evidence[-1] == "… and 3 more"
    assert len(many.evidence) == 6


def test_a_mistyped_cluster_among_hundreds_gets_the_closest_names_not_all(tmp_path: Path) -> None:
    settings = parse_config(CONFIG, base_dir=tmp_path, env={}, purpose="demo").settings
    (one,) = settings.clusters
    many = tuple(one.model_copy(update={"name": f"prod-{n:03d}"}) for n in range(300))
    fleet = settings.model_copy(update={"clusters": many})
    with pytest.raises(InputError) as refused:
        chosen_clusters(fleet, "prod-0x7")
    message = str(refused.value)
    assert message.startswith(
        "--cluster: 'prod-0x7' is not a configured cluster (closest of 300 configured: "
    )
    assert message.endswith(", +290 more)")
    assert len(message) < 300


GV = "example.com/v1"
REF = ServiceRef("kube-system", "proxy-example-com-v1")
LIVE = ApiService("v1.example.com", GV, True, "Available True", REF, True)
ORPHAN = ApiService("v1.old.example.com", "old.example.com/v1", False, "Available False", None, True)


def version(name: str, text: str | None, role: Role = Role.TARGET) -> TenantVersion:
    if text is None:
        return TenantVersion(name, role, unavailable="no control_plane is configured for it")
    return TenantVersion(name, role, parse_version(text), f"vcluster-pro:{text}")


def triage(
    *,
    client: str | None = "0.37.1",
    target: str | None = "0.37.1",
    apiservice: ApiService | None = LIVE,
    protected: tuple[ApiService, ...] = (LIVE,),
) -> ClusterTriage:
    lookup = ServiceLookup(REF, True)
    read = ApiServiceRead(GV, "p/store", apiservice, lookup if apiservice else None)
    reads = ClientApiServices("team-a", (read,), frozenset({GV}), protected, None, {})
    targets = {"p/store": TargetTriage("p/store", TargetPods.missing("not read"), version("p/store", target))}
    return ClusterTriage("team-a", version("team-a", client, Role.CLIENT), targets, reads)


def test_apiservices_pass_when_available_with_their_service_and_no_orphan() -> None:
    line = apiservices_line(triage())
    assert line.outcome is Outcome.PASS
    assert line.evidence == (
        "APIService v1.example.com: Available True, Service kube-system/proxy-example-com-v1 exists",
    )


def test_a_missing_apiservice_fails() -> None:
    line = apiservices_line(triage(apiservice=None))
    assert line.outcome is Outcome.FAIL
    assert "no APIService v1.example.com" in line.summary
    assert line.fix is not None
    assert "Starting proxy server" in line.fix


def test_an_orphan_fails_with_its_removal_as_the_fix() -> None:
    line = apiservices_line(triage(protected=(LIVE, ORPHAN)))
    assert line.outcome is Outcome.FAIL
    assert "v1.old.example.com is left over" in line.summary
    assert "orphan: v1.old.example.com" in line.evidence
    assert line.fix is not None
    assert "`kubectl delete apiservice v1.old.example.com`" in line.fix


def test_versions_pass_when_current_and_name_lag_without_failing() -> None:
    assert versions_line(triage(), parse_version("0.37.1")).outcome is Outcome.PASS
    lagging = versions_line(triage(), parse_version("0.37.3"))
    assert lagging.outcome is Outcome.PASS
    assert any(e.startswith("lags: client team-a runs vCluster 0.37.1") for e in lagging.evidence)


def test_a_client_too_old_or_apart_from_its_target_fails() -> None:
    old = versions_line(triage(client="0.36.4"), None)
    assert old.outcome is Outcome.FAIL
    assert "too old for proxy metrics" in old.summary
    apart = versions_line(triage(target="0.38.0"), None)
    assert apart.outcome is Outcome.FAIL
    assert "different minor versions" in apart.summary


def test_unknown_versions_are_not_checked_never_a_pass() -> None:
    line = versions_line(triage(target=None), None)
    assert line.outcome is Outcome.NOT_CHECKED
    assert "target p/store: unknown (no control_plane is configured for it)" in line.evidence
