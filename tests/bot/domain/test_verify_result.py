"""One `verify` run's outcome: any failure fails it, anything not checked keeps it from passing."""

from __future__ import annotations

from bot.domain.verify_result import Outcome, VerifyLine, VerifyResult, skipped_line, unreachable_line
from bot.errors import UpstreamError


def _line(outcome: Outcome) -> VerifyLine:
    return VerifyLine("scrape", "team-a", outcome, "summary")


def test_a_failure_outweighs_a_skip_and_a_skip_outweighs_passes() -> None:
    passing, failing, skipped = _line(Outcome.PASS), _line(Outcome.FAIL), _line(Outcome.NOT_CHECKED)
    assert VerifyResult((passing, passing)).passed
    assert VerifyResult((passing, skipped)).outcome is Outcome.NOT_CHECKED
    assert VerifyResult((skipped, failing, passing)).outcome is Outcome.FAIL
    assert not VerifyResult((passing, skipped)).passed


def test_prometheus_lines_say_how_to_fix_a_missing_or_unreachable_prometheus() -> None:
    skipped = skipped_line("rules", None, "rules not checked")
    assert (skipped.outcome, skipped.summary) == (
        Outcome.NOT_CHECKED,
        "skipped: no prometheus.url (rules not checked)",
    )
    assert "prometheus.url" in (skipped.fix or "")
    down = unreachable_line("scrape", "team-a", UpstreamError("Prometheus: connection refused"))
    assert (down.outcome, down.evidence) == (Outcome.FAIL, ("Prometheus: connection refused",))
