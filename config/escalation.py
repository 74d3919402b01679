"""Escalation: a firing alert nobody acknowledged or silenced in time gets its on-call handle mentioned.

The top-level `escalation:` section, and the per-cluster `clusters[].escalation:` whose keys, where set,
replace the top level's for that cluster's alerts (`Settings.escalation_for`).
"""

from __future__ import annotations

from pydantic import Field

from config.fields import Duration, SlackMention, StrictModel

DEFAULT_AFTER = 600.0
DEFAULT_SEVERITIES = ("critical",)


class EscalationSettings(StrictModel):
    """When and whom an unowned firing alert is escalated to: one broadcast thread reply per episode."""

    # Neither acknowledged nor silenced this long after the message's first post (30s, 10m, 1h).
    after: Duration = DEFAULT_AFTER
    # Who is mentioned: a user group `<!subteam^S…>` or a user `<@U…>`; "" turns escalation off.
    mention: SlackMention = ""
    # The alerts' `severity` labels that escalate (a message escalates when one of its alerts has one).
    severities: tuple[str, ...] = Field(default=DEFAULT_SEVERITIES)

    @property
    def enabled(self) -> bool:
        return bool(self.mention) and bool(self.severities)


class EscalationOverride(StrictModel):
    """A cluster's `escalation:`: each key set replaces the top level's for this cluster's alerts."""

    after: Duration | None = None
    mention: SlackMention | None = None
    severities: tuple[str, ...] | None = None

    def over(self, base: EscalationSettings) -> EscalationSettings:
        """The top level's settings with this cluster's keys laid over them."""
        return base.model_copy(update=self.model_dump(exclude_none=True))
