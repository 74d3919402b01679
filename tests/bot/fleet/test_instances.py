"""The platform's VirtualClusterInstance list read into instances: where each fact comes from, and every
malformed instance listed with its problem (never a crash, never a path built from a bad name)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.fleet.instances import FleetProblem, Instance, read_instances

CLIENT_VALUES = "experimental:\n  proxy:\n    customResources: {}\n"
RENDERED_VALUES = "controlPlane: {}\n"


def vci(
    name: str = "team-a",
    namespace: str = "p-platform",
    *,
    cluster: Any = "control-plane",
    cp_namespace: Any = "vcluster-team-a",
    release: Any = "team-a",
    spec_values: Any = None,
    status_values: Any = None,
    spec_version: str | None = None,
    status_version: str | None = None,
    phase: str | None = "Ready",
    annotations: Any = None,
) -> dict[str, Any]:
    """One VirtualClusterInstance document as the management API serves it (only the fields read)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations is not None:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {
        "clusterRef": {"cluster": cluster, "namespace": cp_namespace, "virtualCluster": release}
    }
    if spec_values is not None or spec_version is not None:
        spec["template"] = {"helmRelease": {"values": spec_values, "chart": {"version": spec_version}}}
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    if status_values is not None or status_version is not None:
        status["virtualCluster"] = {
            "helmRelease": {"values": status_values, "chart": {"version": status_version}}
        }
    return {
        "apiVersion": "management.loft.sh/v1",
        "kind": "VirtualClusterInstance",
        "metadata": meta,
        "spec": spec,
        "status": status,
    }


def listed(*items: Any) -> dict[str, Any]:
    return {"apiVersion": "management.loft.sh/v1", "kind": "VirtualClusterInstanceList", "items": list(items)}


def one(item: Any, prefix: str = "p-") -> Instance:
    found, problems = read_instances(listed(item), prefix)
    assert problems == ()
    assert len(found) == 1
    return found[0]


def test_an_instance_reads_its_project_control_plane_values_and_version() -> None:
    found = one(
        vci(
            spec_values=CLIENT_VALUES,
            status_values=CLIENT_VALUES,
            spec_version="0.37.1",
            status_version="0.37.1",
            annotations={"proxybot.io/slack-channel": "#team-a"},
        )
    )
    assert found == Instance(
        project="platform",
        name="team-a",
        cluster="control-plane",
        namespace="vcluster-team-a",
        release="team-a",
        values=CLIENT_VALUES,
        version="0.37.1",
        phase="Ready",
        annotations={"proxybot.io/slack-channel": "#team-a"},
    )
    assert found.ref == "platform/team-a"


def test_the_rendered_values_in_the_status_win_over_the_inline_template() -> None:
    found = one(
        vci(
            spec_values=CLIENT_VALUES,
            status_values=RENDERED_VALUES,
            spec_version="0.36.0",
            status_version="0.37.1",
        )
    )
    assert (found.values, found.version) == (RENDERED_VALUES, "0.37.1")


def test_a_templated_instance_has_its_values_from_the_status_only() -> None:
    found = one(vci(status_values=RENDERED_VALUES, status_version="0.37.1"))
    assert (found.values, found.version) == (RENDERED_VALUES, "0.37.1")


def test_an_inline_template_is_read_while_the_status_has_no_values_yet() -> None:
    found = one(vci(spec_values=CLIENT_VALUES, spec_version="0.37.1", phase=None))
    assert (found.values, found.version, found.phase) == (CLIENT_VALUES, "0.37.1", None)


def test_no_values_anywhere_is_none_not_a_problem() -> None:
    found = one(vci(phase="Pending"))
    assert (found.values, found.version, found.phase) == (None, None, "Pending")


def test_the_project_is_the_namespace_without_the_platforms_prefix() -> None:
    assert one(vci(namespace="loft-p-payments"), prefix="loft-p-").project == "payments"
    found, problems = read_instances(listed(vci(namespace="p-payments")), "loft-p-")
    assert found == ()
    assert [p.where for p in problems] == ["instance p-payments/team-a"]
    assert "'loft-p-'" in problems[0].what


def test_the_release_defaults_to_the_instances_name() -> None:
    assert one(vci(name="team-b", release=None)).release == "team-b"


def test_annotations_that_are_not_text_are_left_out() -> None:
    found = one(vci(annotations={"proxybot.io/slack-channel": 7, "owner": "team-a"}))
    assert found.annotations == {"owner": "team-a"}


def test_an_answer_that_is_no_list_is_one_problem() -> None:
    answers: tuple[object, ...] = (None, [], {"kind": "Status"}, {"items": {"a": 1}}, "items")
    for answer in answers:
        found, problems = read_instances(answer)
        assert found == ()
        assert problems == (
            FleetProblem("the platform's answer", "not a VirtualClusterInstanceList (no items)"),
        )


@pytest.mark.parametrize(
    ("item", "where", "said"),
    [
        (vci(name=""), "instance p-platform/?", "metadata.namespace and metadata.name are required"),
        ({"metadata": {"name": "team-a"}}, "instance ?/team-a", "metadata.namespace and metadata.name"),
        ("an instance", "instance ?/?", "metadata.namespace and metadata.name are required"),
        (None, "instance ?/?", "metadata.namespace and metadata.name are required"),
        ({"metadata": ["team-a"]}, "items[1]", "metadata is not a mapping"),
        ({**vci(), "spec": "clusterRef"}, "instance p-platform/team-a", "spec is not a mapping"),
        (vci(cluster=7), "instance p-platform/team-a", "cluster is not text"),
        (vci(spec_values={"experimental": {}}), "instance p-platform/team-a", "values is not text"),
        (vci(status_values=["a"]), "instance p-platform/team-a", "values is not text"),
        (vci(annotations="owner=a"), "instance p-platform/team-a", "annotations is not a mapping"),
        (vci(namespace="platform"), "instance platform/team-a", "namespace is not a project's"),
        (vci(namespace="p-"), "instance p-/team-a", "project: '' is not a DNS-1123 label"),
    ],
)
def test_a_malformed_instance_is_listed_with_its_problem_and_the_others_read(
    item: Any, where: str, said: str
) -> None:
    found, problems = read_instances(listed(vci(name="team-b"), item, vci(name="team-c")))
    assert [i.name for i in found] == ["team-b", "team-c"]
    assert len(problems) == 1
    assert problems[0].where == where
    assert said in problems[0].what
    assert str(problems[0]) == f"{where}: {problems[0].what}"


@pytest.mark.parametrize(
    ("item", "field"),
    [
        (vci(name="Team_A"), "name"),
        (vci(name="team-a/../../cluster/x"), "name"),
        (vci(name="a" * 64), "name"),
        (vci(namespace="p-Platform"), "project"),
        (vci(namespace="p-platform/x"), "project"),
        (vci(cluster="control-plane/../../management"), "clusterRef.cluster"),
        (vci(cluster=None), "clusterRef.cluster"),
        (vci(cp_namespace="kube system"), "clusterRef.namespace"),
        (vci(cp_namespace=None), "clusterRef.namespace"),
        (vci(release="Team.A"), "clusterRef.virtualCluster"),
    ],
)
def test_a_name_that_is_no_dns_label_is_refused_before_any_path(item: Any, field: str) -> None:
    """Each of these names becomes a URL path segment (`/kubernetes/project/<p>/virtualcluster/<name>`,
    `/kubernetes/cluster/<cluster>`) or a namespace: a slash or dots would reach another path."""
    found, problems = read_instances(listed(item))
    assert found == ()
    assert len(problems) == 1
    assert problems[0].what.startswith(f"{field}: ")
    assert "DNS-1123 label" in problems[0].what or "longer than 63 characters" in problems[0].what
