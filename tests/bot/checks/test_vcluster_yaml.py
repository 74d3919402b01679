"""check-vcluster's judging: every rule of vCluster's startup validation of the resource proxy section, each
with a configuration it accepts and one it refuses (or warns about), and the loader's own refusals."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from bot.checks.vcluster_yaml import ROOT_KEY, judge_document, judge_vcluster_yaml
from bot.checks.vcluster_yaml_entry import entry_path
from bot.domain.vcluster_yaml_result import ProblemSeverity, ProxyState, Route, VclusterYamlResult

WIDGETS = "widgets.example.com/v1"
GADGETS = "gadgets.example.com/v1"
WILDCARD = "*.example.com/v1"
STORE = {"name": "crd-store"}


def on(target: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    """An enabled entry pointing at `target` (crd-store by default)."""
    return {"enabled": True, "targetVirtualCluster": dict(target or STORE), **fields}


def off(target: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {"enabled": False, "targetVirtualCluster": dict(target or STORE), **fields}


def document(entries: dict[str, Any], **sections: Any) -> dict[str, Any]:
    return {"experimental": {"proxy": {"customResources": entries}}, **sections}


def judge(entries: dict[str, Any], **sections: Any) -> VclusterYamlResult:
    """Through the text path, as the command does: dumped to YAML and parsed back."""
    return judge_vcluster_yaml(yaml.safe_dump(document(entries, **sections), sort_keys=False))


def found(result: VclusterYamlResult, severity: ProblemSeverity) -> set[str]:
    return {p.key for p in result.problems if p.severity is severity}


def refused(result: VclusterYamlResult) -> set[str]:
    return found(result, ProblemSeverity.REFUSED)


def warned(result: VclusterYamlResult) -> set[str]:
    return found(result, ProblemSeverity.WARNING)


def path(key: str, *fields: str) -> str:
    return ".".join([entry_path(key), *fields])


# -- the key ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "widgets/v1",  # no group: core resources cannot be proxied
        "widgets.example.com",  # no version
        ".example.com/v1",
        "widgets./v1",
        "widgets.example.com/",
        "widgets.example.com/v1/status",
        "widgets .example.com/v1",
        "*/v1",
    ],
)
def test_a_key_without_resource_group_and_version_is_refused(key: str) -> None:
    result = judge({key: on()})
    assert refused(result) == {path(key)}
    assert warned(result) == set()  # enabled, even with a bad key: not "every entry disabled"
    assert result.verdict == "refused"
    assert result.proxy is ProxyState.REFUSED
    assert "the group is required" in result.problems[0].message


@pytest.mark.parametrize(
    "key", [WIDGETS, "widgets.apps.example.io/v1beta1", "workflows.alpha.sh/v1", WILDCARD]
)
def test_resource_group_version_keys_and_wildcards_are_accepted(key: str) -> None:
    result = judge({key: on()})
    assert refused(result) == set()
    assert result.verdict == "ok"
    assert result.proxy is ProxyState.STARTS


def test_the_problem_key_is_the_yaml_path_of_the_entry() -> None:
    assert entry_path(WIDGETS) == 'experimental.proxy.customResources["widgets.example.com/v1"]'


# -- targetVirtualCluster.name ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ({"enabled": True}, path(WIDGETS, "targetVirtualCluster", "name")),
        ({"enabled": False}, path(WIDGETS, "targetVirtualCluster", "name")),  # disabled ones too
        ({"targetVirtualCluster": {"project": "p"}}, path(WIDGETS, "targetVirtualCluster", "name")),
        (on({"name": ""}), path(WIDGETS, "targetVirtualCluster", "name")),
        (on({"name": 123}), path(WIDGETS, "targetVirtualCluster", "name")),
        ({"enabled": True, "targetVirtualCluster": "crd-store"}, path(WIDGETS, "targetVirtualCluster")),
        (None, path(WIDGETS, "targetVirtualCluster", "name")),
    ],
)
def test_an_entry_without_a_target_name_is_refused(entry: dict[str, Any] | None, key: str) -> None:
    assert refused(judge({WIDGETS: entry})) == {key}


def test_a_disabled_entry_with_a_target_name_passes_validation() -> None:
    assert refused(judge({WIDGETS: off()})) == set()


# -- one target and one access mode per group/version -------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (on({"name": "store-a"}), on({"name": "store-b"})),
        (on({"name": "s", "project": "a"}), on({"name": "s", "project": "b"})),
        (on(accessResources="owned"), on(accessResources="all")),
    ],
)
def test_enabled_entries_of_one_group_version_with_different_targets_or_modes_are_refused(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    result = judge({WIDGETS: first, GADGETS: second})
    assert refused(result) == {path(GADGETS)}
    assert "must agree on target and access mode" in result.problems[0].message


@pytest.mark.parametrize(
    ("first", "second", "second_key"),
    [
        (on(), on(), GADGETS),
        (on({"name": "s", "project": "central"}), on({"name": "s", "project": "central"}), GADGETS),
        (on(accessResources="all"), on(accessResources="all"), GADGETS),
        (on({"name": "store-a"}), on({"name": "store-b"}), "gadgets.example.com/v2"),  # another version
        (on({"name": "store-a"}), on({"name": "store-b"}), "gadgets.other.io/v1"),  # another group
    ],
)
def test_entries_that_agree_or_serve_another_group_version_are_accepted(
    first: dict[str, Any], second: dict[str, Any], second_key: str
) -> None:
    assert refused(judge({WIDGETS: first, second_key: second})) == set()


def test_a_disabled_entry_may_name_another_target_but_is_warned_about() -> None:
    result = judge({WIDGETS: on({"name": "store-a"}), GADGETS: off({"name": "store-b"})})
    assert refused(result) == set()
    assert warned(result) == {path(GADGETS)}
    assert "enabling it would be refused" in result.problems[0].message


@pytest.mark.parametrize(
    ("first", "second", "field"),
    [
        (on(), on(accessResources="owned"), "accessResources"),  # the default, written out
        (on(accessResources="owned"), on(), "accessResources"),
        (on(), on({"name": "crd-store", "project": "default"}), "targetVirtualCluster.project"),
    ],
)
def test_omitted_on_one_entry_and_written_on_another_is_refused_even_as_the_default(
    first: dict[str, Any], second: dict[str, Any], field: str
) -> None:
    result = judge({WIDGETS: first, GADGETS: second})
    assert refused(result) == {path(GADGETS)}
    message = result.problems[0].message
    assert field in message
    assert "before defaults" in message


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (on(), on()),  # both omit accessResources and project
        (on(accessResources="owned"), on(accessResources="owned")),
        (on(accessResources=""), on()),  # an empty string is omitted, as for vCluster
    ],
)
def test_written_identically_is_accepted(first: dict[str, Any], second: dict[str, Any]) -> None:
    assert refused(judge({WIDGETS: first, GADGETS: second})) == set()


# -- access modes -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["read", "Owned", "ALL", "none", 1, True])
def test_an_access_mode_other_than_owned_or_all_is_refused(mode: object) -> None:
    assert refused(judge({WIDGETS: on(accessResources=mode)})) == {path(WIDGETS, "accessResources")}


def test_an_invalid_mode_is_refused_on_a_disabled_entry_too() -> None:
    assert refused(judge({WIDGETS: off(accessResources="read")})) == {path(WIDGETS, "accessResources")}


@pytest.mark.parametrize("mode", ["owned", "all"])
def test_owned_and_all_are_accepted(mode: str) -> None:
    assert refused(judge({WIDGETS: on(accessResources=mode)})) == set()


def test_all_is_warned_about_as_a_privileged_client() -> None:
    result = judge({WIDGETS: on(accessResources="all")})
    assert warned(result) == {path(WIDGETS, "accessResources")}
    assert "privileged" in result.problems[0].message


def test_owned_is_not_warned_about() -> None:
    assert warned(judge({WIDGETS: on(accessResources="owned")})) == set()


# -- wildcards ----------------------------------------------------------------------------------------------


def test_a_wildcard_beside_an_enabled_explicit_entry_is_refused() -> None:
    result = judge({WILDCARD: on(), WIDGETS: on()})
    assert refused(result) == {path(WIDGETS)}
    assert "wildcard" in result.problems[0].message


def test_a_wildcard_beside_a_disabled_explicit_entry_is_accepted() -> None:
    result = judge({WILDCARD: on(), WIDGETS: off()})
    assert refused(result) == set()
    assert result.routes == (Route("example.com/v1", "crd-store", None, "owned", (WILDCARD,)),)


def test_a_wildcard_is_warned_about_for_its_empty_fallback_discovery() -> None:
    result = judge({WILDCARD: on()})
    assert warned(result) == {path(WILDCARD)}
    assert "empty list" in result.problems[0].message


def test_explicit_keys_are_not_warned_about() -> None:
    assert warned(judge({WIDGETS: on(), GADGETS: on()})) == set()


# -- proxied and synced -------------------------------------------------------------------------------------


def sync(direction: str, key: str, enabled: bool = True) -> dict[str, Any]:
    return {"sync": {direction: {"customResources": {key: {"enabled": enabled}}}}}


@pytest.mark.parametrize("direction", ["toHost", "fromHost"])
@pytest.mark.parametrize("synced", ["widgets.example.com", "others.example.com", "others.example.com/v2"])
def test_a_proxied_group_also_synced_is_refused_whatever_the_resource_or_version(
    direction: str, synced: str
) -> None:
    result = judge({WIDGETS: on()}, **sync(direction, synced))
    assert refused(result) == {path(WIDGETS)}
    assert f"sync.{direction}.customResources" in result.problems[0].message


@pytest.mark.parametrize(
    ("proxied", "synced"),
    [
        (on(), sync("toHost", "certificates.cert-manager.io")),  # another group
        (on(), sync("toHost", "widgets.example.com", enabled=False)),
        (off(), sync("fromHost", "widgets.example.com")),  # disabled entries do not conflict
        (on(), sync("toHost", "widgets.sub.example.com")),  # a different group, not a parent
    ],
)
def test_groups_not_both_proxied_and_synced_are_accepted(
    proxied: dict[str, Any], synced: dict[str, Any]
) -> None:
    assert refused(judge({WIDGETS: proxied}, **synced)) == set()


# -- nothing enabled, nothing configured --------------------------------------------------------------------


def test_every_entry_disabled_is_a_warning_the_proxy_does_not_start() -> None:
    result = judge({WIDGETS: off(), GADGETS: off()})
    assert result.verdict == "ok"
    assert result.proxy is ProxyState.ALL_DISABLED
    assert warned(result) == {"experimental.proxy.customResources"}


def test_one_enabled_entry_starts_the_proxy() -> None:
    result = judge({WIDGETS: off(), "things.other.io/v1": on()})
    assert result.proxy is ProxyState.STARTS
    assert warned(result) == set()


@pytest.mark.parametrize(
    "text",
    ["", "controlPlane: {}\n", "experimental: {}\n", "experimental:\n  proxy:\n    customResources: {}\n"],
)
def test_without_proxy_entries_vcluster_starts_without_the_proxy(text: str) -> None:
    result = judge_vcluster_yaml(text)
    assert (result.verdict, result.proxy, result.problems) == ("ok", ProxyState.NOT_CONFIGURED, ())


# -- NetworkPolicies ----------------------------------------------------------------------------------------

UDP_EGRESS = {
    "to": [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "vcluster-crd-store"}},
            "podSelector": {"matchLabels": {"app": "vcluster", "release": "crd-store"}},
        }
    ],
    "ports": [{"protocol": "UDP"}],
}


def policies(enabled: bool, *egress: dict[str, Any]) -> dict[str, Any]:
    policy: dict[str, Any] = {"enabled": enabled}
    if egress:
        policy["controlPlane"] = {"egress": list(egress)}
    return {"policies": {"networkPolicy": policy}}


@pytest.mark.parametrize(
    "section",
    [
        policies(True),
        policies(True, {"ports": [{"protocol": "TCP", "port": 443}]}),
        policies(True, {"ports": [{"protocol": "UDP", "port": 41641}]}),  # pinned: tsnet's port moves
    ],
)
def test_generated_policies_without_a_udp_egress_rule_are_warned_about(section: dict[str, Any]) -> None:
    result = judge({WIDGETS: on()}, **section)
    assert result.verdict == "ok"
    assert warned(result) == {"policies.networkPolicy.controlPlane.egress"}
    assert "proxybot netpol" in result.problems[0].next_step


@pytest.mark.parametrize(
    "section", [policies(True, UDP_EGRESS), policies(False), policies(True, {"to": [{"ipBlock": {}}]}), {}]
)
def test_a_udp_egress_rule_or_no_generated_policies_is_not_warned_about(section: dict[str, Any]) -> None:
    assert warned(judge({WIDGETS: on()}, **section)) == set()


def test_policies_do_not_matter_when_the_proxy_does_not_start() -> None:
    assert warned(judge({WIDGETS: off()}, **policies(True))) == {"experimental.proxy.customResources"}


# -- shapes and types ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "key"),
    [
        ({"experimental": []}, "experimental"),
        ({"experimental": {"proxy": "on"}}, "experimental.proxy"),
        ({"experimental": {"proxy": {"customResources": [WIDGETS]}}}, "experimental.proxy.customResources"),
        (document({WIDGETS: [1]}), path(WIDGETS)),
        (document({WIDGETS: on(enabled="true")}), path(WIDGETS, "enabled")),
        (
            document({WIDGETS: on({"name": "s", "project": 7})}),
            path(WIDGETS, "targetVirtualCluster", "project"),
        ),
        ([document({WIDGETS: on()})], ROOT_KEY),
        ("experimental", ROOT_KEY),
    ],
)
def test_a_value_of_the_wrong_shape_is_refused_at_its_path(doc: object, key: str) -> None:
    assert refused(judge_document(doc)) == {key}


@pytest.mark.parametrize(
    ("doc", "key"),
    [
        (document({WIDGETS: on(accessResource="all")}), path(WIDGETS, "accessResource")),
        (
            document({WIDGETS: on({"name": "crd-store", "projet": "a"})}),
            path(WIDGETS, "targetVirtualCluster", "projet"),
        ),
        (
            {"experimental": {"proxy": {"customResources": {WIDGETS: on()}, "customResource": {}}}},
            "experimental.proxy.customResource",
        ),
    ],
)
def test_an_unknown_field_is_refused_as_vclusters_schema_refuses_it(doc: object, key: str) -> None:
    """loft-sh/vcluster chart/values.schema.json: `Proxy`, `CustomResourceProxy` and `VirtualClusterRef` allow
    no additional properties, so a misspelt field is not harmless: vCluster refuses the file."""
    result = judge_document(doc)
    assert refused(result) == {key}
    assert result.proxy is ProxyState.REFUSED


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({"name": "CRD-Store"}, "name"),
        ({"name": "crd_store"}, "name"),
        ({"name": "crd-store-"}, "name"),
        ({"name": "crd-store", "project": "Platform"}, "project"),
    ],
)
def test_a_target_name_or_project_that_is_not_a_dns_label_is_refused(
    target: dict[str, str], field: str
) -> None:
    """loft-sh/vcluster chart/values.schema.json, `VirtualClusterRef`: name and project are DNS labels
    (`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`); configure/vcluster-yaml/experimental/proxy.mdx, "Configuration
    options": they name the target tenant cluster and its project."""
    assert refused(judge({WIDGETS: on(target)})) == {path(WIDGETS, "targetVirtualCluster", field)}


def test_dns_label_names_are_accepted() -> None:
    assert refused(judge({WIDGETS: on({"name": "crd-store-2", "project": "p1"})})) == set()


# -- the file -----------------------------------------------------------------------------------------------


def test_invalid_yaml_is_refused_with_its_line_and_column() -> None:
    result = judge_vcluster_yaml("experimental:\n  proxy:\n    customResources: {\n")
    assert result.verdict == "refused"
    [problem] = result.problems
    assert problem.key == ROOT_KEY
    assert problem.message.startswith("not valid YAML: line 4, column 1: ")


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"a: \xff\n", "not utf-8 text"),
        ("a: \x07\n", "special characters are not allowed"),
        ("[" * 50_000, "nested too deeply"),
        ("a: 1\n---\nb: 2\n", "expected a single document"),
        ("a: !!python/object/apply:os.system [true]\n", "could not determine a constructor"),
    ],
)
def test_what_a_yaml_parser_cannot_read_is_refused(data: bytes | str, why: str) -> None:
    [problem] = judge_vcluster_yaml(data).problems
    assert (problem.severity, problem.key) == (ProblemSeverity.REFUSED, ROOT_KEY)
    assert why in problem.message


DUPLICATE_ENTRY = f"""\
experimental:
  proxy:
    customResources:
      {WIDGETS}:
        enabled: true
        targetVirtualCluster: {{name: crd-store}}
      {WIDGETS}:
        enabled: true
        targetVirtualCluster: {{name: other-store}}
"""


def test_an_entry_written_twice_is_refused_with_both_lines() -> None:
    result = judge_vcluster_yaml(DUPLICATE_ENTRY)
    assert refused(result) == {path(WIDGETS)}
    assert "lines 4 and 7" in result.problems[0].message


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (
            "experimental:\n  proxy: {}\nexperimental:\n  proxy:\n    customResources: {}\n",
            "experimental",
        ),
        (
            f"experimental:\n  proxy:\n    customResources:\n      {WIDGETS}:\n        enabled: true\n"
            "        enabled: false\n        targetVirtualCluster: {name: s}\n",
            path(WIDGETS, "enabled"),
        ),
        (
            f"experimental:\n  proxy:\n    customResources:\n      {WIDGETS}:\n"
            "        targetVirtualCluster: {name: a, name: b}\n",
            path(WIDGETS, "targetVirtualCluster", "name"),
        ),
    ],
)
def test_duplicate_keys_on_the_proxy_path_are_refused(text: str, key: str) -> None:
    assert key in refused(judge_vcluster_yaml(text))


def test_duplicate_keys_elsewhere_are_not_the_proxy_checks_business() -> None:
    text = "controlPlane: {}\ncontrolPlane: {}\n" + yaml.safe_dump(document({WIDGETS: on()}))
    assert judge_vcluster_yaml(text).problems == ()


# -- the vendor's examples ----------------------------------------------------------------------------------

MULTI_TARGET = """\
experimental:
  proxy:
    customResources:
      workflows.alpha.sh/v1: {enabled: true, targetVirtualCluster: {name: target-a}}
      pipelines.alpha.sh/v1: {enabled: true, targetVirtualCluster: {name: target-a}}
      executions.beta.sh/v2: {enabled: true, targetVirtualCluster: {name: target-b}}
      tasks.beta.sh/v2: {enabled: true, targetVirtualCluster: {name: target-b}}
"""


def test_the_multi_target_layout_starts_with_one_route_per_group_version() -> None:
    result = judge_vcluster_yaml(MULTI_TARGET)
    assert (result.verdict, result.problems) == ("ok", ())
    assert result.routes == (
        Route("alpha.sh/v1", "target-a", None, "owned", ("workflows.alpha.sh/v1", "pipelines.alpha.sh/v1")),
        Route("beta.sh/v2", "target-b", None, "owned", ("executions.beta.sh/v2", "tasks.beta.sh/v2")),
    )


def test_a_cross_project_target_keeps_its_project() -> None:
    result = judge({"workflows.alpha.sh/v1": on({"name": "target", "project": "other-project"})})
    assert result.routes == (
        Route("alpha.sh/v1", "target", "other-project", "owned", ("workflows.alpha.sh/v1",)),
    )


def test_a_refused_file_lists_no_routes_and_refusals_first() -> None:
    result = judge({WIDGETS: on(accessResources="all"), "pods/v1": on()})
    assert result.routes == ()
    assert [p.severity for p in result.problems] == [ProblemSeverity.REFUSED, ProblemSeverity.WARNING]
