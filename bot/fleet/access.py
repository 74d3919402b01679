"""Every read through the platform: one kubeconfig whose contexts are the platform's proxy paths.

`/kubernetes/project/<project>/virtualcluster/<name>` reaches a virtual cluster's API server, and
`/kubernetes/cluster/<cluster>` a connected cluster's, both with the one access key (docs/platform-api.md).
The kubeconfig names the key's file as the user's `tokenFile`, which the bot's kube readers read again as
they use it (`bot.clients.credentials`): a rotated key applies without a restart. A key given in the
environment is written to a file of its own, owner-readable only, beside the kubeconfig in a private
directory; the key itself is never in the kubeconfig, a log or a message.

Only names that are DNS labels reach a path: `bot/fleet/instances.py` refuses the others before this.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from config import names
from config.platform import PlatformSettings

USER = "platform"
KUBECONFIG = "platform.kubeconfig"
KEY_FILE = "platform.access-key"


def virtual_cluster_context(project: str, name: str) -> str:
    return f"project/{project}/virtualcluster/{name}"


def cluster_context(cluster: str) -> str:
    return f"cluster/{cluster}"


def context_path(context: str) -> str:
    """The platform path a context reaches: `/kubernetes/<context>`, every part a DNS label."""
    parts = context.split("/")
    for part in parts[1::2]:
        names.dns1123_label(part)
    return f"/kubernetes/{context}"


def private_directory() -> Path:
    """A directory only this process's user may read, for the kubeconfig and a key from the environment."""
    return Path(tempfile.mkdtemp(prefix="proxybot-platform-"))


def key_file(platform: PlatformSettings, directory: Path) -> Path:
    """The file the access key is read from: the configured one, else the environment's key written once."""
    if platform.access_key_file is not None:
        return platform.access_key_file
    assert platform.access_key is not None  # the settings require one of the two
    path = directory / KEY_FILE
    _write_private(path, platform.access_key.get_secret_value().strip() + "\n")
    return path


def write_kubeconfig(platform: PlatformSettings, directory: Path, key: Path, contexts: Iterable[str]) -> Path:
    """The kubeconfig of these contexts at `<directory>/platform.kubeconfig`, replaced whole (a reader never
    sees half a file), owner-readable only."""
    base = platform.url.rstrip("/")
    cluster: dict[str, Any] = {}
    if platform.ca_file is not None:
        cluster["certificate-authority"] = str(platform.ca_file)
    wanted = sorted(set(contexts))
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": c, "cluster": {**cluster, "server": base + context_path(c)}} for c in wanted],
        "users": [{"name": USER, "user": {"tokenFile": str(key)}}],
        "contexts": [{"name": c, "context": {"cluster": c, "user": USER}} for c in wanted],
    }
    path = directory / KUBECONFIG
    _write_private(path, yaml.safe_dump(document, sort_keys=False))
    return path


def _write_private(path: Path, text: str) -> None:
    fd, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
