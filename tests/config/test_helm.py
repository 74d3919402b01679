"""The Helm chart (config/helm/proxybot), rendered and linted by real Helm: Helm v4's Go SDK, bundled by the
helm-python-sdk package. A matrix of values renders objects valid for Kubernetes; bad values fail naming the
key; the Deployment runs what `proxybot serve` reads; the RBAC follows the config as the code's requests
need (tests/config/test_rbac_code.py's comparison); and the kustomize kit under config/deploy/ and the
schema of `config` are what the chart and the settings models generate (scripts/helm_chart.py)."""

from __future__ import annotations

import functools
import io
import json
import posixpath
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml
from helm_python.chart import lint
from helm_python.errors import HelmError

from bot.app import Deps, create_app
from bot.cli.console import Console
from bot.cli.main import build_parser
from bot.store import open_store
from config.environment import CONFIG_ENV, SECRET_OVERRIDES, SECRETS_DIR_ENV
from config.loader import parse_config
from config.platform import ACCESS_KEY_ENV
from config.settings import Settings
from scripts import helm_chart
from scripts.helm_chart import CHART, RELEASE, Values, by_hand_values, docs, example_values, merged, render
from tests.config.test_deploy_kit import allows
from tests.config.test_rbac_code import Members, grants, members_of, probes_of, templated
from tests.fakes.config_data import KUBECONFIG
from tests.fakes.manifests import DEPLOY, K8S_VERSIONS, ROOT

Doc = dict[str, Any]
MONITORING_API = "monitoring.coreos.com/v1"
RECEIVER = ROOT / "config" / "alertmanager" / "receiver.yaml"
RULES = ROOT / "config" / "rules"
# Helm's lint says this of every chart without an icon (an info, not a warning): proxybot has no logo.
ICON = {"severity": 1, "path": "Chart.yaml", "error": "icon is recommended"}

# The least an operator sets: the two Secrets and a config with one cluster (the chart's defaults for the
# rest).
MINIMAL: Values = {
    "existingSecret": "tokens",
    "kubeconfigSecret": "kubeconfigs",
    "config": {
        "slack": {"default_channel": "#alerts"},
        "alertmanager": {"url": "http://alertmanager-operated.monitoring.svc:9093"},
        "clusters": [
            {
                "name": "prod",
                "kubeconfig": "prod.kubeconfig.yaml",
                "match": {"cluster": "prod"},
                "targets": [
                    {
                        "name": "payments/ledger",
                        "group_versions": ["ledger.example.com/v1"],
                        "probe": {"group_version": "ledger.example.com/v1", "resource": "accounts"},
                    }
                ],
            }
        ],
    },
}
POSTGRES_URL = "postgresql://proxybot@db.example.internal:5432/proxybot?sslmode=require"
# The clients listed by hand (the values the kit in config/deploy/ is rendered with).
BY_HAND = by_hand_values()
# The platform way, least: the platform's URL, the key in existingSecret, the Slack app; no kubeconfigSecret,
# no clusters, no CA (a publicly trusted certificate).
PLATFORM_MINIMAL: Values = {
    "existingSecret": "tokens",
    "config": {
        "slack": {"default_channel": "#alerts"},
        "alertmanager": {"url": "http://alertmanager-operated.monitoring.svc:9093"},
        "platform": {"url": "https://platform.example.com"},
    },
}
MATRIX: dict[str, Values] = {
    "defaults": MINIMAL,
    "example": BY_HAND,
    "platform": example_values(),
    "platform-minimal": PLATFORM_MINIMAL,
    # The platform's clients, and one listed by hand beside them, with its kubeconfig.
    "platform-and-by-hand": merged(
        MINIMAL, {"config": {"platform": {"url": "https://platform.example.com:8443", "projects": ["shop"]}}}
    ),
    "platform-postgres": merged(example_values(), {"replicaCount": 2, "storeUrlFromSecret": True}),
    "postgres-secret": merged(BY_HAND, {"replicaCount": 2, "storeUrlFromSecret": True}),
    "postgres-url": merged(MINIMAL, {"replicaCount": 3, "config": {"store": {"url": POSTGRES_URL}}}),
    "socket-mode": merged(BY_HAND, {"socketMode": True}),
    "ingress": merged(BY_HAND, {"ingress": {"enabled": True}}),
    "monitoring": merged(
        BY_HAND,
        {
            "serviceMonitor": {"enabled": True},
            "prometheusRule": {"enabled": True},
            "probe": {"enabled": True},
        },
    ),
    "existing-configmap": merged(MINIMAL, {"existingConfigMap": "my-proxybot-config"}),
    "chart-secret": merged(
        MINIMAL,
        {"existingSecret": "", "secret": {"create": True, "values": {"PROXYBOT_SLACK_BOT_TOKEN": "x"}}},
    ),
}
# The Prometheus Operator's CRDs, offered by the cluster where monitoring is on.
API_VERSIONS = {
    "monitoring": (MONITORING_API, f"{MONITORING_API}/ServiceMonitor", f"{MONITORING_API}/PrometheusRule")
}


@functools.cache
def rendered(case: str, kube_version: str | None = None) -> dict[str, str]:
    return render(MATRIX[case], api_versions=API_VERSIONS.get(case, ()), kube_version=kube_version)


def objects(case: str) -> list[Doc]:
    return docs(rendered(case))


def of_kind(case: str, kind: str) -> list[Doc]:
    return [d for d in objects(case) if d["kind"] == kind]


def one(case: str, kind: str) -> Doc:
    (found,) = of_kind(case, kind)
    return found


def pod_spec(case: str) -> Doc:
    spec: Doc = one(case, "Deployment")["spec"]["template"]["spec"]
    return spec


def container(case: str) -> Doc:
    (found,) = pod_spec(case)["containers"]
    return dict(found)


def refused(values: Values) -> str:
    """The message Helm fails with, rendering `values`."""
    with pytest.raises(HelmError) as caught:
        render(values)
    return str(caught.value)


# -- the chart -------------------------------------------------------------------------------------------


def test_chart_is_v2_at_proxybots_version_for_the_kubernetes_we_validate() -> None:
    metadata = yaml.safe_load((CHART / "Chart.yaml").read_text())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert (metadata["apiVersion"], metadata["name"], metadata["appVersion"]) == ("v2", "proxybot", version)
    assert metadata["kubeVersion"] == f">={K8S_VERSIONS[0]}-0"
    assert container("defaults")["image"] == f"{MINIMAL_IMAGE}:{version}"  # the tag defaults to appVersion


MINIMAL_IMAGE = yaml.safe_load((CHART / "values.yaml").read_text())["image"]["repository"]


@pytest.mark.parametrize("case", MATRIX)
def test_lint_strict_finds_nothing_but_the_missing_icon(case: str) -> None:
    report = lint(CHART, MATRIX[case], strict=True, namespace="proxybot")
    assert report["errors"] == []
    assert [m for m in report["messages"] if m != ICON] == []


def test_lint_reports_a_broken_value() -> None:
    report = lint(CHART, merged(MINIMAL, {"replicaCount": "two"}), strict=True)
    assert any("replicaCount" in str(m["error"]) for m in report["messages"])


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("case", MATRIX)
def test_every_rendered_object_is_valid_for_kubernetes(case: str, version: str) -> None:
    found = docs(rendered(case, f"v{version}"))  # rendered for that cluster, as `helm install` there would
    assert found
    for doc in found:
        if doc["apiVersion"] == MONITORING_API:
            continue  # a CRD the validator has no schema for: test_deploy_kit checks the kit's (this render)
        kubernetes_validate.validate(doc, version, strict=True)


def test_the_matrix_renders_what_each_case_asks_for() -> None:
    kinds = {case: {d["kind"] for d in objects(case)} for case in MATRIX}
    assert "PersistentVolumeClaim" in kinds["defaults"]
    assert "PodDisruptionBudget" not in kinds["defaults"]
    assert not {"Ingress", "ServiceMonitor", "PrometheusRule", "CronJob", "Secret"} & kinds["defaults"]
    for case in ("postgres-secret", "postgres-url"):
        assert "PodDisruptionBudget" in kinds[case]
        assert "PersistentVolumeClaim" not in kinds[case]
    assert "Ingress" in kinds["ingress"]
    assert {"ServiceMonitor", "PrometheusRule", "CronJob"} <= kinds["monitoring"]
    assert "ConfigMap" not in kinds["existing-configmap"]
    assert "Secret" in kinds["chart-secret"]


# -- bad values fail, naming the key ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"replicas": 2}, "at '': additional properties 'replicas' not allowed"),  # replicaCount's typo
        ({"replicaCount": "two"}, "at '/replicaCount': got string, want integer"),
        ({"image": {"tag": 1}}, "at '/image/tag': got number, want string"),
        ({"ingress": {"enabeld": True}}, "at '/ingress': additional properties 'enabeld' not allowed"),
        # a config key proxybot does not know, and one of the wrong type
        ({"config": {"slack": {"channel": "#x"}}}, "at '/config/slack': additional properties 'channel'"),
        ({"config": {"server": {"port": "http"}}}, "at '/config/server/port': got string, want integer"),
        # secrets never go into the ConfigMap
        ({"config": {"slack": {"bot_token": "xoxb-1-2"}}}, "additional properties 'bot_token' not allowed"),
        ({"config": {"alertmanager": {"webhook_token": "t"}}}, "'webhook_token' not allowed"),
    ],
)
def test_the_schema_refuses_a_value_naming_its_key(change: Values, named: str) -> None:
    message = refused(merged(MINIMAL, change))
    assert named in message


def test_the_schema_takes_every_key_of_the_example_config() -> None:
    # config/proxybot.example.yaml explains every key; without its secrets it is a valid `config` value.
    example = yaml.safe_load((ROOT / "config" / "proxybot.example.yaml").read_text())
    for section, key in helm_chart.CONFIG_SECRETS:
        example.get(section, {}).pop(key, None)
    values = merged(MINIMAL, {"config": example})
    assert yaml.safe_load(render(values)["proxybot/templates/configmap.yaml"])["data"]["proxybot.yaml"]


def test_two_replicas_on_sqlite_fail_naming_replica_count_and_the_way_out() -> None:
    message = refused(merged(MINIMAL, {"replicaCount": 2}))
    assert "replicaCount" in message
    assert "storeUrlFromSecret" in message
    assert "postgresql://" in message


def test_a_missing_existing_secret_fails_unless_the_chart_is_asked_to_create_it() -> None:
    values = merged(MINIMAL, {"existingSecret": ""})
    assert "existingSecret: required" in refused(values)
    both = merged(MINIMAL, {"secret": {"create": True}})
    assert "not both" in refused(both)


def test_other_values_the_schema_cannot_judge_fail_naming_theirs() -> None:
    password = "postgresql://proxybot:s3cret@db:5432/proxybot"
    message = refused(merged(MINIMAL, {"config": {"store": {"url": password}}}))
    assert "config.store.url" in message
    assert "s3cret" not in message
    assert "kubeconfigSecret" in refused(merged(MINIMAL, {"kubeconfigSecret": ""}))
    socket_ingress = merged(MINIMAL, {"socketMode": True, "ingress": {"enabled": True}})
    assert "ingress.enabled" in refused(socket_ingress)


def test_every_key_of_values_yaml_is_in_the_schema_and_documented() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    lines = (CHART / "values.yaml").read_text().splitlines()

    def walk(node: Values, properties: Doc, path: str) -> Iterator[str]:
        for key, value in node.items():
            assert key in properties, f"{path}{key} is not in values.schema.json"
            nested = properties[key].get("properties")
            if isinstance(value, dict) and nested is not None and path != "config.":
                yield from walk(value, nested, f"{path}{key}.")
            yield key

    assert set(walk(values, schema["properties"], "")) >= set(values)
    for key in values:  # a comment says what each top-level key is, above it or above its first child
        index = next(i for i, line in enumerate(lines) if line.startswith(f"{key}:"))
        near = [lines[index - 1], *lines[index + 1 : index + 2]]
        assert any(line.lstrip().startswith("#") for line in near), f"values.yaml: {key} has no comment"


# -- one source: what is generated is what is committed -----------------------------------------------------


def test_the_schema_of_config_is_the_settings_models() -> None:
    committed = json.loads((CHART / "values.schema.json").read_text())
    assert committed["$defs"] == helm_chart.config_defs()
    assert committed["properties"]["config"] == {"$ref": "#/$defs/Settings"}
    # `refinements` is where the models put the `clusters:` entries that refine a discovered client.
    assert set(committed["$defs"]["Settings"]["properties"]) == set(Settings.model_fields) - {"refinements"}


def test_the_kustomize_kit_is_what_the_chart_renders() -> None:
    # scripts/helm_chart.py writes config/deploy/ from the chart: edit the chart, then run
    # `python -m scripts.helm_chart write`.
    assert list(helm_chart.differences()) == []


def test_the_check_names_a_file_edited_by_hand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copied = tmp_path / "deploy"
    for path, text in helm_chart.kit().items():
        target = copied / path.relative_to(DEPLOY)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    edited = copied / "sqlite" / "deployment.yaml"
    edited.write_text(edited.read_text().replace("memory: 512Mi", "memory: 1Gi"))
    monkeypatch.setattr(helm_chart, "DEPLOY", copied)
    assert list(helm_chart.differences()) == [
        "config/deploy/sqlite/deployment.yaml: not what the chart renders"
    ]


def test_the_rules_are_the_promtool_tested_files() -> None:
    rules = {d["metadata"]["name"]: d["spec"] for d in of_kind("monitoring", "PrometheusRule")}
    assert rules == {
        f"{RELEASE}-resource-proxy": yaml.safe_load((RULES / "proxy-alerts.yaml").read_text()),
        f"{RELEASE}-self": yaml.safe_load((RULES / "proxybot-alerts.yaml").read_text()),
    }


def test_notes_give_the_alertmanager_receiver_for_this_releases_service() -> None:
    notes = render(MATRIX["defaults"], name="oncall", namespace="ops")["proxybot/templates/NOTES.txt"]
    snippet = yaml.safe_load(notes[notes.index("  # The proxybot receiver") :])
    shipped = yaml.safe_load(RECEIVER.read_text())
    (webhook,) = shipped["receivers"][0]["webhook_configs"]
    webhook["url"] = "http://oncall-proxybot.ops.svc:8080/alertmanager"
    assert snippet == shipped
    service = one("defaults", "Service")["metadata"]["name"]
    assert f"Service {service.replace(RELEASE, 'oncall-proxybot')}" in notes


# -- the Deployment runs what `proxybot serve` reads ------------------------------------------------------


def config_map_data(case: str) -> dict[str, str]:
    data: dict[str, str] = yaml.safe_load(rendered(case)["proxybot/templates/configmap.yaml"])["data"]
    return data


def pod_config(case: str, directory: Path, env: dict[str, str] | None = None) -> tuple[Path, Settings]:
    """The rendered proxybot.yaml as the pod reads it: beside the in-cluster kubeconfig and the kubeconfigs
    Secret's files (stubbed), with the Secret's keys as files in PROXYBOT_SECRETS_DIR (and `env`); with the
    platform, its access key among them."""
    data = config_map_data(case)
    for name, text in data.items():
        (directory / name).write_text(text)
    config = yaml.safe_load(data["proxybot.yaml"])
    for cluster in config["clusters"]:
        if "kubeconfig" not in cluster:
            continue  # refines a client the platform finds: no file of its own
        for access in [cluster, *(t["direct"] for t in cluster["targets"] if "direct" in t)]:
            (directory / access["kubeconfig"]).write_text(yaml.safe_dump(KUBECONFIG))
    secrets = {
        "PROXYBOT_SLACK_BOT_TOKEN": "xoxb-1-2-realish",
        "PROXYBOT_SLACK_SIGNING_SECRET": "a1b2c3d4",
        "PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN": "f00dfeed",
        "PROXYBOT_STORE_URL": f"sqlite:///{directory / 'proxybot.db'}",  # the pod's volume is not here
    }
    if "platform" in config:
        secrets[ACCESS_KEY_ENV] = "platform-key-0123456789"
    files = directory / "secrets"
    files.mkdir()
    for name, value in secrets.items():
        (files / name).write_text(value)
    path = directory / "proxybot.yaml"
    return path, parse_config(
        data["proxybot.yaml"],
        base_dir=directory,
        env={SECRETS_DIR_ENV: str(files)} | (env or {}),
        purpose="serve",
    ).settings


CONFIG_CASES = [case for case in MATRIX if case != "existing-configmap"]


@pytest.mark.parametrize("case", CONFIG_CASES)
def test_the_rendered_config_passes_check_config(case: str, tmp_path: Path) -> None:
    path, _ = pod_config(case, tmp_path)
    out, err = io.StringIO(), io.StringIO()
    args = build_parser().parse_args(["check-config", "--config", str(path)])
    # As in the pod: the Secret's keys are files of PROXYBOT_SECRETS_DIR (the platform's key among them).
    code = args.run(args, Console({SECRETS_DIR_ENV: str(tmp_path / "secrets")}, out, err))
    assert code == 0, err.getvalue()
    assert out.getvalue().startswith("ok: ")


@pytest.mark.parametrize("case", ["defaults", "example", "postgres-url"])
def test_the_command_port_and_env_are_what_serve_reads(case: str, tmp_path: Path) -> None:
    c = container(case)
    _, settings = pod_config(case, tmp_path)
    args = build_parser().parse_args([*c["args"], "--config", "unused.yaml"])
    assert args.run.__name__ == "_serve"  # after the image's ENTRYPOINT, `proxybot serve`
    (port,) = c["ports"]
    assert (port["name"], port["containerPort"]) == ("http", args.port)
    assert args.host == settings.server.host == "0.0.0.0"  # noqa: S104 (in a pod, loopback is unreachable)
    assert settings.server.port == args.port  # the config says what the command line does
    env = {e["name"]: e["value"] for e in c["env"]}
    assert set(env) == {CONFIG_ENV, "MPLCONFIGDIR", SECRETS_DIR_ENV}
    assert "envFrom" not in c
    assert secret_files(case) == (MATRIX[case]["existingSecret"], set(SECRET_OVERRIDES))
    service = one(case, "Service")["spec"]
    assert service["ports"] == [{"name": "http", "port": args.port, "targetPort": "http", "protocol": "TCP"}]


@pytest.mark.parametrize("case", ["defaults", "postgres-secret", "existing-configmap"])
def test_every_path_serve_reads_or_writes_is_mounted(case: str, tmp_path: Path) -> None:
    c, spec = container(case), pod_spec(case)
    env = {e["name"]: e.get("value") for e in c["env"]}
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    config_dir = posixpath.dirname(env[CONFIG_ENV])
    sources = volumes[mounts[config_dir]]["projected"]["sources"]
    config_map = MATRIX[case].get("existingConfigMap") or f"{RELEASE}-config"
    assert sources == [
        {"configMap": {"name": config_map}},
        {"secret": {"name": MATRIX[case]["kubeconfigSecret"]}},
    ]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True  # so each path written must be a volume
    assert "emptyDir" in volumes[mounts["/tmp"]]
    assert env["MPLCONFIGDIR"].startswith("/tmp/")
    if case == "existing-configmap":
        return
    data = config_map_data(case)
    assert posixpath.basename(env[CONFIG_ENV]) in data
    settings = parse_config(data["proxybot.yaml"], base_dir=tmp_path, env={}, purpose="check").settings
    store = settings.store.sqlite_path
    if case == "postgres-secret":  # the Secret's URL replaces the sqlite one: no volume
        assert not [v for v in spec["volumes"] if "persistentVolumeClaim" in v]
        return
    assert store is not None
    claim = volumes[mounts[str(store.parent)]]["persistentVolumeClaim"]["claimName"]
    assert one(case, "PersistentVolumeClaim")["metadata"]["name"] == claim


def secrets_volume(case: str) -> Doc:
    """The volume mounted at PROXYBOT_SECRETS_DIR."""
    c = container(case)
    where = next(e["value"] for e in c["env"] if e["name"] == SECRETS_DIR_ENV)
    (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == where]
    assert mount.get("readOnly") is True
    (volume,) = [v for v in pod_spec(case)["volumes"] if v["name"] == mount["name"]]
    return dict(volume)


def secret_files(case: str) -> tuple[str, set[str]]:
    """(the Secret, the keys the pod reads as files) of the secrets volume, each file named as its key."""
    sources = [s["secret"] for s in secrets_volume(case)["projected"]["sources"]]
    (name,) = {s["name"] for s in sources}
    items = [item for s in sources for item in s["items"]]
    assert all(item["path"] == item["key"] for item in items)
    return name, {item["key"] for item in items}


@pytest.mark.parametrize("case", MATRIX)
def test_no_secret_is_in_the_environment_they_are_files_only_the_pod_reads(case: str) -> None:
    """Kubernetes Secrets reach the pod as a read-only volume, never `env`/`envFrom`: a variable is in the
    environment of every process the bot starts."""
    c, spec = container(case), pod_spec(case)
    assert "envFrom" not in c
    assert all("valueFrom" not in e for e in c["env"]), c["env"]
    assert not re.search(r"xoxb-|xapp-|secretKeyRef", json.dumps(c["env"]))
    volume = secrets_volume(case)["projected"]
    assert volume["defaultMode"] == 0o440  # the owner (root) and the pod's group (fsGroup) read them
    context = spec["securityContext"]
    assert context["fsGroup"] == context["runAsGroup"]


@pytest.mark.parametrize(
    ("case", "required"),
    [
        ("defaults", {"PROXYBOT_SLACK_SIGNING_SECRET"}),
        ("socket-mode", {"PROXYBOT_SLACK_APP_TOKEN"}),
        ("postgres-secret", {"PROXYBOT_SLACK_SIGNING_SECRET", "PROXYBOT_STORE_URL"}),
        ("platform", {"PROXYBOT_SLACK_SIGNING_SECRET", ACCESS_KEY_ENV}),
        ("platform-postgres", {"PROXYBOT_SLACK_SIGNING_SECRET", ACCESS_KEY_ENV, "PROXYBOT_STORE_URL"}),
    ],
)
def test_the_pod_waits_for_the_secret_keys_its_mode_needs(case: str, required: set[str]) -> None:
    required |= {"PROXYBOT_SLACK_BOT_TOKEN", "PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN"}
    sources = [s["secret"] for s in secrets_volume(case)["projected"]["sources"]]
    waited = {i["key"] for s in sources if not s.get("optional") for i in s["items"]}
    assert waited == required
    assert {i["key"] for s in sources if s.get("optional") for i in s["items"]} == set(
        SECRET_OVERRIDES
    ) - required


async def test_the_probes_ask_what_the_app_answers(tmp_path: Path) -> None:
    c = container("defaults")
    _, settings = pod_config("defaults", tmp_path)
    store = await open_store(settings.store.url.get_secret_value())
    try:
        transport = httpx.ASGITransport(app=create_app(Deps(settings=settings, store=store)))
        async with httpx.AsyncClient(transport=transport, base_url="http://pod") as http:
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                answer = await http.get(c[probe]["httpGet"]["path"])
                assert answer.status_code == 200, probe
    finally:
        await store.close()
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}


@pytest.mark.parametrize("case", ["postgres-secret", "postgres-url"])
def test_several_replicas_spread_and_keep_one_through_a_drain(case: str) -> None:
    deployment = one(case, "Deployment")["spec"]
    assert deployment["replicas"] == MATRIX[case]["replicaCount"]
    assert deployment["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    (term,) = pod_spec(case)["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["labelSelector"] == deployment["selector"]
    assert one(case, "PodDisruptionBudget")["spec"] == {"minAvailable": 1, "selector": deployment["selector"]}
    policy = one(case, "NetworkPolicy")
    assert allows(policy, "egress", 5432)
    assert not allows(one("defaults", "NetworkPolicy"), "egress", 5432)


# -- RBAC follows the config as the code's requests need --------------------------------------------------

TWO_CLIENTS: Values = merged(
    MINIMAL,
    {
        "config": {
            "clusters": [
                MINIMAL["config"]["clusters"][0]
                | {"control_plane": {"kubeconfig": "in-cluster.kubeconfig.yaml"}},
                {
                    "name": "staging",
                    "kubeconfig": "staging.kubeconfig.yaml",
                    "match": {"cluster": "staging"},
                    "control_plane": {
                        "kubeconfig": "in-cluster.kubeconfig.yaml",
                        "namespace": "tenants-staging",
                    },
                    "targets": [
                        {
                            "name": "shop/orders",
                            "group_versions": ["orders.example.com/v1"],
                            "probe": {"group_version": "orders.example.com/v1", "resource": "orders"},
                            "control_plane": {"kubeconfig": "in-cluster.kubeconfig.yaml"},
                        }
                    ],
                },
            ]
        }
    },
)


def test_the_rbac_grants_every_configured_namespace_what_the_kit_grants(tmp_path: Path) -> None:
    # The kit's grants (config/deploy/base/rbac-control-plane.yaml, rendered by this chart) are proven equal
    # to the code's requests by tests/config/test_rbac_code.py, as templates over the config's namespaces.
    # For another config the chart must grant the same templates, for every namespace the config names.
    manifest = tmp_path / "rbac.yaml"
    manifest.write_text(render(TWO_CLIENTS)["proxybot/templates/rbac.yaml"])
    (tmp_path / "in-cluster.kubeconfig.yaml").write_text(yaml.safe_dump(KUBECONFIG))
    for name in ("prod.kubeconfig.yaml", "staging.kubeconfig.yaml"):
        (tmp_path / name).write_text(yaml.safe_dump(KUBECONFIG))
    config = yaml.safe_dump(TWO_CLIENTS["config"])
    clusters = parse_config(config, base_dir=tmp_path, env={}, purpose="check").settings.clusters
    # As the code reads them (config/clusters.py control_plane_namespace): configured, else vcluster-<name>.
    targets = [t for c in clusters for t in c.targets]
    members = Members(
        frozenset(c.control_plane_namespace for c in clusters if c.control_plane is not None),
        frozenset(t.control_plane_namespace for t in targets if t.control_plane is not None),
        probes_of(targets),
    )
    assert members.client_namespaces == {"vcluster-prod", "tenants-staging"}
    assert members.target_namespaces == {"vcluster-orders"}
    chart_grants, partial = templated(grants("control-plane", manifest), members)
    assert partial == []
    kit_grants, _ = templated(
        grants("control-plane", DEPLOY / "base" / "rbac-control-plane.yaml"),
        members_of(settings_of_kit(tmp_path).clusters),
    )
    assert chart_grants == kit_grants


def settings_of_kit(tmp_path: Path) -> Settings:
    kit = tmp_path / "kit"
    kit.mkdir()
    return pod_config("example", kit)[1]


def test_rbac_is_read_only_and_bound_to_the_pods_account() -> None:
    account = one("example", "ServiceAccount")["metadata"]
    assert pod_spec("example")["serviceAccountName"] == account["name"]
    for role in of_kind("example", "ClusterRole"):
        for rule in role["rules"]:
            assert set(rule["verbs"]) <= {"get", "list"}
    subject = {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    bindings = of_kind("example", "RoleBinding")
    assert bindings
    assert all(binding["subjects"] == [subject] for binding in bindings)
    assert not of_kind("example", "ClusterRoleBinding")
    assert not of_kind(
        "defaults", "RoleBinding"
    )  # no control_plane in its config: nothing read, nothing bound


# -- the rest of the kit -------------------------------------------------------------------------------------


def test_the_helm_test_pod_asks_readyz_on_the_service_and_is_no_replica() -> None:
    (path,) = [p for p in rendered("defaults") if "/tests/" in p]
    (pod,) = yaml.safe_load_all(rendered("defaults")[path])
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    service = one("defaults", "Service")
    script = pod["spec"]["containers"][0]["command"][-1]
    url = f"http://{service['metadata']['name']}.proxybot.svc:{service['spec']['ports'][0]['port']}/readyz"
    assert f'url = "{url}"' in script
    labels = pod["metadata"]["labels"]
    assert not service["spec"]["selector"].items() <= labels.items()
    policy = one("defaults", "NetworkPolicy")
    assert allows(policy, "ingress", "http", namespace="proxybot", labels=labels)
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True


def test_socket_mode_renders_no_ingress_and_says_so() -> None:
    assert not of_kind("socket-mode", "Ingress")
    assert "Socket Mode" in rendered("socket-mode")["proxybot/templates/NOTES.txt"]
    assert one("socket-mode", "Service")  # Alertmanager's webhooks and the scrape still need it


def test_an_existing_configmap_replaces_the_rendered_one() -> None:
    template = one("existing-configmap", "Deployment")["spec"]["template"]
    assert "checksum/config" not in template["metadata"].get("annotations", {})
    assert "checksum/config" in one("defaults", "Deployment")["spec"]["template"]["metadata"]["annotations"]


def test_a_created_secret_holds_only_the_values_given() -> None:
    secret = one("chart-secret", "Secret")
    assert secret["stringData"] == MATRIX["chart-secret"]["secret"]["values"]
    assert secret_files("chart-secret")[0] == secret["metadata"]["name"]
    assert not re.search(r"xoxb-|PROXYBOT_", config_map_data("chart-secret")["proxybot.yaml"])


def test_requests_and_limits_are_the_values_and_say_where_the_limit_comes_from() -> None:
    resources = container("defaults")["resources"]
    assert resources == yaml.safe_load((CHART / "values.yaml").read_text())["resources"]
    assert set(resources) == {"requests", "limits"}
    assert {"cpu", "memory"} <= set(resources["limits"])
    assert "bench/scale.py" in (CHART / "values.yaml").read_text()  # the measured peak it is sized from


# -- the platform way: the fleet read through the vCluster Platform with one access key ---------------------

PLATFORM_CASES = ["platform", "platform-minimal", "platform-postgres"]


def config_volume(case: str) -> Doc:
    """The volume mounted where PROXYBOT_CONFIG is."""
    c = container(case)
    where = posixpath.dirname(next(e["value"] for e in c["env"] if e["name"] == CONFIG_ENV))
    (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == where]
    (volume,) = [v for v in pod_spec(case)["volumes"] if v["name"] == mount["name"]]
    return dict(volume)


@pytest.mark.parametrize("case", PLATFORM_CASES)
def test_the_platform_way_installs_without_a_kubeconfig_secret(case: str) -> None:
    assert "kubeconfigSecret" not in MATRIX[case]
    sources = config_volume(case)["projected"]["sources"]
    assert sources[0] == {"configMap": {"name": f"{RELEASE}-config"}}
    assert not [s for s in sources if "secret" in s]
    # The tokens Secret is the only Secret the pod reads.
    named = {
        s["secret"]["name"]
        for v in pod_spec(case)["volumes"]
        for s in v.get("projected", {}).get("sources", [])
        if "secret" in s
    }
    assert named == {MATRIX[case]["existingSecret"]}
    assert not of_kind(case, "RoleBinding")  # read through the platform: no RBAC of the control plane cluster


@pytest.mark.parametrize("case", PLATFORM_CASES)
def test_the_platform_way_waits_for_the_access_key_in_the_secret(case: str) -> None:
    sources = [s["secret"] for s in secrets_volume(case)["projected"]["sources"]]
    waited = {i["key"] for s in sources if not s.get("optional") for i in s["items"]}
    assert ACCESS_KEY_ENV in waited
    assert ACCESS_KEY_ENV not in config_map_data(case)["proxybot.yaml"]
    assert "access_key" not in yaml.safe_load(config_map_data(case)["proxybot.yaml"])["platform"]
    assert "proxybot fleet" in rendered(case)["proxybot/templates/NOTES.txt"]
    assert "proxybot fleet" not in rendered("defaults")["proxybot/templates/NOTES.txt"]


def test_the_platforms_ca_is_a_file_beside_the_config_that_names_it(tmp_path: Path) -> None:
    ca = {
        "configMap": {"name": "proxybot-platform-ca", "items": [{"key": "ca.crt", "path": "platform-ca.crt"}]}
    }
    assert ca in config_volume("platform")["projected"]["sources"]
    (tmp_path / "platform").mkdir()
    _, settings = pod_config("platform", tmp_path / "platform")
    assert settings.platform is not None
    # Relative, so beside proxybot.yaml: /etc/proxybot/platform-ca.crt in the pod, the ConfigMap's item.
    assert settings.platform.ca_file == tmp_path / "platform" / "platform-ca.crt"
    assert settings.platform.projects == ("payments", "shop")
    assert settings.platform.access_key is not None  # from the Secret's file, as in the pod
    assert [r.name for r in settings.refinements] == ["prod-eu"]
    assert settings.clusters == ()
    (tmp_path / "minimal").mkdir()
    _, minimal = pod_config("platform-minimal", tmp_path / "minimal")
    assert minimal.platform is not None
    assert minimal.platform.ca_file is None
    own = merged(
        PLATFORM_MINIMAL,
        {"platformCA": {"configMap": "ca"}, "config": {"platform": {"ca_file": "/etc/ssl/platform.pem"}}},
    )
    config = yaml.safe_load(
        yaml.safe_load(render(own)["proxybot/templates/configmap.yaml"])["data"]["proxybot.yaml"]
    )
    assert config["platform"]["ca_file"] == "/etc/ssl/platform.pem"  # the operator's own is kept


def test_the_platform_way_refuses_what_it_cannot_mount_naming_the_value() -> None:
    by_hand = merged(PLATFORM_MINIMAL, {"config": {"clusters": MINIMAL["config"]["clusters"]}})
    message = refused(by_hand)
    assert "kubeconfigSecret: required" in message
    assert "prod.kubeconfig.yaml" in message
    direct = {"name": "prod", "direct": {"payments/ledger": {"kubeconfig": "ledger.kubeconfig.yaml"}}}
    assert "ledger.kubeconfig.yaml" in refused(merged(PLATFORM_MINIMAL, {"config": {"clusters": [direct]}}))
    key_file = merged(PLATFORM_MINIMAL, {"config": {"platform": {"access_key_file": "/keys/platform"}}})
    assert "config.platform.access_key_file" in refused(key_file)
    assert "platformCA.configMap" in refused(merged(MINIMAL, {"platformCA": {"configMap": "ca"}}))
    assert "config.platform.url" in refused(merged(MINIMAL, {"kubeconfigSecret": ""}))


def test_the_schema_takes_a_refinement_and_refuses_its_typo() -> None:
    typo = merged(PLATFORM_MINIMAL, {"config": {"clusters": [{"name": "prod", "chanel": "C0PROD"}]}})
    assert "additional properties 'chanel' not allowed" in refused(typo)
    listed = merged(MINIMAL, {"config": {"clusters": [{"name": "prod", "kubeconfig": "p.yaml"}]}})
    assert "missing properties" in refused(listed)  # one with a kubeconfig is a whole client


def test_the_platform_and_clients_by_hand_together_mount_both_and_reach_the_platforms_port() -> None:
    sources = config_volume("platform-and-by-hand")["projected"]["sources"]
    assert {"secret": {"name": "kubeconfigs"}} in sources
    assert allows(one("platform-and-by-hand", "NetworkPolicy"), "egress", 8443)
    assert not allows(one("platform", "NetworkPolicy"), "egress", 8443)  # its URL is on 443


def test_a_refined_client_gets_no_scrape_or_probe_the_chart_cannot_know() -> None:
    values = merged(example_values(), {"serviceMonitor": {"enabled": True}, "probe": {"enabled": True}})
    found = docs(render(values, api_versions=API_VERSIONS["monitoring"]))
    assert not [d for d in found if d["kind"] == "CronJob"]
    monitors = {d["metadata"]["name"] for d in found if d["kind"] == "ServiceMonitor"}
    assert f"{RELEASE}-prod-eu" not in monitors
