"""Least privilege that matches the code: every Kubernetes request proxybot makes is granted by the shipped
RBAC, and every shipped grant is used by a request, per kind of cluster and the bot's own identity there:
config/deploy/base/rbac-control-plane.yaml in the control plane cluster,
config/deploy/tenant-cluster/rbac.yaml in each client tenant cluster, and
config/deploy/tenant-cluster/direct-target-rbac.yaml in each target tenant cluster read through a `direct`
kubeconfig (the simulator's target clusters, which only `path` reads).

The requests are not listed by hand: the console commands run against the simulator (`RUNS`, in the
scenarios of `SCENARIOS`), which records every request it receives, and each becomes an `Access` (cluster
kind, namespace, API group, resource, verb, name). Every builder of an API path (`bot/domain/paths.py`, and
the two the checks keep beside them) must have been seen in that recording, so a new read cannot escape the
comparison: add the command that makes it to `RUNS`.

The config decides some names: the control-plane namespaces and the probe's group, resource and namespace.
Both sides are compared as templates: a namespace becomes `<client control plane>` or `<target control
plane>`, and a probe's `(group, resource, namespace)` becomes `<probe ...>`, on the recorded side from the
simulator's config, on the granted side from the shipped config (in a direct target, the probes of the
targets with `direct` access only). A templated grant is in place only when it is granted for every member
(every client's namespace, every configured probe); one granted for some members only fails, naming them.
The tenant manifests' probe rules are thus the shipped config's probes: edit them to your probes (one Role
and RoleBinding per probe namespace).

Discovery (`GET /apis/<group>/<version>`) is granted to every authenticated user by `system:discovery`,
so it needs no grant of ours. A cluster-wide grant (a ClusterRoleBinding) is used only by a cluster-wide
request: one used only inside namespaces is reported as too broad.
"""

from __future__ import annotations

import importlib
import inspect
import io
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli.console import Console
from bot.cli.main import build_parser
from bot.domain.paths import ApiPath
from config.loader import load_config
from tests.fakes.manifests import DEPLOY, ROOT, shipped_settings
from tests.fakes.sim_scenarios import RecordingSimServer, started

CONTROL_PLANE_RBAC = DEPLOY / "base" / "rbac-control-plane.yaml"
TENANT_RBAC = DEPLOY / "tenant-cluster" / "rbac.yaml"
DIRECT_RBAC = DEPLOY / "tenant-cluster" / "direct-target-rbac.yaml"
# Whom each manifest grants: the bot's identity in that kind of cluster ("tenant": a client tenant cluster,
# "direct": a target tenant cluster read through a `direct` kubeconfig).
SUBJECTS = {
    "control-plane": {"kind": "ServiceAccount", "name": "proxybot", "namespace": "proxybot"},
    "tenant": {"kind": "ServiceAccount", "name": "proxybot-reader", "namespace": "default"},
    "direct": {"kind": "ServiceAccount", "name": "proxybot-direct-reader", "namespace": "default"},
}
SIM_CONTROL_PLANE = "control-plane"  # the simulator's control plane cluster

CLIENT_NS = "<client control plane>"
TARGET_NS = "<target control plane>"
PROBE_GROUP, PROBE_RESOURCE, PROBE_NS = "<probe group>", "<probe resource>", "<probe namespace>"
EVERYWHERE = "*"  # a ClusterRoleBinding's scope
CLUSTER = None  # a cluster-wide request (a cluster-scoped resource, or a list across namespaces)

# The scenarios and commands that make every request the code can make (a failing target makes the
# alternative readings). Discovery, which the probe reads when the proxy answers 401/403/404, is not made:
# the simulator does not refuse a probe, and discovery needs no grant.
SCENARIOS = ("healthy", "target-down")
TARGET = "platform/crd-store"
RUNS: tuple[tuple[str, ...], ...] = (
    ("status",),
    ("probe", TARGET),
    ("path", TARGET, "--samples", "2"),
    ("verify",),
    ("digest",),
    ("logs", TARGET),
)


@dataclass(frozen=True, order=True)
class Access:
    """One request, or one grant, in RBAC's terms (`names` None: any name)."""

    cluster: str
    namespace: str | None
    group: str
    resource: str
    verb: str
    names: tuple[str, ...] | None = None

    def __str__(self) -> str:
        where = "cluster-wide" if self.namespace in (CLUSTER, EVERYWHERE) else f"in {self.namespace}"
        what = self.resource if self.group in ("", "nonResourceURL") else f"{self.resource}.{self.group}"
        named = f" {list(self.names)}" if self.names else ""
        return f"{self.cluster}: {self.verb} {what}{named} {where}"


@dataclass(frozen=True)
class Members:
    """What the config names, from which the templates are made and instantiated."""

    client_namespaces: frozenset[str]
    target_namespaces: frozenset[str]
    probes: frozenset[tuple[str, str, str]]  # (group, resource, namespace)
    direct_probes: frozenset[tuple[str, str, str]] = frozenset()  # those of the targets with `direct`

    def template(self, access: Access) -> Access:
        if access.cluster == "control-plane":
            if access.namespace in self.client_namespaces:
                return replace(access, namespace=CLIENT_NS)
            if access.namespace in self.target_namespaces:
                return replace(access, namespace=TARGET_NS)
        elif (access.group, access.resource, access.namespace) in self._probes(access.cluster):
            return replace(access, group=PROBE_GROUP, resource=PROBE_RESOURCE, namespace=PROBE_NS)
        elif access.namespace == EVERYWHERE and (access.group, access.resource) in self._probed(
            access.cluster
        ):
            return replace(access, group=PROBE_GROUP, resource=PROBE_RESOURCE)  # a probe's, cluster-wide
        return access

    def _probes(self, cluster: str) -> frozenset[tuple[str, str, str]]:
        """The probes a kind of tenant cluster answers: a direct target only those of direct targets."""
        return self.direct_probes if cluster == "direct" else self.probes

    def _probed(self, cluster: str) -> set[tuple[str, str]]:
        return {(group, resource) for group, resource, _ in self._probes(cluster)}

    def instances(self, template: Access) -> set[Access]:
        if template.namespace == CLIENT_NS:
            return {replace(template, namespace=ns) for ns in self.client_namespaces}
        if template.namespace == TARGET_NS:
            return {replace(template, namespace=ns) for ns in self.target_namespaces}
        if template.resource == PROBE_RESOURCE and template.namespace == EVERYWHERE:
            return {replace(template, group=g, resource=r) for g, r in self._probed(template.cluster)}
        if template.resource == PROBE_RESOURCE:
            probes = self._probes(template.cluster)
            return {replace(template, group=g, resource=r, namespace=ns) for g, r, ns in probes}
        return {template}


def members_of(clusters: Iterable[Any]) -> Members:
    clusters = list(clusters)
    targets = [t for c in clusters for t in c.targets]
    return Members(
        frozenset(c.control_plane.namespace for c in clusters if c.control_plane is not None),
        frozenset(t.control_plane.namespace for t in targets if t.control_plane is not None),
        probes_of(targets),
        probes_of(t for t in targets if t.direct is not None),
    )


def probes_of(targets: Iterable[Any]) -> frozenset[tuple[str, str, str]]:
    return frozenset(
        (t.probe.group_version.rpartition("/")[0], t.probe.resource, t.probe.namespace) for t in targets
    )


# -- a request path in RBAC's terms ----------------------------------------------------------------


def access_of(cluster: str, path: str) -> Access | None:
    """A request path as RBAC sees a GET of it; None for discovery (granted to everyone)."""
    parts = path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return Access(cluster, CLUSTER, "nonResourceURL", path, "get")
    if not rest:
        return None  # /api/v1, /apis/<group>/<version>: discovery
    namespace = CLUSTER
    if rest[0] == "namespaces" and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    resource, name, sub = rest[0], rest[1:2], rest[2:3]
    if not name:
        return Access(cluster, namespace, group, resource, "list")
    return Access(cluster, namespace, group, "/".join([resource, *sub]), "get", (name[0],))


def sim_access(path: str, targets: Iterable[str] = ()) -> Access | None:
    """A path the simulator received: `/clusters/<name>[/pods/<replica>]/<API path>`; a cluster named in
    `targets` (the simulator's target clusters) is one proxybot reads through a `direct` kubeconfig."""
    _, _, name, *rest = path.split("/")
    if rest[:1] == ["pods"] and name != SIM_CONTROL_PLANE:
        rest = rest[2:]  # one client replica, pinned
    kind = "control-plane" if name == SIM_CONTROL_PLANE else "direct" if name in targets else "tenant"
    return access_of(kind, "/" + "/".join(rest))


def sim_targets(server: RecordingSimServer) -> frozenset[str]:
    """The simulator's target clusters; none may also be a client, or its requests would have two kinds."""
    kinds: dict[str, set[str]] = {}
    for info in server.clusters():
        kinds.setdefault(info.name, set()).add(info.kind)
    assert all(len(k) == 1 for k in kinds.values()), kinds
    return frozenset(name for name, k in kinds.items() if k == {"target"})


# -- what the code requests ------------------------------------------------------------------------


@dataclass(frozen=True)
class Recorded:
    accesses: frozenset[Access]  # templated with the simulator config's names
    discovery: frozenset[str]  # requests that need no grant


def run_cli(config: Path, argv: tuple[str, ...]) -> None:
    args = build_parser().parse_args([*argv, "--config", str(config)])
    err = io.StringIO()
    code = args.run(args, Console({}, io.StringIO(), err))
    assert code in (0, 1), f"{argv}: exit {code}: {err.getvalue()}"  # 1: a check found a fault


def record(tmp: pytest.TempPathFactory) -> Iterator[tuple[RecordingSimServer, Path]]:
    for name in SCENARIOS:
        yield from started(tmp, name)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    seen: set[tuple[str, str, str]] = set()
    members: Members | None = None
    targets: frozenset[str] = frozenset()
    for server, config in record(tmp_path_factory):
        for argv in RUNS:
            run_cli(config, argv)
        seen |= {(method, path, query) for method, path, query in server.requests}
        members = members_of(load_config(config).settings.clusters)
        targets |= sim_targets(server)
    assert members is not None
    assert {method for method, _, _ in seen} == {"GET"}
    accesses, discovery = set(), set()
    for _, path, _ in seen:
        access = sim_access(path, targets)
        if access is None:
            discovery.add(path)
        else:
            accesses.add(members.template(access))
    return Recorded(frozenset(accesses), frozenset(discovery))


# -- what the manifests grant ----------------------------------------------------------------------


def grants(cluster: str, manifest: Path) -> set[Access]:
    docs = [d for d in yaml.safe_load_all(manifest.read_text()) if d]
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d for d in docs}
    found: set[Access] = set()
    for binding in (d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        if SUBJECTS[cluster] not in binding["subjects"]:
            continue
        scope = binding["metadata"].get("namespace", EVERYWHERE)
        ref = binding["roleRef"]
        role = roles[(ref["kind"], None if ref["kind"] == "ClusterRole" else scope, ref["name"])]
        for rule in role["rules"]:
            names = tuple(rule["resourceNames"]) if "resourceNames" in rule else None
            for verb in rule["verbs"]:
                for url in rule.get("nonResourceURLs", []):
                    found.add(Access(cluster, CLUSTER, "nonResourceURL", url, verb))
                for group in rule.get("apiGroups", []):
                    for resource in rule["resources"]:
                        found.add(Access(cluster, scope, group, resource, verb, names))
    return found


def templated(concrete: set[Access], members: Members) -> tuple[set[Access], list[str]]:
    """The templates every member is granted, and the grants made for some members only."""
    complete, partial = set(), []
    for template in sorted({members.template(a) for a in concrete}, key=str):
        missing = sorted(members.instances(template) - concrete, key=str)
        if missing:
            partial.append(f"{template}: not granted for {', '.join(str(m) for m in missing)}")
        else:
            complete.add(template)
    return complete, partial


def granted_by(grant: Access, request: Access) -> bool:
    if (grant.cluster, grant.group, grant.resource, grant.verb) != (
        request.cluster,
        request.group,
        request.resource,
        request.verb,
    ):
        return False
    if grant.names is not None and (request.names is None or not set(request.names) <= set(grant.names)):
        return False
    return grant.namespace in (EVERYWHERE, request.namespace)


def compare(requests: Iterable[Access], shipped: Iterable[Access]) -> list[str]:
    """Every problem: a request no grant allows, a grant no request uses, a cluster-wide grant only used
    inside namespaces."""
    requests, shipped = sorted(requests, key=str), sorted(shipped, key=str)
    problems = [f"not granted: {r}" for r in requests if not any(granted_by(g, r) for g in shipped)]
    for grant in shipped:
        using = [r for r in requests if granted_by(grant, r)]
        if not using:
            problems.append(f"granted but never requested: {grant}")
        elif grant.namespace == EVERYWHERE and all(r.namespace is not CLUSTER for r in using):
            within = sorted({str(r.namespace) for r in using})
            problems.append(f"granted cluster-wide but only requested in {', '.join(within)}: {grant}")
    return problems


def shipped_grants(tmp_path: Path) -> tuple[set[Access], list[str]]:
    members = members_of(shipped_settings(tmp_path).clusters)
    concrete = grants("control-plane", CONTROL_PLANE_RBAC) | grants("tenant", TENANT_RBAC)
    concrete |= grants("direct", DIRECT_RBAC)
    return templated(concrete, members)


# -- the comparison --------------------------------------------------------------------------------


def test_every_request_is_granted_and_every_grant_is_requested(recorded: Recorded, tmp_path: Path) -> None:
    shipped, partial = shipped_grants(tmp_path)
    problems = partial + compare(recorded.accesses, shipped)
    assert not problems, "\n".join(problems)


def sample_arguments(builder: Callable[..., ApiPath]) -> dict[str, object]:
    """Valid arguments for any path builder, by parameter name and annotation."""
    samples: dict[str, object] = {}
    for name, parameter in inspect.signature(builder).parameters.items():
        annotation = str(parameter.annotation)
        if "int" in annotation:
            samples[name] = 1
        elif name in ("gv", "group_version"):
            samples[name] = "example.com/v1"
        elif name == "label_selector":
            samples[name] = "app=sample"
        else:
            samples[name] = "sample"
    return samples


SOURCES = ("bot", "handlers")


def code_modules() -> Iterator[tuple[str, Path]]:
    """Every module of the code (not `__main__`, which runs the CLI when imported) and its file."""
    for package in SOURCES:
        for file in sorted((ROOT / package).rglob("*.py")):
            if file.name != "__main__.py":
                parts = file.relative_to(ROOT).with_suffix("").parts
                yield ".".join(parts).removesuffix(".__init__"), file


def path_builders() -> dict[str, Callable[..., ApiPath]]:
    """Every public function of the code that returns an `ApiPath`."""
    found: dict[str, Callable[..., ApiPath]] = {}
    for name, _ in code_modules():
        module = importlib.import_module(name)
        for attribute, function in vars(module).items():
            if (
                inspect.isfunction(function)
                and not attribute.startswith("_")
                and function.__module__ == name
                and inspect.signature(function).return_annotation == "ApiPath"
            ):
                found[f"{name}.{attribute}"] = function
    return found


def test_every_path_the_code_makes_is_made_by_a_builder() -> None:
    # An `ApiPath(...)` made anywhere but in a builder would escape the next test.
    builders = {name.rpartition(".")[0] for name in path_builders()}
    making = {
        name
        for name, file in code_modules()
        if "ApiPath(" in file.read_text(encoding="utf-8").replace("class ApiPath(", "")
    }
    assert making == builders, making ^ builders


def shape(access: Access) -> tuple[str, str, str, bool]:
    return access.group, access.resource, access.verb, access.namespace is not CLUSTER


def test_the_recording_makes_every_request_the_code_can_build(recorded: Recorded) -> None:
    builders = path_builders()
    assert {"bot.domain.paths.probe_path", "bot.checks.verify_cronjob.cronjob_path"} <= set(builders)
    sample_probe = Members(frozenset(), frozenset(), frozenset({("example.com", "sample", "sample")}))
    seen = {shape(a) for a in recorded.accesses}
    missing = []
    for name, builder in sorted(builders.items()):
        access = access_of("tenant", builder(**sample_arguments(builder)).path)
        if access is None:
            assert name == "bot.domain.paths.discovery_path", name  # discovery needs no grant
        elif shape(sample_probe.template(access)) not in seen:
            missing.append(f"{name}: {access}")
    assert not missing, "never requested by RUNS:\n" + "\n".join(missing)


def test_requests_are_recorded_as_rbac_sees_them(recorded: Recorded) -> None:
    assert access_of("tenant", "/apis/apiregistration.k8s.io/v1/apiservices") == Access(
        "tenant", CLUSTER, "apiregistration.k8s.io", "apiservices", "list"
    )
    assert access_of("control-plane", "/api/v1/namespaces/ns/pods/p/log") == Access(
        "control-plane", "ns", "", "pods/log", "get", ("p",)
    )
    assert access_of("tenant", "/apis/example.com/v1") is None
    assert sim_access("/clusters/team-a/pods/team-a-0/metrics/syncer") == Access(
        "tenant", CLUSTER, "nonResourceURL", "/metrics/syncer", "get"
    )
    assert Access("tenant", PROBE_NS, PROBE_GROUP, PROBE_RESOURCE, "list") in recorded.accesses
    widgets = "/clusters/crd-store/apis/example.com/v1/namespaces/default/widgets"
    assert sim_access(widgets, {"crd-store"}) == Access("direct", "default", "example.com", "widgets", "list")
    assert sim_access(widgets) == Access("tenant", "default", "example.com", "widgets", "list")
    # `path` reached the target through its `direct` kubeconfig, with the probe's request
    assert Access("direct", PROBE_NS, PROBE_GROUP, PROBE_RESOURCE, "list") in recorded.accesses


# -- the comparison can fail -----------------------------------------------------------------------

LIST_PODS = Access("control-plane", "ns-a", "", "pods", "list")


def test_an_ungranted_request_is_named() -> None:
    assert compare([LIST_PODS], []) == ["not granted: control-plane: list pods in ns-a"]


def test_an_unused_grant_is_named() -> None:
    unused = Access("tenant", EVERYWHERE, "apiregistration.k8s.io", "apiservices", "get")
    assert compare([], [unused]) == [
        "granted but never requested: tenant: get apiservices.apiregistration.k8s.io cluster-wide"
    ]


def test_a_grant_in_another_namespace_or_for_another_name_does_not_count() -> None:
    assert compare([LIST_PODS], [replace(LIST_PODS, namespace="ns-b")])[0].startswith("not granted")
    get = Access("control-plane", "ns-a", "batch", "cronjobs", "get", ("other",))
    named = replace(get, names=("proxy-probe",))
    assert compare([get], [named])[0] == "not granted: control-plane: get cronjobs.batch ['other'] in ns-a"


def test_a_cluster_wide_grant_used_in_one_namespace_is_too_broad() -> None:
    assert compare([LIST_PODS], [replace(LIST_PODS, namespace=EVERYWHERE)]) == [
        "granted cluster-wide but only requested in ns-a: control-plane: list pods cluster-wide"
    ]


def test_a_templated_grant_must_cover_every_member() -> None:
    members = Members(frozenset({"vc-a", "vc-b"}), frozenset(), frozenset())
    only_a = {Access("control-plane", "vc-a", "", "pods/log", "get")}
    complete, partial = templated(only_a, members)
    assert not complete
    assert partial == [
        f"control-plane: get pods/log in {CLIENT_NS}: not granted for control-plane: get pods/log in vc-b"
    ]


def test_the_probe_rule_is_templated_from_the_config() -> None:
    members = Members(frozenset(), frozenset(), frozenset({("g.example.com", "things", "apps")}))
    grant = Access("tenant", "apps", "g.example.com", "things", "list")
    probe = Access("tenant", PROBE_NS, PROBE_GROUP, PROBE_RESOURCE, "list")
    assert templated({grant}, members) == ({probe}, [])
    # the same resource granted in another namespace is no probe's grant: it stays literal
    other = replace(grant, namespace="default")
    assert templated({other}, members) == ({other}, [])
    # granted cluster-wide, it is the probe's grant, too broad for the one namespace the probe reads
    (wide,), _ = templated({replace(grant, namespace=EVERYWHERE)}, members)
    assert wide == Access("tenant", EVERYWHERE, PROBE_GROUP, PROBE_RESOURCE, "list")
    assert compare([probe], [wide]) == [
        f"granted cluster-wide but only requested in {PROBE_NS}: tenant: list {PROBE_RESOURCE}.{PROBE_GROUP} "
        "cluster-wide"
    ]


def test_a_direct_target_owes_only_the_probes_of_targets_read_directly() -> None:
    read_directly, through_proxy = ("g.example.com", "things", "apps"), ("h.example.com", "gadgets", "ops")
    members = Members(
        frozenset(), frozenset(), frozenset({read_directly, through_proxy}), frozenset({read_directly})
    )
    things = Access("direct", "apps", "g.example.com", "things", "list")
    probe = Access("direct", PROBE_NS, PROBE_GROUP, PROBE_RESOURCE, "list")
    assert templated({things}, members) == ({probe}, [])
    # the other target's probe is no direct read: granted there it stays literal, and so unused
    gadgets = Access("direct", "ops", "h.example.com", "gadgets", "list")
    assert templated({things, gadgets}, members) == ({probe, gadgets}, [])
    assert compare([probe], [probe, gadgets]) == [
        "granted but never requested: direct: list gadgets.h.example.com in ops"
    ]
    # a client's probe Role still owes every probe
    _, partial = templated({replace(things, cluster="tenant")}, members)
    assert partial == [
        f"tenant: list {PROBE_RESOURCE}.{PROBE_GROUP} in {PROBE_NS}: not granted for tenant: list "
        "gadgets.h.example.com in ops"
    ]


def test_the_manifests_parse_into_grants_for_the_bot_only() -> None:
    syncer = Access("tenant", CLUSTER, "nonResourceURL", "/metrics/syncer", "get")
    assert syncer in grants("tenant", TENANT_RBAC)
    assert all(g.cluster == "control-plane" for g in grants("control-plane", CONTROL_PLANE_RBAC))
    # the probe CronJob's own identity (proxy-probe-rbac.yaml) is not the bot's: it is checked with the probe
    assert not grants("tenant", DEPLOY / "tenant-cluster" / "proxy-probe-rbac.yaml")
    # each tenant manifest binds its own identity only: a client's reader gets nothing from the direct
    # target's manifest, and the other way round
    assert grants("direct", DIRECT_RBAC)
    assert not grants("tenant", DIRECT_RBAC)
    assert not grants("direct", TENANT_RBAC)
