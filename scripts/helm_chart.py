"""The Helm chart's generated parts, and the chart rendered as Helm renders it (Helm's own Go SDK, through
the helm-python-sdk package: a dev dependency, never the image's).

Two things are generated, so each is written once:
- the schema of the chart's `config` value (values.schema.json's `$defs`), from proxybot's settings models
  (config/settings.py), minus the secrets, which never go into the ConfigMap;
- the kustomize kit under config/deploy/ (every folder but tenant-cluster/, which goes into the tenant
  clusters, not through the chart): the chart rendered with config/helm/my-values.by-hand.example.yaml (the
  clients listed by hand, each with its kubeconfig: what the kit's folders, RBAC, scrapes and probes are
  for) and each variant's values, one file per template. config/helm/my-values.example.yaml, the platform
  way, is the chart's first example (`example_values`).

    python -m scripts.helm_chart write    # rewrite both
    python -m scripts.helm_chart check    # exit 1, naming each file that differs from what is generated

tests/config/test_helm.py runs the check.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from helm_python import _native
from helm_python.chart import Chart

from config.environment import SECRET_OVERRIDES
from config.settings import Settings
from scripts.generated import write_or_check

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "config" / "helm" / "proxybot"
SCHEMA = CHART / "values.schema.json"
EXAMPLE_VALUES = ROOT / "config" / "helm" / "my-values.example.yaml"
BY_HAND_VALUES = ROOT / "config" / "helm" / "my-values.by-hand.example.yaml"
DEPLOY = ROOT / "config" / "deploy"
RELEASE = NAMESPACE = "proxybot"

Values = dict[str, Any]

# -- the schema of `config` --------------------------------------------------------------------------

# The secrets of the settings: each comes from existingSecret as its PROXYBOT_* variable, so the chart's
# `config` has no key for it (the ConfigMap must never hold one). store.url stays: a SQLite path, or a
# PostgreSQL URL without a password (the chart refuses one with a password).
CONFIG_SECRETS = {path for name, path in SECRET_OVERRIDES.items() if name != "PROXYBOT_STORE_URL"}
# Annotations of pydantic's schema that Helm's validation does not use, or that would say the wrong thing
# (the defaults of the secrets, a "password" format).
DROPPED = ("title", "default", "format", "writeOnly")


def config_defs() -> dict[str, Any]:
    """`$defs` of values.schema.json: every settings model, `Settings` the whole config."""
    schema = Settings.model_json_schema(mode="validation", ref_template="#/$defs/{model}")
    defs: dict[str, Any] = schema.pop("$defs")
    defs["Settings"] = schema
    for section, key in CONFIG_SECRETS:
        model = _model_of(defs, section)
        del model["properties"][key]
    # With `platform:`, an entry of `clusters:` without a kubeconfig refines a discovered client
    # (config/platform.py ClusterRefinement); `refinements` is where the models put those, not a key to write.
    settings = defs["Settings"]["properties"]
    del settings["refinements"]
    settings["clusters"]["items"] = {
        "if": {"required": ["kubeconfig"]},
        "then": {"$ref": "#/$defs/ClusterSettings"},
        "else": {"$ref": "#/$defs/ClusterRefinement"},
    }
    return {name: _lean(model) for name, model in sorted(defs.items())}


def _model_of(defs: Mapping[str, Any], section: str) -> Any:
    """The model of a section: its `$ref`, or the one `$ref` of an optional section's `anyOf`."""
    node = defs["Settings"]["properties"][section]
    ref: str = next(n["$ref"] for n in node.get("anyOf", [node]) if "$ref" in n)
    return defs[ref.rpartition("/")[2]]


def _lean(node: Any, *, names: bool = False) -> Any:
    """The schema without DROPPED annotations (`names`: a `properties` map, whose keys are field names)."""
    if isinstance(node, dict):
        return {
            key: _lean(value, names=key == "properties" and not names)
            for key, value in node.items()
            if names or key not in DROPPED
        }
    if isinstance(node, list):
        return [_lean(item) for item in node]
    return node


def schema_text() -> str:
    """values.schema.json with its `$defs` generated and the chart's own keys as committed."""
    schema = json.loads(SCHEMA.read_text())
    schema["$defs"] = config_defs()
    return json.dumps(schema, indent=2) + "\n"


# -- rendering -----------------------------------------------------------------------------------------


def render(
    values: Values,
    *,
    name: str = RELEASE,
    namespace: str = NAMESPACE,
    api_versions: Sequence[str] = (),
    kube_version: str | None = None,
) -> dict[str, str]:
    """Template path (`proxybot/templates/x.yaml`) -> its rendered text, as `helm template` renders it.
    `api_versions` are the API versions the cluster offers beyond the built-in ones (--api-versions)."""
    options: dict[str, Any] = {"name": name, "namespace": namespace}
    if api_versions:
        options["api_versions"] = list(api_versions)
    if kube_version is not None:
        options["kube_version"] = kube_version
    with _quiet_stderr(), Chart.load(CHART) as chart:
        # Chart.render takes no capabilities; the library's own call does (the same one Chart.render makes).
        text = _native.call_string("helm_render", chart._raw(), json.dumps(values), json.dumps(options))
    rendered: dict[str, str] = json.loads(text)
    return rendered


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Helm's loader logs an INFO line per link it follows (files/rules, files/alertmanager) straight to
    file descriptor 2; errors come back as exceptions, so nothing else is lost."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def docs(rendered: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every object rendered, NOTES.txt aside."""
    return [
        doc
        for path, text in sorted(rendered.items())
        if path.endswith(".yaml")
        for doc in yaml.safe_load_all(text)
        if doc
    ]


def merged(base: Values, *overrides: Values) -> Values:
    """`base` with each override merged in, as Helm merges `-f` files (maps deep, the rest replaced)."""
    result = copy.deepcopy(base)
    for override in overrides:
        _merge_into(result, override)
    return result


def _merge_into(target: Values, override: Mapping[str, Any]) -> None:
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge_into(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def example_values() -> Values:
    """The first example: the fleet discovered from the vCluster Platform with one access key."""
    values: Values = yaml.safe_load(EXAMPLE_VALUES.read_text())
    return values


def by_hand_values() -> Values:
    """The clients listed by hand, each read with its own kubeconfig: the values the kit is rendered with."""
    values: Values = yaml.safe_load(BY_HAND_VALUES.read_text())
    return values


# -- the kustomize kit -----------------------------------------------------------------------------------

PLACEHOLDERS = {
    "PROXYBOT_SLACK_BOT_TOKEN": "xoxb-...",
    "PROXYBOT_SLACK_SIGNING_SECRET": "<signing-secret>",
    "PROXYBOT_SLACK_APP_TOKEN": "",
    "PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN": "<webhook-token>",
}


@dataclass(frozen=True)
class Part:
    """A folder of the kit: the values it is rendered with, and which template goes to which file."""

    folder: str
    values: Values
    files: dict[str, str]  # file in the folder -> template
    kustomization: str  # the kustomization.yaml's comment
    kind: str = "Kustomization"
    bases: tuple[str, ...] = ()
    comment: dict[str, str] = field(default_factory=dict)  # file -> extra header lines


POSTGRES: Values = {"replicaCount": 2, "storeUrlFromSecret": True}
PARTS = (
    Part(
        "base",
        {},
        {
            "serviceaccount.yaml": "serviceaccount.yaml",
            "rbac-control-plane.yaml": "rbac.yaml",
            "configmap.yaml": "configmap.yaml",
            "service.yaml": "service.yaml",
        },
        "What both variants share: the namespace, RBAC, the config and the Service.\n"
        "Apply a variant, not this:\n"
        "  kubectl apply -k config/deploy/sqlite     one replica, SQLite on a volume\n"
        "  kubectl apply -k config/deploy/postgres   several replicas on your PostgreSQL\n"
        "Not included on purpose (config/deploy/README.md says when to apply each):\n"
        "  ../secret.template.yaml            holds placeholders: create the real Secret yourself\n"
        "  ../tenant-cluster/                 goes into each TENANT cluster, not this one\n"
        "  ../monitoring, ../self-monitoring  need the Prometheus Operator's CRDs\n"
        "  ../probe                           goes into each client's vcluster-<name> namespace\n"
        "  ../http-mode                       a Component for Slack's HTTP mode: add it to your variant",
    ),
    Part(
        "sqlite",
        {},
        {
            "deployment.yaml": "deployment.yaml",
            "networkpolicy.yaml": "networkpolicy.yaml",
            "pvc.yaml": "pvc.yaml",
        },
        "One replica with its SQLite store on a volume:  kubectl apply -k config/deploy/sqlite\n"
        "(the chart with replicaCount: 1 and the config's sqlite store.url).",
        bases=("../base",),
    ),
    Part(
        "postgres",
        POSTGRES,
        {
            "deployment.yaml": "deployment.yaml",
            "networkpolicy.yaml": "networkpolicy.yaml",
            "pdb.yaml": "pdb.yaml",
        },
        "Several replicas sharing one PostgreSQL:  kubectl apply -k config/deploy/postgres\n"
        "(the chart with replicaCount: 2 and storeUrlFromSecret: true). The store URL\n"
        "(postgresql://USER:PASSWORD@HOST:5432/DB?sslmode=require) is the PROXYBOT_STORE_URL key of the\n"
        "proxybot-tokens Secret; it replaces store.url of base/configmap.yaml, and the pods do not start\n"
        "without it.",
        bases=("../base",),
    ),
    Part(
        "http-mode",
        {"ingress": {"enabled": True}},
        {"ingress.yaml": "ingress.yaml", "networkpolicy.yaml": "networkpolicy-slack.yaml"},
        "Slack's HTTP mode (the chart's ingress.enabled): the Ingress for POST /slack/events and the\n"
        "NetworkPolicy that lets the ingress controller reach the pods. A Component: add it to the variant\n"
        "you apply (config/deploy/README.md, step 8),\n"
        "  components:\n"
        "    - ../http-mode\n"
        "in config/deploy/sqlite/kustomization.yaml or config/deploy/postgres/kustomization.yaml.",
        kind="Component",
    ),
    Part(
        "monitoring",
        {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}},
        {
            "syncer-servicemonitor.yaml": "syncer-servicemonitors.yaml",
            "resource-proxy-rules.yaml": "prometheusrule-proxy.yaml",
        },
        "Make the resource proxy observable, for the Prometheus Operator (config/deploy/README.md, step 1):\n"
        "  kubectl apply -k config/deploy/monitoring\n"
        "  syncer-servicemonitor.yaml   scrapes each client's /metrics/syncer with its `match` labels\n"
        "  resource-proxy-rules.yaml    the guide's alert rules (config/rules/proxy-alerts.yaml)\n"
        "Without the operator: config/prometheus/scrape-configs.yaml and config/rules/proxy-alerts.yaml.",
    ),
    Part(
        "self-monitoring",
        {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}},
        {"servicemonitor.yaml": "servicemonitor.yaml", "prometheusrule.yaml": "prometheusrule-self.yaml"},
        "proxybot's own monitoring, for the Prometheus Operator: its /metrics scraped and its alert rules.\n"
        "  kubectl apply -k config/deploy/self-monitoring   (after a variant; needs the operator's CRDs)\n"
        "Without the operator: the `proxybot` job of config/prometheus/scrape-configs.yaml and\n"
        "config/rules/proxybot-alerts.yaml in your rule_files.",
    ),
    Part(
        "probe",
        {"probe": {"enabled": True}},
        {"configmap.yaml": "probe-configmap.yaml", "cronjob.yaml": "probe-cronjob.yaml"},
        "The guide's synthetic probe for each client tenant cluster (config/deploy/README.md, step 1c),\n"
        "on the CONTROL PLANE cluster, in the client's vcluster-<name> namespace:\n"
        "  kubectl apply -k config/deploy/probe\n"
        "One ConfigMap + CronJob pair per client of the config.",
    ),
)
SECRET_VALUES: Values = {"existingSecret": "", "secret": {"create": True, "values": PLACEHOLDERS}}
SECRET_HEADER = """\
TEMPLATE: the secrets proxybot reads, keyed by their PROXYBOT_* variables (config/environment.py); the
pods mount them as files (PROXYBOT_SECRETS_DIR), never as environment variables. Not applied by either
variant on purpose: fill in a copy outside the repository, or create it directly (config/deploy/README.md,
step 7):

  kubectl -n proxybot create secret generic proxybot-tokens \\
    --from-literal=PROXYBOT_SLACK_BOT_TOKEN=xoxb-... \\
    --from-literal=PROXYBOT_SLACK_SIGNING_SECRET=... \\
    --from-literal=PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN="$(openssl rand -hex 32)"

PROXYBOT_SLACK_APP_TOKEN: Socket Mode only (socketMode: true), an app-level token (xapp-...).
PROXYBOT_STORE_URL: the postgres variant only (required there), the store, which replaces store.url:
  postgresql://proxybot:<password>@db.example.internal:5432/proxybot?sslmode=require
PROXYBOT_ALERTMANAGER_WEBHOOK_PASSWORD: optional, basic auth instead of the bearer token (not both).
PROXYBOT_PLATFORM_ACCESS_KEY: with config.platform.url (required there), the vCluster Platform's access key
  (config/deploy/README.md, "Reading the fleet through the vCluster Platform")."""
NAMESPACE_DOC = f"""\
# The namespace proxybot runs in, in the control plane cluster. The pod meets the `restricted` Pod Security
# Standard, so the namespace enforces it (with Helm: `kubectl label namespace {NAMESPACE}
# pod-security.kubernetes.io/enforce=restricted` after `--create-namespace`).
apiVersion: v1
kind: Namespace
metadata:
  name: {NAMESPACE}
  labels:
    app.kubernetes.io/name: proxybot
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/warn: restricted
"""
# Labels that say Helm manages an object: untrue of what `kubectl apply -k` applies.
HELM_LABELS = re.compile(r"^ *(app\.kubernetes\.io/managed-by: Helm|helm\.sh/chart: \S+)\n", re.MULTILINE)


def _generated(source: str) -> str:
    return (
        f"# GENERATED from the Helm chart config/helm/proxybot ({source})\n"
        "# by `python -m scripts.helm_chart write`: edit the chart or its values,\n"
        "# config/helm/my-values.by-hand.example.yaml, not this file (tests/config/test_helm.py fails\n"
        "# when the two differ).\n"
    )


def _commented(text: str) -> str:
    return "".join(f"# {line}".rstrip() + "\n" for line in text.splitlines())


def kit() -> dict[Path, str]:
    """Every generated file of config/deploy/ and its content."""
    example = by_hand_values()
    files: dict[Path, str] = {
        DEPLOY / "base" / "namespace.yaml": _generated("the release's namespace") + NAMESPACE_DOC
    }
    for part in PARTS:
        rendered = render(merged(example, part.values))
        for name, template in part.files.items():
            text = HELM_LABELS.sub("", rendered[f"proxybot/templates/{template}"]).lstrip("\n")
            source = f"templates/{template}"
            files[DEPLOY / part.folder / name] = _generated(source) + text.rstrip() + "\n"
        files[DEPLOY / part.folder / "kustomization.yaml"] = _kustomization(part)
    secret = render(merged(example, SECRET_VALUES))["proxybot/templates/secret.yaml"]
    files[DEPLOY / "secret.template.yaml"] = (
        _generated("templates/secret.yaml, secret.create")
        + _commented(SECRET_HEADER)
        + HELM_LABELS.sub("", secret).lstrip("\n")
    )
    return files


def _kustomization(part: Part) -> str:
    api = "v1alpha1" if part.kind == "Component" else "v1beta1"
    resources = [*part.bases, *(["namespace.yaml"] if part.folder == "base" else []), *part.files]
    body = {"apiVersion": f"kustomize.config.k8s.io/{api}", "kind": part.kind, "resources": resources}
    header = _generated("the kit's layout in scripts/helm_chart.py") + _commented(part.kustomization)
    return header + yaml.safe_dump(body, sort_keys=False)


def shared_base_is_one() -> list[str]:
    """The objects base/ holds must render the same for both variants, or base/ would be one variant's."""
    example = by_hand_values()
    sqlite, postgres = render(example), render(merged(example, POSTGRES))
    return [
        f"base/{name}: templates/{template} renders differently for the postgres variant"
        for name, template in PARTS[0].files.items()
        if sqlite[f"proxybot/templates/{template}"] != postgres[f"proxybot/templates/{template}"]
    ]


def differences() -> Iterator[str]:
    """Each committed file that is not what is generated now."""
    if SCHEMA.read_text() != schema_text():
        yield f"{SCHEMA.relative_to(ROOT)}: its $defs are not the settings models' schema"
    generated = kit()
    for path, text in generated.items():
        if not path.exists() or path.read_text() != text:
            yield f"config/deploy/{path.relative_to(DEPLOY)}: not what the chart renders"
    for part in PARTS:
        for path in sorted((DEPLOY / part.folder).glob("*.yaml")):
            if path not in generated:
                yield f"config/deploy/{path.relative_to(DEPLOY)}: not rendered from the chart (remove it)"
    yield from shared_base_is_one()


def write() -> None:
    SCHEMA.write_text(schema_text())
    for path, text in kit().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def main(argv: Sequence[str] | None = None) -> int:
    return write_or_check(
        argv, prog="scripts.helm_chart", about=__doc__ or "", write=write, differences=differences
    )


if __name__ == "__main__":
    sys.exit(main())
