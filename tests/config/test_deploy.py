"""The deployment artifacts: Kubernetes manifests (schema-valid, locked down, least privilege, consistent
with the config they carry) in their two variants, `sqlite/` (one replica, the store on a volume) and
`postgres/` (several replicas on a PostgreSQL named by the Secret), each as `kubectl kustomize` builds it.
The image is tests/test_dockerfile.py's. The kit around them (monitoring,
the probe, HTTP mode, the NetworkPolicy's peers) is tests/config/test_deploy_kit.py's."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterator
from pathlib import Path

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from config.environment import SECRET_OVERRIDES
from tests.fakes.dockerfile import final_user
from tests.fakes.manifests import (
    DEPLOY,
    K8S_VERSIONS,
    Doc,
    kustomize,
    listed,
    manifests,
    shipped_settings,
)

VARIANTS = ("sqlite", "postgres")
READ_VERBS = {"get", "list", "watch"}
STORE_URL = "sqlite:////var/lib/proxybot/proxybot.db"
IMAGE = "registry.example.com/platform/proxybot:0.1.0"


def built(variant: str) -> tuple[Doc, ...]:
    """What `kubectl apply -k config/deploy/<variant>` applies."""
    return kustomize(DEPLOY / variant)


def docs_of(variant: str | None) -> list[Doc]:
    """A variant's objects as built, or (None) the objects of every file."""
    return [doc for _, doc in manifests()] if variant is None else list(built(variant))


def one(kind: str, name: str | None = None, *, variant: str | None = None) -> Doc:
    found = [d for d in docs_of(variant) if d["kind"] == kind and name in (None, d["metadata"]["name"])]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def of_kind(*kinds: str, variant: str | None = None) -> list[Doc]:
    return [doc for doc in docs_of(variant) if doc["kind"] in kinds]


def pod(variant: str) -> Doc:
    spec: Doc = one("Deployment", variant=variant)["spec"]["template"]["spec"]
    return spec


def container(variant: str) -> Doc:
    containers: list[Doc] = pod(variant)["containers"]
    assert len(containers) == 1
    return containers[0]


def secret_refs(variant: str) -> dict[str, Doc]:
    """Each key of the Secret the pod reads as a file: {name, key, optional} (waited for unless optional)."""
    volumes = {v["name"]: v for v in pod(variant)["volumes"]}
    sources = [s["secret"] for s in volumes["secrets"]["projected"]["sources"]]
    return {
        item["path"]: {"name": s["name"], "key": item["key"], "optional": bool(s.get("optional"))}
        for s in sources
        for item in s["items"]
    }


# -- schemas ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize(("where", "doc"), manifests(), ids=[where for where, _ in manifests()])
def test_manifest_is_valid_for_kubernetes(where: str, doc: Doc, version: str) -> None:
    if doc["apiVersion"].startswith("monitoring.coreos.com/"):
        return  # a CRD the validator has no schema for: test_prometheus_rule_* check it
    kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_as_built_is_valid_for_kubernetes(variant: str, version: str) -> None:
    for doc in built(variant):  # the patched Deployment is only whole here
        kubernetes_validate.validate(doc, version, strict=True)


def test_validator_rejects_an_unknown_field() -> None:
    broken = json.loads(json.dumps(one("Deployment", variant="postgres")))
    broken["spec"]["template"]["spec"]["affinity"]["podAntiAffinty"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSIONS[0], strict=True)


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_builds_the_control_plane_set_with_the_image_override(variant: str) -> None:
    names = {(d["kind"], d["metadata"]["name"]) for d in built(variant)}
    assert names == listed(DEPLOY / variant)
    assert listed(DEPLOY / "base") < names
    assert ("Secret", "proxybot-tokens") not in names  # the template holds placeholders
    assert not {kind for kind, _ in names} & {"ClusterRoleBinding", "PrometheusRule"}  # tenant side, CRD
    assert container(variant)["image"] == IMAGE


def without_variant_parts(docs: tuple[Doc, ...]) -> list[Doc]:
    """The objects minus what a variant may set: its own objects, replicas, strategy, spread, the store."""
    kept = [
        json.loads(json.dumps(d))
        for d in docs
        if d["kind"] not in ("PersistentVolumeClaim", "PodDisruptionBudget")
    ]
    for doc in kept:
        if doc["kind"] == "NetworkPolicy":  # the store's port is the postgres variant's
            doc["spec"]["egress"] = [rule for rule in doc["spec"]["egress"] if not store_port(rule)]
        if doc["kind"] != "Deployment":
            continue
        for key in ("replicas", "strategy"):
            doc["spec"].pop(key, None)
        spec = doc["spec"]["template"]["spec"]
        spec.pop("affinity", None)
        spec["volumes"] = [v for v in spec["volumes"] if v["name"] != "data"]
        for volume in spec["volumes"]:  # which Secret keys the pod waits for (the store URL) is the variant's
            if volume["name"] == "secrets":
                sources = volume["projected"]["sources"]
                keys = sorted(item["key"] for source in sources for item in source["secret"]["items"])
                volume["projected"]["sources"] = keys
        for c in spec["containers"]:
            c["volumeMounts"] = [m for m in c["volumeMounts"] if m["name"] != "data"]
            c["env"] = sorted(c["env"], key=lambda e: str(e["name"]))
    return sorted(kept, key=lambda d: (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]))


def store_port(rule: Doc) -> bool:
    return {"protocol": "TCP", "port": 5432} in rule.get("ports", [])


def test_the_variants_differ_only_in_replicas_strategy_spread_and_store() -> None:
    assert without_variant_parts(built("sqlite")) == without_variant_parts(built("postgres"))


# -- the Deployment --------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_pod_runs_as_non_root_with_a_locked_down_container(variant: str) -> None:
    spec, c = pod(variant), container(variant)
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] == int(final_user()[0])
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = c["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["runAsNonRoot"] is True
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert set(c["resources"]) == {"requests", "limits"}
    assert c["resources"]["limits"]["memory"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_probes_ask_healthz_and_readyz_on_the_served_port(variant: str) -> None:
    c = container(variant)
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    port = next(p for p in c["ports"] if p["name"] == c["livenessProbe"]["httpGet"]["port"])
    assert c["args"][c["args"].index("--port") + 1] == str(port["containerPort"])
    assert c["args"][0] == "serve"  # after the image's ENTRYPOINT: `proxybot serve`


def test_sqlite_variant_keeps_one_replica_and_its_store_on_the_persistent_volume(tmp_path: Path) -> None:
    settings = shipped_settings(tmp_path)
    assert settings.store.url.get_secret_value() == STORE_URL
    assert settings.server.host == "0.0.0.0"  # noqa: S104 (in a pod, loopback is unreachable)
    mounts = {m["name"]: m["mountPath"] for m in container("sqlite")["volumeMounts"]}
    volumes = {v["name"]: v for v in pod("sqlite")["volumes"]}
    store_dir = posixpath.dirname(STORE_URL.removeprefix("sqlite:///"))
    data = next(name for name, path in mounts.items() if path == store_dir)
    claim = volumes[data]["persistentVolumeClaim"]["claimName"]
    assert one("PersistentVolumeClaim", claim, variant="sqlite")["spec"]["accessModes"] == ["ReadWriteOnce"]
    deployment = one("Deployment", variant="sqlite")["spec"]
    assert (deployment["replicas"], deployment["strategy"]) == (1, {"type": "Recreate"})  # one SQLite writer
    assert "emptyDir" in volumes[next(n for n, p in mounts.items() if p == "/tmp")]
    assert not of_kind("PodDisruptionBudget", variant="sqlite")  # minAvailable 1 of 1 would block every drain


def test_postgres_variant_runs_two_replicas_apart_on_the_secrets_store(tmp_path: Path) -> None:
    deployment = one("Deployment", variant="postgres")["spec"]
    assert deployment["replicas"] == 2
    assert deployment["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    labels = deployment["template"]["metadata"]["labels"]
    (preferred,) = pod("postgres")["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    term = preferred["podAffinityTerm"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= labels.items()
    budget = one("PodDisruptionBudget", variant="postgres")["spec"]
    assert budget["selector"] == deployment["selector"]
    assert budget["minAvailable"] == 1 < deployment["replicas"]  # a drain may take one, never both
    assert not of_kind("PersistentVolumeClaim", variant="postgres")
    assert not [v for v in pod("postgres")["volumes"] if "persistentVolumeClaim" in v]
    store_dir = posixpath.dirname(STORE_URL.removeprefix("sqlite:///"))
    assert store_dir not in {m["mountPath"] for m in container("postgres")["volumeMounts"]}
    ref = secret_refs("postgres")["PROXYBOT_STORE_URL"]
    assert ref == {"name": "proxybot-tokens", "key": "PROXYBOT_STORE_URL", "optional": False}
    url = "postgresql://proxybot:s3cret@db.example.internal:5432/proxybot?sslmode=require"
    settings = shipped_settings(tmp_path, {"PROXYBOT_STORE_URL": url})  # the Secret's key replaces store.url
    assert (settings.store.url.get_secret_value(), settings.store.sqlite_path) == (url, None)


@pytest.mark.parametrize("variant", VARIANTS)
def test_config_and_kubeconfigs_share_the_directory_the_pod_reads(variant: str, tmp_path: Path) -> None:
    c = container(variant)
    config_dir = posixpath.dirname(next(e["value"] for e in c["env"] if e["name"] == "PROXYBOT_CONFIG"))
    volumes = {v["name"]: v for v in pod(variant)["volumes"]}
    (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == config_dir]
    sources = volumes[mount["name"]]["projected"]["sources"]
    assert {"configMap": {"name": "proxybot-config"}} in sources
    assert {"secret": {"name": "proxybot-kubeconfigs"}} in sources
    assert not [m for m in c["volumeMounts"] if m["mountPath"].startswith(config_dir + "/")]
    settings = shipped_settings(tmp_path)  # loads with serve's rules, given the Secret's values
    in_config_map = set(one("ConfigMap", "proxybot-config", variant=variant)["data"])
    for cluster in settings.clusters:
        assert cluster.kubeconfig.parent == tmp_path  # a file of the kubeconfigs Secret, beside the config
        planes = [cluster.control_plane, *(t.control_plane for t in cluster.targets)]
        assert all(p.kubeconfig.name in in_config_map for p in planes if p is not None)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_secret_is_a_file_of_the_tokens_secret(variant: str) -> None:
    assert all("valueFrom" not in e for e in container(variant)["env"])  # never in the environment
    refs = secret_refs(variant)
    assert set(refs) == set(SECRET_OVERRIDES)
    assert all(ref["name"] == "proxybot-tokens" and ref["key"] == name for name, ref in refs.items())
    template = set(one("Secret", "proxybot-tokens")["stringData"])
    assert template <= set(SECRET_OVERRIDES)
    required = {"PROXYBOT_SLACK_BOT_TOKEN", "PROXYBOT_SLACK_SIGNING_SECRET", "PROXYBOT_SLACK_APP_TOKEN"}
    assert template >= required | {"PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN"}
    assert not refs["PROXYBOT_SLACK_BOT_TOKEN"]["optional"]
    # Only the PostgreSQL variant needs the store URL: without it, its pods must not start at all.
    assert refs["PROXYBOT_STORE_URL"]["optional"] is (variant == "sqlite")


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
        ("networking.k8s.io", "networkpolicies", ("list",)),
        ("", "pods", ("list",)),  # the verdict: the target's control-plane pods Ready or not
        ("apps", "statefulsets", ("get",)),  # the vCluster version from the StatefulSet's image
    }
    assert not [
        b for b in of_kind("ClusterRoleBinding") if b["roleRef"]["name"].endswith("control-plane-reader")
    ]


def test_cronjob_and_log_reads_are_bound_in_each_clients_namespace_only(tmp_path: Path) -> None:
    settings = shipped_settings(tmp_path)
    clients = {c.control_plane_namespace for c in settings.clusters if c.control_plane is not None}
    targets = {t.control_plane_namespace for c in settings.clusters for t in c.targets if t.control_plane}
    assert clients
    assert targets
    bindings = [b for b in of_kind("RoleBinding") if b["roleRef"]["name"] == "proxybot-control-plane-client"]
    assert {b["metadata"]["namespace"] for b in bindings} == clients
    assert not {b["metadata"]["namespace"] for b in bindings} & targets
    for binding in bindings:
        assert binding["roleRef"]["kind"] == "ClusterRole"
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "proxybot", "namespace": "proxybot"}
        ]
    rules = one("ClusterRole", "proxybot-control-plane-client")["rules"]
    granted = {
        (g, r, v, tuple(rule.get("resourceNames", ())))
        for rule in rules
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    assert granted == {("batch", "cronjobs", "get", ("proxy-probe",)), ("", "pods/log", "get", ())}
    assert not [
        b for b in of_kind("ClusterRoleBinding") if b["roleRef"]["name"] == "proxybot-control-plane-client"
    ]
    for variant in VARIANTS:
        assert ("ClusterRole", "proxybot-control-plane-client") in {
            (d["kind"], d["metadata"]["name"]) for d in built(variant)
        }


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
    assert ("apiregistration.k8s.io", "apiservices", "list") in granted  # the orphans
    assert not [r for r in rules if set(r.get("apiGroups", [])) - {"apiregistration.k8s.io"}]
    # The probe lists one resource in one namespace: a Role there, never cluster-wide.
    role = one("Role", "proxybot-tenant-probe")
    probes = {
        (target.probe.namespace, target.probe.group_version.rpartition("/")[0], target.probe.resource)
        for cluster in shipped_settings(tmp_path).clusters
        for target in cluster.targets
    }
    assert {
        (role["metadata"]["namespace"], group, resource, tuple(rule["verbs"]))
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    } == {(namespace, group, resource, ("list",)) for namespace, group, resource in probes}
    binding = one("RoleBinding", "proxybot-tenant-probe")
    assert binding["metadata"]["namespace"] == role["metadata"]["namespace"]
    assert binding["roleRef"]["kind"] == "Role"


def test_tenant_services_are_read_in_kube_system_only() -> None:
    # The Service an APIService names: `get` in kube-system, never cluster-wide.
    cluster_rules = one("ClusterRole", "proxybot-tenant-reader")["rules"]
    assert not [r for r in cluster_rules if "services" in r.get("resources", [])]
    role = one("Role", "proxybot-tenant-reader")
    assert role["metadata"]["namespace"] == "kube-system"
    assert role["rules"] == [{"apiGroups": [""], "resources": ["services"], "verbs": ["get"]}]
    binding = one("RoleBinding", "proxybot-tenant-reader")
    assert binding["metadata"]["namespace"] == "kube-system"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "proxybot-reader", "namespace": "default"}
    ]


def tenant_file(name: str) -> list[Doc]:
    return [doc for where, doc in manifests() if where.startswith(f"tenant-cluster/{name}#")]


def test_a_direct_target_gets_its_own_reader_with_only_the_probe_lists(tmp_path: Path) -> None:
    # `path` sends a direct target the probe request and nothing else: a Role per probe namespace, nothing
    # cluster-wide, and an account of its own whose names differ from rbac.yaml's (a tenant cluster that is
    # both a client and a direct target takes both files).
    docs = tenant_file("direct-target-rbac.yaml")
    assert {d["kind"] for d in docs} == {"ServiceAccount", "Secret", "Role", "RoleBinding"}
    (account,) = [d["metadata"] for d in docs if d["kind"] == "ServiceAccount"]
    subject = {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    (secret,) = [d for d in docs if d["kind"] == "Secret"]
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["namespace"] == account["namespace"]
    assert secret["metadata"]["annotations"]["kubernetes.io/service-account.name"] == account["name"]
    roles = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in docs if d["kind"] == "Role"}
    for binding in (d for d in docs if d["kind"] == "RoleBinding"):
        assert binding["roleRef"]["kind"] == "Role"
        assert (binding["metadata"]["namespace"], binding["roleRef"]["name"]) in roles
        assert binding["subjects"] == [subject]
    probes = {
        (t.probe.namespace, t.probe.group_version.rpartition("/")[0], t.probe.resource)
        for cluster in shipped_settings(tmp_path).clusters
        for t in cluster.targets
        if t.direct is not None
    }
    assert probes
    assert {
        (namespace, group, resource, tuple(rule["verbs"]))
        for (namespace, _), role in roles.items()
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    } == {(namespace, group, resource, ("list",)) for namespace, group, resource in probes}
    client = tenant_file("rbac.yaml")
    named = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs}
    assert not named & {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in client}
    assert subject not in [s for d in client if d["kind"].endswith("Binding") for s in d["subjects"]]
