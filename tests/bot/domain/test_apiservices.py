"""The proxy's APIServices (bot/domain/apiservices.py): exists, Available, its Service, and orphans."""

from __future__ import annotations

from typing import Any

from bot.domain.apiservices import (
    ApiServiceRead,
    ClientApiServices,
    ServiceLookup,
    ServiceRef,
    apiservice_findings,
    apiservice_name,
    parse_apiservice,
)
from bot.domain.findings import Severity

GV = "example.com/v1"
TARGET = "platform/store"
SERVICE = ServiceRef("kube-system", "proxy-example-com-v1-3f2a9c01bd")


def doc(
    gv: str = GV, *, available: str = "True", service: ServiceRef | None = SERVICE, protected: bool = True
) -> dict[str, Any]:
    group, version = gv.split("/")
    labels = {"vcluster.loft.sh/protected": "resource-proxy"} if protected else {}
    spec: dict[str, Any] = {"group": group, "version": version}
    if service is not None:
        spec["service"] = {"namespace": service.namespace, "name": service.name, "port": 443}
    condition = {"type": "Available", "status": available}
    if available != "True":
        condition |= {"reason": "FailedDiscoveryCheck", "message": "no response"}
    meta = {"name": apiservice_name(gv), "labels": labels}
    return {"metadata": meta, "spec": spec, "status": {"conditions": [condition]}}


def read(d: dict[str, Any] | None, found: bool | None = True) -> ApiServiceRead:
    parsed = None if d is None else parse_apiservice(d)
    lookup = None if parsed is None or parsed.service is None else ServiceLookup(parsed.service, found, "403")
    return ApiServiceRead(GV, TARGET, parsed, lookup)


def findings(*reads: ApiServiceRead, protected: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    every = ClientApiServices(
        "team-a", reads, frozenset({GV}), tuple(parse_apiservice(p) for p in protected), None, {}
    )
    return {f.kind: f for f in apiservice_findings(every)}


def test_the_name_is_version_dot_group() -> None:
    assert apiservice_name("data.example.com/v1alpha1") == "v1alpha1.data.example.com"


def test_parse_reads_the_service_from_spec_and_the_label() -> None:
    found = parse_apiservice(doc())
    assert found.group_version == GV
    assert found.service == SERVICE  # as the object says: never built from the group/version
    assert found.available is True
    assert found.protected is True
    assert parse_apiservice({}).condition == "no Available condition"


def test_a_healthy_apiservice_has_no_finding_and_a_line() -> None:
    assert findings(read(doc())) == {}
    reads = ClientApiServices("team-a", (read(doc()),), frozenset({GV}))
    assert reads.lines() == [f"APIService v1.example.com: Available True, Service {SERVICE} exists"]


def test_missing_unavailable_and_serviceless() -> None:
    missing = findings(read(None))["apiservice_missing"]
    assert missing.severity is Severity.CRITICAL
    assert "Starting proxy server" in missing.next_step
    down = findings(read(doc(available="False")))["apiservice_unavailable"]
    assert down.evidence == ("Available False (FailedDiscoveryCheck: no response)",)
    assert findings(read(doc(service=None)))["apiservice_no_service"].severity is Severity.WARNING


def test_the_service_it_names_must_exist() -> None:
    gone = findings(read(doc(), found=False))["apiservice_service_missing"]
    assert gone.severity is Severity.CRITICAL
    assert str(SERVICE) in gone.title
    unread = findings(read(doc(), found=None))["apiservice_service_unread"]
    assert unread.severity is Severity.WARNING
    assert "kube-system" in unread.next_step


def test_an_unreadable_apiservice_is_a_warning_not_missing() -> None:
    found = findings(ApiServiceRead(GV, TARGET, None, unavailable="forbidden"))
    assert set(found) == {"apiservice_unread"}


def test_a_protected_apiservice_of_an_unconfigured_group_version_is_an_orphan() -> None:
    legacy = doc(
        "legacy.example.com/v1beta1", available="False", service=ServiceRef("kube-system", "proxy-legacy")
    )
    other = doc("metrics.k8s.io/v1beta1", protected=False)  # not the proxy's: never an orphan
    reads = ClientApiServices(
        "team-a",
        (read(doc()),),
        frozenset({GV}),
        tuple(parse_apiservice(d) for d in (doc(), legacy)),
        None,
        {"v1beta1.legacy.example.com": ServiceLookup(ServiceRef("kube-system", "proxy-legacy"), True)},
    )
    assert [o.name for o in reads.orphans()] == ["v1beta1.legacy.example.com"]
    [orphan] = apiservice_findings(reads)
    assert orphan.kind == "apiservice_orphan"
    assert orphan.target == "team-a"
    steps = orphan.next_step
    for command in (
        "kubectl label apiservice v1beta1.legacy.example.com vcluster.loft.sh/protected-",
        "kubectl delete apiservice v1beta1.legacy.example.com",
        "kubectl label -n kube-system service proxy-legacy vcluster.loft.sh/protected-",
        "kubectl delete -n kube-system service proxy-legacy",
    ):
        assert f"`{command}`" in steps
    assert steps.index("label apiservice") < steps.index("delete apiservice")
    assert parse_apiservice(other).protected is False


def test_an_orphan_whose_service_is_unknown_says_to_look_it_up_first() -> None:
    legacy = doc("legacy.example.com/v1beta1", service=ServiceRef("kube-system", "proxy-legacy"))
    lookup = ServiceLookup(ServiceRef("kube-system", "proxy-legacy"), None, "forbidden")
    reads = ClientApiServices(
        "team-a",
        (),
        frozenset({GV}),
        (parse_apiservice(legacy),),
        None,
        {"v1beta1.legacy.example.com": lookup},
    )
    [orphan] = apiservice_findings(reads)
    assert "jsonpath='{.spec.service.namespace}/{.spec.service.name}'" in orphan.next_step
    assert "delete -n kube-system service" not in orphan.next_step  # never a guessed name


def test_orphans_unlisted_are_said_so() -> None:
    reads = ClientApiServices("team-a", (read(doc()),), frozenset({GV}), (), "forbidden: list apiservices")
    [found] = apiservice_findings(reads)
    assert found.kind == "apiservice_orphans_unread"
    assert "list" in found.next_step
