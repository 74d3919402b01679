"""One line of `verify` (what, for which cluster, outcome, evidence, fix), the whole result, and the lines
said when Prometheus is not configured or does not answer. Neutral: `bot.checks.verify` reads what they
judge; `bot.render.checks_verify` lays them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from bot.errors import UpstreamError


class Outcome(StrEnum):
    PASS = "pass"  # noqa: S105 (an outcome, not a password)
    FAIL = "fail"
    NOT_CHECKED = "not checked"


@dataclass(frozen=True, slots=True)
class VerifyLine:
    """One verified piece: what, for which cluster, the outcome, the evidence and the fix."""

    key: str
    cluster: str | None
    outcome: Outcome
    summary: str
    evidence: tuple[str, ...] = ()
    fix: str | None = None


@dataclass(frozen=True)
class VerifyResult:
    """Every line of one `verify` run."""

    lines: tuple[VerifyLine, ...]

    @property
    def outcome(self) -> Outcome:
        outcomes = {line.outcome for line in self.lines}
        if Outcome.FAIL in outcomes:
            return Outcome.FAIL
        return Outcome.NOT_CHECKED if Outcome.NOT_CHECKED in outcomes else Outcome.PASS

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASS


def skipped_line(key: str, cluster: str | None, what: str) -> VerifyLine:
    fix = "set `prometheus.url` in the config to the Prometheus that scrapes the client tenant clusters"
    return VerifyLine(key, cluster, Outcome.NOT_CHECKED, f"skipped: no prometheus.url ({what})", (), fix)


def unreachable_line(key: str, cluster: str | None, err: UpstreamError) -> VerifyLine:
    fix = "make Prometheus reachable from the bot (check `prometheus.url`, network policy, auth)"
    return VerifyLine(key, cluster, Outcome.FAIL, "Prometheus did not answer", (str(err),), fix)
