"""The deployment artifacts: Kubernetes manifests (schema-valid, locked down, least privilege, consistent
with the config they carry), the PrometheusRule (the shipped rules, unchanged) and the Dockerfile (checked
without a Docker engine by a small parser)."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import posixpath
import re
import shlex
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from config.loader import SECRET_OVERRIDES, parse_config
from config.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "config" / "deploy"
RULES = ROOT / "config" / "rules" / "proxy-alerts.yaml"
# The oldest Kubernetes release we support and the newest the validator knows.
K8S_VERSIONS = ("1.30.0", kubernetes_validate.utils.latest_version() + ".0")
READ_VERBS = {"get", "list", "watch"}
STORE_URL = "sqlite:////var/lib/proxybot/proxybot.db"

Doc = dict[str, Any]


def manifests() -> list[tuple[str, Doc]]:
    """Every Kubernetes object under config/deploy, named `file#index`; kustomization.yaml is not one."""
    found = []
    for path in sorted(DEPLOY.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
        found += [(f"{path.relative_to(DEPLOY)}#{index}", doc) for index, doc in enumerate(docs)]
    return found


def one(kind: str, name: str | None = None) -> Doc:
    matches = [d for _, d in manifests() if d["kind"] == kind and name in (None, d["metadata"]["name"])]
    assert len(matches) == 1, f"expected one {kind} {name or ''}, found {len(matches)}"
    return matches[0]


def of_kind(*kinds: str) -> list[Doc]:
    return [doc for _, doc in manifests() if doc["kind"] in kinds]


def container() -> Doc:
    containers: list[Doc] = one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def shipped_settings(tmp_path: Path) -> Settings:
    """The ConfigMap's config as `proxybot serve` would load it in the pod, kubeconfigs stubbed in tmp."""
    data = one("ConfigMap", "proxybot-config")["data"]
    (tmp_path / "in-cluster.kubeconfig.yaml").write_text(data["in-cluster.kubeconfig.yaml"])
    config = yaml.safe_load(data["proxybot.yaml"])
    for cluster in config["clusters"]:
        for access in [cluster, *(t["direct"] for t in cluster["targets"] if "direct" in t)]:
            kubeconfig = tmp_path / access["kubeconfig"]
            kubeconfig.parent.mkdir(parents=True, exist_ok=True)
            kubeconfig.write_text("apiVersion: v1\nkind: Config\ncontexts: []\n")
    env = {"PROXYBOT_SLACK_BOT_TOKEN": "xoxb-1-2-realish", "PROXYBOT_SLACK_SIGNING_SECRET": "a1b2c3d4"}
    env["PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN"] = "f00dfeed"
    return parse_config(data["proxybot.yaml"], base_dir=tmp_path, env=env, purpose="serve").settings


# -- schemas ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize(("where", "doc"), manifests(), ids=[where for where, _ in manifests()])
def test_manifest_is_valid_for_kubernetes(where: str, doc: Doc, version: str) -> None:
    if doc["apiVersion"].startswith("monitoring.coreos.com/"):
        return  # a CRD the validator has no schema for: test_prometheus_rule_* check it
    kubernetes_validate.validate(doc, version, strict=True)


def test_validator_rejects_an_unknown_field() -> None:
    broken = json.loads(json.dumps(one("Deployment")))
    broken["spec"]["template"]["spec"]["containers"][0]["securityContxt"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSIONS[0], strict=True)


def test_kustomization_builds_the_control_plane_set_with_the_image_override() -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("kubectl is not on PATH")
    out = subprocess.run([kubectl, "kustomize", str(DEPLOY)], capture_output=True, text=True, check=True)
    built = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(out.stdout)}
    listed = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"]
    expected = set()
    for name in listed:
        expected |= {
            (d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all((DEPLOY / name).read_text())
        }
    assert built == expected
    assert ("Secret", "proxybot-tokens") not in built  # the template holds placeholders
    assert not {kind for kind, _ in built} & {"ClusterRoleBinding", "PrometheusRule"}  # tenant side, CRD
    assert "image: registry.example.com/platform/proxybot:0.1.0" in out.stdout


# -- the PrometheusRule ----------------------------------------------------------------------------


def test_prometheus_rule_has_the_operator_shape() -> None:
    rule = one("PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(rule) == {"apiVersion", "kind", "metadata", "spec"}
    assert rule["metadata"]["name"]
    assert rule["metadata"]["namespace"]
    assert set(rule["spec"]) == {"groups"}
    for group in rule["spec"]["groups"]:
        assert group["name"]
        assert group["rules"]
        for entry in group["rules"]:
            assert set(entry) <= {"alert", "expr", "for", "labels", "annotations"}
            assert entry["alert"].startswith("ResourceProxy")
            assert entry["expr"]


def test_prometheus_rule_is_the_shipped_rule_file() -> None:
    assert one("PrometheusRule")["spec"] == yaml.safe_load(RULES.read_text())


# -- the Deployment --------------------------------------------------------------------------------


def test_pod_runs_as_non_root_with_a_locked_down_container() -> None:
    pod = one("Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == int(final_user()[0])
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container()["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["runAsNonRoot"] is True
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert set(container()["resources"]) == {"requests", "limits"}
    assert container()["resources"]["limits"]["memory"]


def test_probes_ask_healthz_and_readyz_on_the_served_port() -> None:
    c = container()
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    port = next(p for p in c["ports"] if p["name"] == c["livenessProbe"]["httpGet"]["port"])
    assert c["args"][c["args"].index("--port") + 1] == str(port["containerPort"])
    assert c["args"][0] == "serve"  # after the image's ENTRYPOINT: `proxybot serve`


def test_store_lives_on_the_persistent_volume(tmp_path: Path) -> None:
    settings = shipped_settings(tmp_path)
    assert settings.store.url.get_secret_value() == STORE_URL
    assert settings.server.host == "0.0.0.0"  # noqa: S104 (in a pod, loopback is unreachable)
    mounts = {m["name"]: m["mountPath"] for m in container()["volumeMounts"]}
    volumes = {v["name"]: v for v in one("Deployment")["spec"]["template"]["spec"]["volumes"]}
    store_dir = posixpath.dirname(STORE_URL.removeprefix("sqlite:///"))
    data = next(name for name, path in mounts.items() if path == store_dir)
    claim = volumes[data]["persistentVolumeClaim"]["claimName"]
    assert one("PersistentVolumeClaim", claim)["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert one("Deployment")["spec"]["strategy"]["type"] == "Recreate"  # never two writers on SQLite
    assert "emptyDir" in volumes[next(n for n, p in mounts.items() if p == "/tmp")]


def test_config_and_kubeconfigs_share_the_directory_the_pod_reads(tmp_path: Path) -> None:
    config_dir = posixpath.dirname(
        next(e["value"] for e in container()["env"] if e["name"] == "PROXYBOT_CONFIG")
    )
    volumes = {v["name"]: v for v in one("Deployment")["spec"]["template"]["spec"]["volumes"]}
    (mount,) = [m for m in container()["volumeMounts"] if m["mountPath"] == config_dir]
    sources = volumes[mount["name"]]["projected"]["sources"]
    assert {"configMap": {"name": "proxybot-config"}} in sources
    assert {"secret": {"name": "proxybot-kubeconfigs"}} in sources
    assert not [m for m in container()["volumeMounts"] if m["mountPath"].startswith(config_dir + "/")]
    settings = shipped_settings(tmp_path)  # loads with serve's rules, given the Secret's values
    in_config_map = set(one("ConfigMap", "proxybot-config")["data"])
    for cluster in settings.clusters:
        assert cluster.kubeconfig.parent == tmp_path  # a file of the kubeconfigs Secret, beside the config
        planes = [cluster.control_plane, *(t.control_plane for t in cluster.targets)]
        assert all(p.kubeconfig.name in in_config_map for p in planes if p is not None)


def test_every_environment_secret_comes_from_the_tokens_secret() -> None:
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container()["env"] if "valueFrom" in e}
    assert set(refs) == set(SECRET_OVERRIDES)
    assert all(ref["name"] == "proxybot-tokens" and ref["key"] == name for name, ref in refs.items())
    template = set(one("Secret", "proxybot-tokens")["stringData"])
    assert template <= set(SECRET_OVERRIDES)
    required = {"PROXYBOT_SLACK_BOT_TOKEN", "PROXYBOT_SLACK_SIGNING_SECRET", "PROXYBOT_SLACK_APP_TOKEN"}
    assert template >= required | {"PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN"}
    assert not refs["PROXYBOT_SLACK_BOT_TOKEN"].get("optional", False)


# -- RBAC ------------------------------------------------------------------------------------------


def rbac_rules() -> Iterator[tuple[str, Doc]]:
    for doc in of_kind("Role", "ClusterRole"):
        for rule in doc["rules"]:
            yield doc["metadata"]["name"], rule


def test_rbac_grants_only_read_verbs_and_no_wildcards() -> None:
    rules = list(rbac_rules())
    assert rules
    for role, rule in rules:
        assert set(rule["verbs"]) <= READ_VERBS, f"{role}: {rule['verbs']}"
        for key in ("verbs", "apiGroups", "resources", "nonResourceURLs"):
            assert "*" not in rule.get(key, []), f"{role}: wildcard in {key}"


def test_control_plane_reads_are_bound_in_each_configured_namespace_only(tmp_path: Path) -> None:
    settings = shipped_settings(tmp_path)
    planes = [c.control_plane for c in settings.clusters] + [
        t.control_plane for c in settings.clusters for t in c.targets
    ]
    wanted = {plane.namespace for plane in planes if plane is not None}
    bindings = [b for b in of_kind("RoleBinding") if b["roleRef"]["name"] == "proxybot-control-plane-reader"]
    assert {b["metadata"]["namespace"] for b in bindings} == wanted
    for binding in bindings:
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "proxybot", "namespace": "proxybot"}
        ]
    rules = one("ClusterRole", "proxybot-control-plane-reader")["rules"]
    assert {(r["apiGroups"][0], r["resources"][0], tuple(r["verbs"])) for r in rules} == {
        ("batch", "cronjobs", ("get",)),
        ("networking.k8s.io", "networkpolicies", ("list",)),
    }
    assert not [
        b for b in of_kind("ClusterRoleBinding") if b["roleRef"]["name"].endswith("control-plane-reader")
    ]


def test_tenant_role_covers_syncer_metrics_every_probe_and_apiservices(tmp_path: Path) -> None:
    rules = one("ClusterRole", "proxybot-tenant-reader")["rules"]
    assert {"nonResourceURLs": ["/metrics/syncer"], "verbs": ["get"]} in rules
    granted = {
        (group, resource, verb)
        for r in rules
        for group in r.get("apiGroups", [])
        for resource in r["resources"]
        for verb in r["verbs"]
    }
    assert ("apiregistration.k8s.io", "apiservices", "get") in granted
    for cluster in shipped_settings(tmp_path).clusters:
        for target in cluster.targets:
            group = target.probe.group_version.rpartition("/")[0]
            assert (group, target.probe.resource, "list") in granted, target.name


# -- the Dockerfile --------------------------------------------------------------------------------


@dataclass
class Stage:
    """One `FROM` and the instructions under it."""

    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]


def logical_lines(text: str) -> Iterator[str]:
    """Instructions with `\\` continuations joined; comments and blank lines dropped, as Docker does."""
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield pending + line
        pending = ""
    assert not pending, "the Dockerfile ends inside a continuation"


def parse_dockerfile(text: str) -> list[Stage]:
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical_lines(text):
        keyword, _, rest = line.partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "ARG" and not stages:
            name, _, default = rest.partition("=")
            args[name] = default
        elif keyword == "FROM":
            base = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args[m.group(1) or m.group(2)], rest.split()[0])
            words = rest.split()
            stages.append(Stage(base, words[2] if len(words) == 3 and words[1].upper() == "AS" else None))
        else:
            assert stages, f"{keyword} before the first FROM"
            stages[-1].instructions.append((keyword, rest))
    return stages


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list), args
    return [str(word) for word in value]


def stages() -> list[Stage]:
    return parse_dockerfile((ROOT / "Dockerfile").read_text())


def final_user() -> tuple[str, str]:
    user = stages()[-1].all("USER")
    assert user, "the final stage sets no USER: it would run as root"
    uid, _, gid = user[-1].partition(":")
    return uid, gid


def test_parser_understands_continuations_and_stages() -> None:
    parsed = parse_dockerfile("ARG B=x:1\n# c\nFROM ${B} AS one\nRUN a \\\n  && b\nFROM one\nUSER 7\n")
    assert [(s.base, s.name) for s in parsed] == [("x:1", "one"), ("one", None)]
    assert parsed[0].all("RUN") == ["a  && b"]
    assert parsed[1].all("USER") == ["7"]


def test_dockerfile_is_multi_stage_and_slim() -> None:
    parsed = stages()
    assert len(parsed) >= 2
    build_names = {stage.name for stage in parsed[:-1]}
    final = parsed[-1]
    assert "slim" in final.base
    assert final.base not in build_names
    copied_from = {m.group(1) for c in final.all("COPY") if (m := re.search(r"--from=(\S+)", c))}
    assert copied_from
    assert copied_from <= build_names


def test_final_stage_runs_as_a_numeric_non_root_user() -> None:
    uid, gid = final_user()
    assert uid.isdigit()
    assert int(uid) != 0
    assert not gid or (gid.isdigit() and int(gid) != 0)


BUILD_TOOLS = {"gcc", "g++", "cc", "clang", "make", "build-essential", "python3-dev", "cargo", "rustc"}


def test_final_stage_installs_no_build_tools() -> None:
    for run in stages()[-1].all("RUN"):
        words = set(shlex.split(run))
        assert not words & BUILD_TOOLS, run
        assert "pip" not in run, f"the final stage installs packages: {run}"
        assert "apt-get" not in run, f"the final stage installs packages: {run}"


def test_healthcheck_asks_healthz() -> None:
    (check,) = stages()[-1].all("HEALTHCHECK")
    command = check[check.index("CMD") + len("CMD") :].strip()
    assert "/healthz" in " ".join(exec_form(command))


def test_entrypoint_runs_proxybot_serve_from_the_package() -> None:
    final = stages()[-1]
    argv = exec_form(final.all("ENTRYPOINT")[-1]) + exec_form(final.all("CMD")[-1])
    assert posixpath.basename(argv[0]) == "proxybot"
    assert argv[1] == "serve"
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, function = scripts["proxybot"].partition(":")
    assert callable(getattr(importlib.import_module(module), function))
    (installed,) = importlib.metadata.entry_points(group="console_scripts", name="proxybot")
    assert installed.value == scripts["proxybot"]


def test_dependencies_are_installed_with_the_lock_as_constraints() -> None:
    build = stages()[0]
    assert any("requirements.lock" in shlex.split(copy) for copy in build.all("COPY"))
    installs = [run for run in build.all("RUN") if "pip install" in run]
    assert any(re.search(r"(--constraint|-c)[ =]requirements\.lock", run) for run in installs), installs


def test_build_copies_every_package_and_what_the_metadata_needs() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    sources = {src for copy in stages()[0].all("COPY") for src in shlex.split(copy)[:-1]}
    assert {*packages, project["project"]["readme"], "pyproject.toml"} <= {s.strip("./") for s in sources}
    ignored = {p for p in (ROOT / ".dockerignore").read_text().splitlines() if p and not p.startswith("#")}
    for source in sources:
        assert (ROOT / source).exists(), source
        assert source.strip("./") not in ignored, f"{source} is excluded by .dockerignore"
