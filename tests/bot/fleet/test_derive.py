"""The fleet derived from the platform's instances: clients from their enabled proxy entries, targets,
probes, the control plane, channels, alert matches, refinements from `clusters:`, and hand-listed clients."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bot.fleet.derive import Fleet, FleetClient, Origin, derive_fleet
from bot.fleet.instances import FleetProblem, Instance
from config.clusters import ClusterSettings
from config.platform import ClusterRefinement, PlatformSettings
from config.settings import Settings
from tests.fakes.config_data import LISTED_CLIENT_YAML

KUBECONFIG = Path("/run/proxybot/platform.kubeconfig")
PROJECT = "platform"


def entry(
    target: str | None, *, project: str | None = None, enabled: bool = True, access: str = "owned"
) -> Any:
    to: dict[str, str] = {}
    if target is not None:
        to["name"] = target
    if project is not None:
        to["project"] = project
    return {"enabled": enabled, "targetVirtualCluster": to, "accessResources": access}


def values(entries: dict[str, Any] | None) -> str:
    document: dict[str, Any] = {"controlPlane": {"statefulSet": {}}}
    if entries is not None:
        document["experimental"] = {"proxy": {"customResources": entries}}
    return yaml.safe_dump(document, sort_keys=False)


def instance(
    name: str,
    entries: dict[str, Any] | None = None,
    *,
    project: str = PROJECT,
    cluster: str = "control-plane",
    annotations: dict[str, str] | None = None,
    raw_values: str | None = None,
) -> Instance:
    return Instance(
        project=project,
        name=name,
        cluster=cluster,
        namespace=f"vcluster-{name}",
        release=name,
        values=raw_values if raw_values is not None else values(entries),
        version="0.37.1",
        phase="Ready",
        annotations=annotations or {},
    )


def target(name: str, project: str = PROJECT, cluster: str = "control-plane") -> Instance:
    return instance(name, None, project=project, cluster=cluster)


def platform(**fields: Any) -> PlatformSettings:
    return PlatformSettings.model_validate(
        {"url": "https://platform.example.com", "access_key_file": "/run/key", **fields}
    )


def refinement(**fields: Any) -> ClusterRefinement:
    return ClusterRefinement.model_validate(fields)


def derive(
    *instances: Instance,
    settings: PlatformSettings | None = None,
    listed: tuple[ClusterSettings, ...] = (),
    refinements: tuple[ClusterRefinement, ...] = (),
) -> Fleet:
    return derive_fleet(instances, settings or platform(), listed, refinements, KUBECONFIG)


def only(fleet: Fleet, name: str) -> FleetClient:
    found = [c for c in fleet.clients if c.name == name]
    assert len(found) == 1, fleet.clients
    return found[0]


TEAM_A = {
    "widgets.example.com/v1": entry("crd-store"),
    "gadgets.example.com/v1": entry("crd-store"),
    "datasets.data.example.com/v1alpha1": entry("crd-store"),
}


def test_a_client_and_its_target_as_if_written_by_hand() -> None:
    fleet = derive(instance("team-a", TEAM_A), target("crd-store"))
    assert fleet.sound, (fleet.problems, fleet.clients)
    assert fleet.instances == 2
    assert [c.name for c in fleet.clients] == ["team-a"]  # the target proxies nothing: no client
    client = only(fleet, "team-a")
    assert (client.origin, client.row.project, client.row.control_plane) == (
        Origin.PLATFORM,
        PROJECT,
        "control-plane/vcluster-team-a",
    )
    settings = client.settings
    assert settings is not None
    assert fleet.clusters == (settings,)
    assert (settings.kubeconfig, settings.context) == (KUBECONFIG, "project/platform/virtualcluster/team-a")
    assert settings.match == {"namespace": "vcluster-team-a"}
    assert settings.channel is None
    assert settings.control_plane is not None
    assert settings.control_plane.model_dump() == {
        "kubeconfig": KUBECONFIG,
        "context": "cluster/control-plane",
        "namespace": "vcluster-team-a",
        "release": "team-a",
    }
    (crd_store,) = settings.targets
    assert crd_store.name == "platform/crd-store"
    assert crd_store.group_versions == ("example.com/v1", "data.example.com/v1alpha1")
    assert crd_store.probe.model_dump() == {
        "group_version": "example.com/v1",
        "resource": "widgets",
        "namespace": "default",
    }
    assert crd_store.access_resources == "owned"
    assert crd_store.direct is not None
    assert (crd_store.direct.kubeconfig, crd_store.direct.context) == (
        KUBECONFIG,
        "project/platform/virtualcluster/crd-store",
    )
    assert crd_store.control_plane is not None
    assert (crd_store.control_plane.context, crd_store.control_plane.namespace) == (
        "cluster/control-plane",
        "vcluster-crd-store",
    )


def test_only_enabled_entries_make_targets_and_none_enabled_is_no_client() -> None:
    entries = {
        "widgets.example.com/v1": entry("crd-store"),
        "datasets.data.example.com/v1alpha1": entry("archive", enabled=False),
    }
    disabled = {"widgets.example.com/v1": entry("crd-store", enabled=False)}
    fleet = derive(instance("team-a", entries), instance("team-off", disabled), target("crd-store"))
    assert [c.name for c in fleet.clients] == ["team-a"]
    settings = only(fleet, "team-a").settings
    assert settings is not None
    assert [(t.name, t.group_versions) for t in settings.targets] == [
        ("platform/crd-store", ("example.com/v1",))
    ]


def test_an_instance_without_values_yet_is_no_client() -> None:
    pending = Instance(PROJECT, "team-new", "control-plane", "vcluster-team-new", "team-new", None, None,
                       "Pending", {})  # fmt: skip
    assert derive(pending).clients == ()


def test_targets_are_named_by_the_entrys_project_else_the_clients() -> None:
    entries = {
        "widgets.example.com/v1": entry("crd-store"),
        "datasets.data.example.com/v1alpha1": entry("archive", project="data"),
    }
    fleet = derive(
        instance("team-a", entries, project="payments"),
        target("crd-store", project="payments"),
        target("archive", project="data"),
    )
    assert fleet.sound, (fleet.problems, fleet.clients)
    settings = only(fleet, "team-a").settings
    assert settings is not None
    assert [t.name for t in settings.targets] == ["payments/crd-store", "data/archive"]
    archive = settings.targets[1]
    assert archive.direct is not None
    assert archive.direct.context == "project/data/virtualcluster/archive"


def test_the_probe_is_the_first_explicit_resource_a_wildcard_entry_skipped() -> None:
    entries = {
        "*.data.example.com/v1alpha1": entry("crd-store"),
        "gadgets.example.com/v1": entry("crd-store"),
        "widgets.example.com/v1": entry("crd-store"),
    }
    settings = only(derive(instance("team-a", entries), target("crd-store")), "team-a").settings
    assert settings is not None
    (crd_store,) = settings.targets
    assert crd_store.group_versions == ("data.example.com/v1alpha1", "example.com/v1")
    assert (crd_store.probe.group_version, crd_store.probe.resource) == ("example.com/v1", "gadgets")


def test_access_resources_all_on_any_entry_is_the_targets() -> None:
    entries = {
        "widgets.example.com/v1": entry("crd-store", access="all"),
        "gadgets.example.com/v1": entry("crd-store", access="all"),
    }
    settings = only(derive(instance("team-a", entries), target("crd-store")), "team-a").settings
    assert settings is not None
    assert settings.targets[0].access_resources == "all"


def test_a_client_of_wildcards_only_is_listed_with_its_problem_and_not_read() -> None:
    fleet = derive(instance("team-w", {"*.example.com/v1": entry("crd-store")}), target("crd-store"))
    client = only(fleet, "team-w")
    assert client.settings is None
    assert fleet.clusters == ()
    assert not fleet.sound
    assert any("wildcard" in p and "name a resource" in p for p in client.problems), client.problems


def test_a_wildcard_only_target_is_a_problem_and_the_others_probed() -> None:
    entries = {"widgets.example.com/v1": entry("crd-store"), "*.data.example.com/v1": entry("archive")}
    fleet = derive(instance("team-a", entries), target("crd-store"), target("archive"))
    client = only(fleet, "team-a")
    assert client.settings is not None
    assert [t.name for t in client.settings.targets] == ["platform/crd-store"]
    assert [p for p in client.problems if "platform/archive" in p and "wildcard" in p], client.problems
    assert not fleet.sound


def test_a_refused_proxy_section_is_listed_with_its_rule_and_no_settings() -> None:
    refused = {"widgets.example.com/v1": entry(None, project=PROJECT)}
    fleet = derive(
        instance("team-a", TEAM_A),
        target("crd-store"),
        instance("team-misconfigured", refused, annotations={"proxybot.io/slack-channel": "#mis"}),
    )
    client = only(fleet, "team-misconfigured")
    assert (client.origin, client.row.project, client.row.control_plane) == (
        Origin.PLATFORM,
        PROJECT,
        "control-plane/vcluster-team-misconfigured",
    )
    assert client.settings is None
    assert client.row.channel == "#mis"
    assert [c.name for c in fleet.clusters] == ["team-a"]
    assert client.problems
    assert all(p.startswith("vCluster refuses its proxy section: ") for p in client.problems)
    assert any(
        'customResources["widgets.example.com/v1"].targetVirtualCluster.name' in p for p in client.problems
    ), client.problems
    assert not fleet.sound


def test_a_vcluster_yaml_that_is_not_yaml_is_refused_not_a_crash() -> None:
    fleet = derive(instance("team-a", raw_values="experimental: [proxy\n"), target("crd-store"))
    client = only(fleet, "team-a")
    assert client.settings is None
    assert client.problems


def test_the_channel_from_the_annotation_else_the_projects_else_none() -> None:
    channels = platform(project_channels={"platform": "#platform-alerts", "data": "C0DATA0001"})
    fleet = derive(
        instance("team-a", TEAM_A, annotations={"proxybot.io/slack-channel": "#team-a"}),
        instance("team-b", TEAM_A),
        instance("team-c", TEAM_A, project="data"),
        instance("team-d", TEAM_A, project="other"),
        target("crd-store"),
        settings=channels,
    )
    found = {c.name: (c.row.channel, c.settings.channel if c.settings else "-") for c in fleet.clients}
    assert found == {
        "team-a": ("#team-a", "#team-a"),
        "team-b": ("#platform-alerts", "#platform-alerts"),
        "team-c": ("C0DATA0001", "C0DATA0001"),
        "team-d": (None, None),
    }


def test_an_annotation_that_is_no_channel_is_a_problem_and_the_projects_channel_used() -> None:
    fleet = derive(
        instance("team-a", TEAM_A, annotations={"proxybot.io/slack-channel": "team a alerts"}),
        target("crd-store"),
        settings=platform(project_channels={"platform": "#platform-alerts"}),
    )
    client = only(fleet, "team-a")
    assert client.row.channel == "#platform-alerts"
    assert client.settings is not None
    assert any(p.startswith("annotation proxybot.io/slack-channel: ") for p in client.problems)


def test_alerts_match_the_control_planes_namespace_and_the_cluster_label() -> None:
    fleet = derive(
        instance("team-a", TEAM_A, cluster="eu-1"),
        target("crd-store", cluster="us-1"),
        settings=platform(cluster_label="k8s_cluster"),
    )
    settings = only(fleet, "team-a").settings
    assert settings is not None
    assert settings.match == {"namespace": "vcluster-team-a", "k8s_cluster": "eu-1"}
    assert settings.control_plane is not None
    assert settings.control_plane.context == "cluster/eu-1"
    assert settings.targets[0].control_plane is not None
    assert settings.targets[0].control_plane.context == "cluster/us-1"


def test_a_refinement_applies_its_match_channel_probe_namespace_and_direct_access() -> None:
    direct = {"platform/crd-store": {"kubeconfig": "/etc/crd-store.kubeconfig", "context": "admin"}}
    refined = refinement(
        name="team-a",
        match={"cluster": "prod", "tenant": "team-a"},
        channel="#team-a-oncall",
        probe_namespace="probes",
        direct=direct,
        escalation={"mention": "<!subteam^S0123ONCALL>"},
    )
    fleet = derive(
        instance("team-a", TEAM_A, annotations={"proxybot.io/slack-channel": "#team-a"}),
        target("crd-store"),
        refinements=(refined,),
    )
    assert fleet.sound, (fleet.problems, fleet.clients)
    client = only(fleet, "team-a")
    settings = client.settings
    assert settings is not None
    assert settings.match == {"cluster": "prod", "tenant": "team-a"}
    assert (client.row.channel, settings.channel) == ("#team-a-oncall", "#team-a-oncall")
    assert settings.escalation.mention == "<!subteam^S0123ONCALL>"
    (crd_store,) = settings.targets
    assert crd_store.probe.namespace == "probes"
    assert crd_store.direct is not None
    assert (crd_store.direct.kubeconfig, crd_store.direct.context) == (
        Path("/etc/crd-store.kubeconfig"),
        "admin",
    )
    # The reads not refined still go through the platform.
    assert settings.context == "project/platform/virtualcluster/team-a"
    assert crd_store.control_plane is not None
    assert crd_store.control_plane.context == "cluster/control-plane"


def test_a_refinement_of_no_discovered_client_is_a_problem() -> None:
    fleet = derive(
        instance("team-a", TEAM_A),
        target("crd-store"),
        refinements=(refinement(name="team-a", channel="#a"), refinement(name="team-gone", channel="#g")),
    )
    assert only(fleet, "team-a").row.channel == "#a"
    assert len(fleet.problems) == 1
    assert "'team-gone'" in str(fleet.problems[0])
    assert "the platform lists none" in fleet.problems[0].what
    assert not fleet.sound
    # A target is no client: refining it is refining nothing.
    assert len(derive(target("crd-store"), refinements=(refinement(name="crd-store"),)).problems) == 1


def test_a_refinement_of_no_client_is_not_placed_where_a_hand_listed_entry_is(
    tmp_path: Path,
) -> None:
    """`clusters:` mixes hand-listed clients and refinements: a problem of the second entry, a refinement,
    is not the first's (the settings keep the refinements apart from the listed clients)."""
    text = (
        "slack: {default_channel: '#a'}\n"
        "platform: {url: 'https://platform.example.com', access_key_file: key}\n"
        "clusters:\n" + LISTED_CLIENT_YAML + "  - name: team-gone\n    channel: '#gone'\n"
    )
    settings = Settings.model_validate(yaml.safe_load(text), context={"base_dir": tmp_path})
    assert settings.platform is not None
    fleet = derive_fleet(
        [instance("team-a", TEAM_A)],
        settings.platform,
        settings.clusters,
        settings.refinements,
        KUBECONFIG,
    )
    (problem,) = fleet.problems
    assert "team-gone" in str(problem)
    assert "clusters[0]" not in str(problem), problem  # clusters[0] is prod, which is fine


def test_a_hand_listed_client_wins_over_a_discovered_one_of_its_name() -> None:
    by_hand = ClusterSettings.model_validate(
        {
            "name": "team-a",
            "kubeconfig": "/etc/team-a.kubeconfig",
            "match": {"cluster": "team-a"},
            "channel": "#by-hand",
            "targets": [
                {
                    "name": "platform/crd-store",
                    "group_versions": ["example.com/v1"],
                    "probe": {"group_version": "example.com/v1", "resource": "widgets"},
                }
            ],
        }
    )
    fleet = derive(
        instance("team-a", TEAM_A), instance("team-b", TEAM_A), target("crd-store"), listed=(by_hand,)
    )
    assert [(c.name, c.origin) for c in fleet.clients] == [
        ("team-a", Origin.CONFIG),
        ("team-b", Origin.PLATFORM),
    ]
    assert fleet.clusters[0] is by_hand
    assert fleet.clusters[0].kubeconfig == Path("/etc/team-a.kubeconfig")
    assert fleet.problems == (
        FleetProblem("instance platform/team-a", "'team-a' is listed in clusters: that entry is used"),
    )


def test_a_target_no_instance_lists_is_read_through_the_client_only() -> None:
    fleet = derive(instance("team-a", TEAM_A))
    client = only(fleet, "team-a")
    assert client.settings is not None
    (crd_store,) = client.settings.targets
    assert (crd_store.direct, crd_store.control_plane) == (None, None)
    assert any("platform/crd-store" in p and "no instance" in p for p in client.problems)


def test_the_problems_of_the_instances_read_are_the_fleets() -> None:
    read = (FleetProblem("instance p-platform/Bad", "name: not a label"),)
    fleet = derive_fleet([instance("team-a", TEAM_A)], platform(), (), (), KUBECONFIG, read)
    assert fleet.problems[0] == read[0]
    assert not fleet.sound
