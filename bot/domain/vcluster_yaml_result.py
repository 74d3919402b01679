"""The judgement of one vcluster.yaml: each problem with the step that resolves it, what vCluster would do
with the proxy section, and the routes it would serve. Neutral: `bot.checks.vcluster_yaml` judges the
file; `bot.render.checks_vcluster` lays it out, the fleet reads its routes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ProblemSeverity(StrEnum):
    REFUSED = "refused"  # vCluster's validation refuses the configuration
    WARNING = "warning"  # accepted, but not what the operator most likely wants


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding about one YAML path, with the step that resolves it."""

    severity: ProblemSeverity
    key: str
    message: str
    next_step: str


class ProxyState(StrEnum):
    """What vCluster would do with the proxy section."""

    NOT_CONFIGURED = "not_configured"  # no entries: vCluster starts without the resource proxy
    ALL_DISABLED = "all_disabled"  # entries, none enabled: the proxy does not start
    STARTS = "starts"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class Route:
    """One group/version the proxy would serve: its target and access mode, and the keys that name it."""

    group_version: str
    target: str
    project: str | None  # None: the client's own project
    access: str
    keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class VclusterYamlResult:
    """The judgement of one vcluster.yaml."""

    problems: tuple[Problem, ...]
    proxy: ProxyState
    routes: tuple[Route, ...] = ()

    @property
    def passed(self) -> bool:
        return not any(p.severity is ProblemSeverity.REFUSED for p in self.problems)

    @property
    def verdict(self) -> str:
        return "ok" if self.passed else "refused"
