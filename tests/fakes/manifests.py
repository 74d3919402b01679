"""The shipped Kubernetes manifests as tests read them: every file's objects, a kustomization as
`kubectl kustomize` builds it, and the ConfigMap's config loaded as `proxybot serve` loads it in the pod."""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from config.loader import parse_config
from config.settings import Settings
from tests.fakes.config_data import KUBECONFIG

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "config" / "deploy"
# The oldest Kubernetes release we support and the newest the validator knows.
K8S_VERSIONS = ("1.30.0", kubernetes_validate.utils.latest_version() + ".0")

Doc = dict[str, Any]


def manifests() -> list[tuple[str, Doc]]:
    """Every Kubernetes object in a file under config/deploy, named `file#index` (kustomizations are not)."""
    found = []
    for path in sorted(DEPLOY.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
        found += [(f"{path.relative_to(DEPLOY)}#{index}", doc) for index, doc in enumerate(docs)]
    return found


@functools.cache
def kustomize(directory: Path) -> tuple[Doc, ...]:
    """What `kubectl apply -k <directory>` applies."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("kubectl is not on PATH")
    argv = [kubectl, "kustomize", str(directory)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60)
    return tuple(doc for doc in yaml.safe_load_all(out.stdout) if doc is not None)


def config_map_data() -> dict[str, str]:
    """The data of base/configmap.yaml: proxybot.yaml and the in-cluster kubeconfig."""
    doc = yaml.safe_load((DEPLOY / "base" / "configmap.yaml").read_text())
    data: dict[str, str] = doc["data"]
    return data


def shipped_settings(tmp_path: Path, env: Mapping[str, str] | None = None) -> Settings:
    """The ConfigMap's config as `proxybot serve` would load it in the pod, kubeconfigs stubbed in tmp."""
    data = config_map_data()
    (tmp_path / "in-cluster.kubeconfig.yaml").write_text(data["in-cluster.kubeconfig.yaml"])
    config = yaml.safe_load(data["proxybot.yaml"])
    for cluster in config["clusters"]:
        for access in [cluster, *(t["direct"] for t in cluster["targets"] if "direct" in t)]:
            kubeconfig = tmp_path / access["kubeconfig"]
            kubeconfig.parent.mkdir(parents=True, exist_ok=True)
            kubeconfig.write_text(yaml.safe_dump(KUBECONFIG))
    secrets = {"PROXYBOT_SLACK_BOT_TOKEN": "xoxb-1-2-realish", "PROXYBOT_SLACK_SIGNING_SECRET": "a1b2c3d4"}
    secrets["PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN"] = "f00dfeed"
    secrets |= env or {}
    return parse_config(data["proxybot.yaml"], base_dir=tmp_path, env=secrets, purpose="serve").settings


def listed(directory: Path) -> set[tuple[str, str]]:
    """(kind, name) of every object a kustomization's resources name, through the bases it names."""
    found: set[tuple[str, str]] = set()
    for entry in yaml.safe_load((directory / "kustomization.yaml").read_text())["resources"]:
        path = directory / entry
        if path.is_dir():
            found |= listed(path)
        else:
            found |= {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(path.read_text()) if d}
    return found
