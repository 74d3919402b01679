"""Kubeconfigs for the simulated clusters and a proxybot config pointing at them."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from sim.defaults import CONTROL_PLANE, PROBE_NAMESPACE, PROBE_RESOURCE
from sim.world import World

# cluster -> context -> (server URL, token): what `SimServer.kube_contexts` serves.
Contexts = dict[str, dict[str, tuple[str, str]]]


def kubeconfig(ca_pem: bytes, contexts: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """A kubeconfig with one context per (server URL, token), trusting the CA; the first is current."""
    ca = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": next(iter(contexts)),
        "clusters": [
            {"name": n, "cluster": {"server": url, "certificate-authority-data": ca}}
            for n, (url, _) in contexts.items()
        ],
        "users": [{"name": n, "user": {"token": token}} for n, (_, token) in contexts.items()],
        "contexts": [{"name": n, "context": {"cluster": n, "user": n}} for n in contexts],
    }


def write_kubeconfigs(ca_pem: bytes, contexts: Contexts, directory: Path) -> dict[str, Path]:
    """`<cluster>.yaml` each, with that cluster's contexts, trusting the CA; owner-readable only."""
    directory.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, served in contexts.items():
        path = directory / f"{name}.yaml"
        path.write_text(yaml.safe_dump(kubeconfig(ca_pem, served), sort_keys=False))
        path.chmod(0o600)
        written[name] = path
    return written


def proxybot_config(world: World, kube_dir: str) -> dict[str, Any]:
    def control_plane(namespace: str, release: str) -> dict[str, str]:
        kubeconfig = f"{kube_dir}/{CONTROL_PLANE}.yaml"
        return {
            "kubeconfig": kubeconfig,
            "context": CONTROL_PLANE,
            "namespace": namespace,
            "release": release,
        }

    clusters = []
    for client in world.platform.clients.values():
        targets = []
        for link in client.links:
            gv = link.group_versions[0]
            targets.append(
                {
                    "name": link.target.target_label,
                    "group_versions": list(link.group_versions),
                    "probe": {"group_version": gv, "resource": PROBE_RESOURCE, "namespace": PROBE_NAMESPACE},
                    "direct": {
                        "kubeconfig": f"{kube_dir}/{link.target.name}.yaml",
                        "context": link.target.name,
                    },
                    "control_plane": control_plane(link.target.namespace, link.target.release),
                }
            )
        clusters.append(
            {
                "name": client.name,
                "kubeconfig": f"{kube_dir}/{client.name}.yaml",
                "context": client.name,
                "match": {"cluster": client.name},
                "targets": targets,
                "control_plane": control_plane(client.namespace, client.release),
                # Each replica has its own context in the kubeconfig (pinned to that pod).
                "replicas": {r.pod: r.pod for r in client.replicas},
            }
        )
    # Without a channel the config is refused; the demo renders to the terminal, so any name will do.
    return {"slack": {"default_channel": "#proxybot-sim"}, "clusters": clusters}


def write_config(
    path: Path, world: World, ca_pem: bytes, contexts: Contexts, *, scenario: str, ksm_url: str
) -> Path:
    """The proxybot config at `path`, kubeconfigs in `<stem>.kubeconfigs/` beside it (relative paths)."""
    path = path.absolute()
    kube_dir = f"{path.stem}.kubeconfigs"
    write_kubeconfigs(ca_pem, contexts, path.parent / kube_dir)
    header = (
        f"# Written by `proxybot sim --scenario {scenario}`; valid while that simulator runs.\n"
        f"# Control plane cluster (proxy-probe CronJob, NetworkPolicies): {kube_dir}/control-plane.yaml\n"
        f"# kube-state-metrics for Prometheus: {ksm_url}\n"
    )
    path.write_text(header + yaml.safe_dump(proxybot_config(world, kube_dir), sort_keys=False))
    return path


def write_platform_config(
    path: Path,
    url: str,
    access_key: str,
    ca_pem: bytes,
    contexts: dict[str, tuple[str, str]],
    *,
    scenario: str,
) -> Path:
    """The proxybot config at `path` naming the platform (`platform:`, no `clusters:`).

    Beside it, owner-readable only, with relative paths: the access key in `<stem>.access-key`, the CA in
    `<stem>.ca.pem`, and for kubectl a kubeconfig with the platform's contexts (management API, each
    instance, the connected cluster) in `<stem>.kubeconfigs/platform.yaml`.
    """
    path = path.absolute()
    path.parent.mkdir(parents=True, exist_ok=True)
    key_file, ca_file = f"{path.stem}.access-key", f"{path.stem}.ca.pem"
    for name, blob in ((key_file, access_key.encode() + b"\n"), (ca_file, ca_pem)):
        (path.parent / name).write_bytes(blob)
        (path.parent / name).chmod(0o600)
    kube_dir = f"{path.stem}.kubeconfigs"
    write_kubeconfigs(ca_pem, {"platform": contexts}, path.parent / kube_dir)
    header = (
        f"# Written by `proxybot sim --platform --scenario {scenario}`; valid while that simulator runs.\n"
        f"# kubectl through the platform: {kube_dir}/platform.yaml (contexts: {', '.join(contexts)})\n"
    )
    config = {
        "slack": {"default_channel": "#proxybot-sim"},
        "platform": {"url": url, "access_key_file": key_file, "ca_file": ca_file},
    }
    path.write_text(header + yaml.safe_dump(config, sort_keys=False))
    return path
