"""Config mappings for settings tests: a target, a cluster, a whole config; what pydantic refuses, where."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from config.fields import LocatedProblems
from config.settings import Settings

# A kubeconfig the Kubernetes client loads: one cluster, one user, context `prod` (also the current one).
KUBECONFIG: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
    "users": [{"name": "u", "user": {"token": "t"}}],
    "contexts": [{"name": "prod", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "prod",
}


def target(name: str = "payments/ledger", **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": name,
        "group_versions": ["ledger.example.com/v1"],
        "probe": {"group_version": "ledger.example.com/v1", "resource": "accounts", "namespace": "default"},
    }
    data.update(overrides)
    return data


def cluster(name: str = "prod", **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": name,
        "kubeconfig": f"{name}.kubeconfig",
        "match": {"cluster": name},
        "targets": [target(f"{name}/ledger")],
    }
    data.update(overrides)
    return data


def config(**sections: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"slack": {"default_channel": "#alerts"}, "clusters": [cluster()]}
    data.update(sections)
    return copy.deepcopy(data)


def problems(data: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """Every (location, message) pydantic reports, with LocatedProblems expanded."""
    with pytest.raises(ValidationError) as caught:
        Settings.model_validate(data)
    found: list[tuple[tuple[str | int, ...], str]] = []
    for error in caught.value.errors():
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, LocatedProblems):
            found += [((*error["loc"], *loc), message) for loc, message in cause.problems]
        else:
            found.append((tuple(error["loc"]), error["msg"]))
    return found


def locations(data: dict[str, Any]) -> set[tuple[str | int, ...]]:
    return {loc for loc, _ in problems(data)}


PROBE = ("clusters", 0, "targets", 0, "probe")


# One hand-listed client as the `clusters:` of a config file (kubeconfig `prod.kubeconfig`, beside it).
LISTED_CLIENT_YAML = """\
  - name: prod
    kubeconfig: prod.kubeconfig
    match: {cluster: prod}
    targets:
      - name: payments/ledger
        group_versions: [ledger.example.com/v1]
        probe: {group_version: ledger.example.com/v1, resource: accounts}
"""
