"""One `experimental.proxy.customResources` entry of a vcluster.yaml as written, and what is wrong with it
by itself (vCluster validates every entry, disabled ones included); the rules across entries are in
vcluster_yaml.py. An empty string counts as omitted, as it does for vCluster (Go zero values).

vCluster's values schema (loft-sh/vcluster, chart/values.schema.json: `Proxy`, `CustomResourceProxy`,
`VirtualClusterRef`) allows no other field in these objects, and `targetVirtualCluster.name` and `.project`
must be DNS labels (lowercase letters, digits and `-`, starting and ending with a letter or digit).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.domain.vcluster_yaml_result import Problem, ProblemSeverity

CUSTOM_RESOURCES = "experimental.proxy.customResources"
ACCESS_MODES = ("owned", "all")
ENTRY_FIELDS = ("enabled", "targetVirtualCluster", "accessResources")
TARGET_FIELDS = ("name", "project")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def entry_path(key: str) -> str:
    """`experimental.proxy.customResources["widgets.example.com/v1"]`: the YAML path of one entry."""
    return f"{CUSTOM_RESOURCES}[{json.dumps(key)}]"


@dataclass(frozen=True, slots=True)
class ProxyEntry:
    key: str
    resource: str
    group: str
    version: str
    enabled: bool
    name: str
    project: str | None  # None: omitted (or empty)
    access: str | None  # None: omitted (or empty)

    @property
    def path(self) -> str:
        return entry_path(self.key)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def wildcard(self) -> bool:
        return self.resource == "*"


def _split_key(key: str) -> tuple[str, str, str] | None:
    """`widgets.example.com/v1` -> (widgets, example.com, v1); None when not of that form."""
    resource_group, slash, version = key.partition("/")
    resource, dot, group = resource_group.partition(".")
    parts = (resource, group, version)
    if not slash or not dot or "/" in version or not all(parts) or any(c.isspace() for c in key):
        return None
    return parts


def refused(key: str, message: str, next_step: str) -> Problem:
    return Problem(ProblemSeverity.REFUSED, key, message, next_step)


def warning(key: str, message: str, next_step: str) -> Problem:
    return Problem(ProblemSeverity.WARNING, key, message, next_step)


def unknown_fields(path: str, value: Mapping[Any, Any], known: Sequence[str]) -> list[Problem]:
    """A field vCluster's schema does not know: the schema allows no other, so the file is refused."""
    return [
        refused(
            f"{path}.{field}",
            f"{field!r} is not a field here (known: {', '.join(known)}); vCluster's schema refuses it",
            "remove it or correct its spelling",
        )
        for field in value
        if field not in known
    ]


def _dns_label(path: str, value: str, problems: list[Problem]) -> None:
    if not _DNS_LABEL.fullmatch(value):
        problems.append(
            refused(
                path,
                f"{value!r} is not a DNS label (lowercase letters, digits and '-', starting and ending "
                "with a letter or digit)",
                "write the tenant cluster's or project's name as the platform shows it",
            )
        )


def _optional_text(path: str, value: object, problems: list[Problem]) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        problems.append(refused(path, f"must be a string, not {kind(value)}", "quote the value"))
        return None
    return value


def _target(path: str, value: object, problems: list[Problem]) -> tuple[str, str | None]:
    """targetVirtualCluster's name (empty when missing or wrong: refused) and project."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        why = f"must be a mapping with name (and optionally project), not {kind(value)}"
        problems.append(refused(path, why, "write it as `targetVirtualCluster: {name: <target>}`"))
        return "", None
    problems += unknown_fields(path, value, TARGET_FIELDS)
    name = value.get("name")
    if name is None or name == "":
        why = "targetVirtualCluster.name is missing: every entry needs it, disabled ones included"
        problems.append(refused(f"{path}.name", why, "set it to the target tenant cluster's name"))
        name = ""
    elif not isinstance(name, str):
        problems.append(refused(f"{path}.name", f"must be a string, not {kind(name)}", "quote the name"))
        name = ""
    else:
        _dns_label(f"{path}.name", name, problems)
    project = _optional_text(f"{path}.project", value.get("project"), problems)
    if project is not None:
        _dns_label(f"{path}.project", project, problems)
    return name, project


def _access(path: str, value: object, problems: list[Problem]) -> str | None:
    access = _optional_text(path, value, problems)
    if access is not None and access not in ACCESS_MODES:
        problems.append(
            refused(
                path,
                f"{access!r} is not an access mode (owned or all)",
                "use owned (the default: the client sees only its own objects) or all",
            )
        )
        return None
    return access


def _enabled(path: str, value: object, problems: list[Problem]) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        problems.append(refused(path, f"must be true or false, not {kind(value)}", "write true or false"))
        return False
    return value


def read_entry(key: object, value: object, problems: list[Problem]) -> ProxyEntry | None:
    """One customResources entry with its own problems; None when its key names no group/version."""
    text = str(key)
    path = entry_path(text)
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        why = f"an entry must be a mapping (enabled, targetVirtualCluster, ...), not {kind(value)}"
        problems.append(refused(path, why, "write the entry's fields under its key"))
        return None
    parts = _split_key(text) if isinstance(key, str) else None
    if parts is None:
        problems.append(
            refused(
                path,
                f"{text!r} is not <resource>.<group>/<version> or *.<group>/<version> "
                "(the group is required)",
                "name the resource with its API group and version, e.g. widgets.example.com/v1",
            )
        )
    problems += unknown_fields(path, value, ENTRY_FIELDS)
    enabled = _enabled(f"{path}.enabled", value.get("enabled"), problems)
    name, project = _target(f"{path}.targetVirtualCluster", value.get("targetVirtualCluster"), problems)
    access = _access(f"{path}.accessResources", value.get("accessResources"), problems)
    if parts is None:
        return None
    return ProxyEntry(text, *parts, enabled, name, project, access)


def kind(value: object) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    return f"{type(value).__name__} {value!r}"[:60]
