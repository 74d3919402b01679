"""The escalation's pure rules: which alerts escalate, the deadline, and what a due deadline becomes."""

from __future__ import annotations

import pytest

from bot.domain.escalation import EscalationOutcome, deadline, escalates, outcome_at_deadline


def test_a_message_escalates_when_one_of_its_alerts_has_a_listed_severity() -> None:
    alerts = [{"alertname": "A", "severity": "warning"}, {"alertname": "B", "severity": "critical"}]
    assert escalates(alerts, ("critical",))
    assert not escalates(alerts[:1], ("critical",))
    assert not escalates([{"alertname": "C"}], ("critical",)), "no severity label: does not escalate"
    assert not escalates(alerts, ())
    assert not escalates([], ("critical",))


def test_the_deadline_is_after_seconds_after_the_post_was_seen() -> None:
    assert deadline(1000.0, 600.0) == 1600.0


@pytest.mark.parametrize(
    ("same_episode", "still_escalates", "acknowledged", "silenced", "outcome"),
    [
        (True, True, False, False, EscalationOutcome.SENT),
        (True, True, True, False, EscalationOutcome.ACKNOWLEDGED),
        (True, True, True, True, EscalationOutcome.ACKNOWLEDGED),
        (True, True, False, True, EscalationOutcome.SILENCED),
        (False, True, False, False, EscalationOutcome.ENDED),
        (True, False, False, False, EscalationOutcome.ENDED),
    ],
)
def test_a_due_deadline_is_sent_only_while_nobody_has_the_firing_episode(
    same_episode: bool, still_escalates: bool, acknowledged: bool, silenced: bool, outcome: EscalationOutcome
) -> None:
    assert (
        outcome_at_deadline(
            same_episode=same_episode,
            still_escalates=still_escalates,
            acknowledged=acknowledged,
            silenced=silenced,
        )
        is outcome
    )
