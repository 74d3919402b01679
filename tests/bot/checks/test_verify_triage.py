"""`verify`'s APIService and version lines (bot/checks/verify.py), from triage reads built here."""

from __future__ import annotations

from bot.checks.triage import ClusterTriage, TargetTriage
from bot.checks.verify import apiservices_line, versions_line
from bot.checks.verify_lines import Outcome
from bot.domain.apiservices import ApiService, ApiServiceRead, ClientApiServices, ServiceLookup, ServiceRef
from bot.domain.verdict import TargetPods
from bot.domain.versions import Role, TenantVersion, parse_version

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
