"""What the logs check found of one target: the client control plane's explained log lines, per pod.
Neutral: `bot.checks.logs` reads them; `bot.render.checks_logs` lays them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.domain.findings import Severity
from bot.domain.log_reference import LogEvidence


@dataclass(frozen=True, slots=True)
class LogsResult:
    """The logs check of one target: the evidence and the cluster it was read for."""

    cluster: str
    evidence: LogEvidence

    @property
    def passed(self) -> bool:
        """Every pod read, and no line worse than INFO."""
        return self.evidence.complete and self.evidence.severity < Severity.WARNING

    def as_dict(self) -> dict[str, Any]:
        ev = self.evidence
        return {
            "check": "logs",
            "passed": self.passed,
            "verdict": ev.severity.label if ev.complete else "incomplete",
            "target": ev.target,
            "cluster": self.cluster,
            "namespace": ev.namespace,
            "scope": ev.scope,
            "unavailable": ev.unavailable,
            "pods": [{"pod": p.pod, "lines": p.lines, "error": p.error} for p in ev.pods],
            "matches": [
                {
                    "pod": m.pod,
                    "message": m.reference.label,
                    "key": m.reference.key,
                    "severity": m.reference.severity.label,
                    "count": m.count,
                    "first_at": m.first_at.isoformat() if m.first_at else None,
                    "last_at": m.last_at.isoformat() if m.last_at else None,
                    "meaning": m.reference.meaning,
                    "action": m.reference.action,
                    "details": list(m.details),
                    "placeholder_host": m.placeholder_host,
                    "last_line": m.last_line,
                }
                for m in ev.matches
            ],
        }
