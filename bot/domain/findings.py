"""Neutral diagnosis results: what is wrong, the numbers behind it, why, and what to do next.

A `Finding` knows nothing about Slack or terminals; renderers turn findings into messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any


class Severity(IntEnum):
    """How bad a finding is; ordered so that `max()` and sorting give the worst first."""

    OK = 0
    INFO = 1
    WARNING = 2
    CRITICAL = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def from_label(cls, text: str) -> Severity | None:
        """The severity named by an alert's `severity` label, or None when it names none of ours."""
        try:
            return cls[text.strip().upper()]
        except KeyError:
            return None


def finding_key(kind: str, target: str, group_version: str | None = None, detail: str | None = None) -> str:
    """A stable id for one condition on one target (and group/version): same condition, same key."""
    parts = [kind, target]
    if group_version is not None:
        parts.append(group_version)
    if detail is not None:
        parts.append(detail)
    return ":".join(parts)


@dataclass(frozen=True, slots=True)
class Finding:
    """One diagnosed condition of one target, with its evidence, likely cause and next step.

    `kind` names the condition (e.g. `no_healthy_peers`), `key` identifies it on this target and
    group/version (for dedup and for noticing changes between two diagnoses). `window_seconds` is the
    window the counters were read over, or None when they are totals since the proxy started.
    `alert` names the guide alert that covers this condition, `reason` the outcome reason it is about.
    """

    severity: Severity
    kind: str
    key: str
    title: str
    evidence: tuple[str, ...]
    cause: str
    next_step: str
    guide_section: str
    target: str
    group_version: str | None = None
    reason: str | None = None
    alert: str | None = None
    window_seconds: float | None = None


def worst(findings: list[Finding] | tuple[Finding, ...]) -> Severity:
    """The worst severity among findings; OK for none."""
    return max((f.severity for f in findings), default=Severity.OK)


def sort_worst_first(findings: list[Finding]) -> list[Finding]:
    """Worst first, then by target, group/version and key, so the order is stable."""
    return sorted(findings, key=lambda f: (-f.severity, f.target, f.group_version or "", f.key))


def finding_dict(f: Finding) -> dict[str, Any]:
    return {
        "severity": f.severity.label,
        "kind": f.kind,
        "title": f.title,
        "evidence": list(f.evidence),
        "cause": f.cause,
        "next_step": f.next_step,
        "group_version": f.group_version,
    }
