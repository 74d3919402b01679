"""Whether a share judged a stale copy is one: Alertmanager is asked before anything is skipped.

`bot.alerts.state.staleness` takes a firing alert seen resolved with the same startsAt, within the stale
window, as an older copy from a lagging Alertmanager replica. A real re-fire can look the same: when
Prometheus cannot reach Alertmanager past its resend window, Alertmanager resolves the alert itself, and
fires it again with the same startsAt when Prometheus is back; dropped, the message would say RESOLVED
while the alert fires, and Alertmanager sends nothing new until its repeat interval (hours). So before an
alert is taken as stale the configured Alertmanager is asked which of those alerts it lists active: one it
lists with that fingerprint and startsAt fires, and is applied. When it cannot be asked (not configured,
unreachable, timing out, refusing), nothing is taken as stale: a firing is never dropped on a guess (a
flip-back to firing is the lesser harm, set right by the next notification).

The share is judged before it is enriched (its alerts' states are all the judgment needs), so a copy
skipped costs no live read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.alerts.grouping import Reading, Routed, build
from bot.alerts.prom_enrich import PromRound
from bot.alerts.state import ChannelGroup, handled, staleness
from bot.domain.alert_summary import common_labels
from bot.domain.alerts import AlertStatus
from bot.domain.messages import LiveRead
from bot.domain.redact import redact
from bot.domain.silences import Matcher
from bot.errors import UpstreamError
from bot.store.models import AlertGroupState, StoredNotification
from config.settings import Settings

log = logging.getLogger(__name__)

Listed = frozenset[tuple[str, datetime]]


class ActiveAlerts(Protocol):
    """The alerts an Alertmanager lists active, as `(fingerprint, startsAt)` (`AlertmanagerClient` is
    one); a failure raises `UpstreamError`."""

    async def active_alerts(self, matchers: Sequence[Matcher]) -> list[tuple[str, datetime]]: ...


@dataclass(frozen=True)
class StaleJudgement:
    """One channel's share of a notification judged: skipped (`skip`), or applied through `on`."""

    prev: AlertGroupState | None
    now: float
    listed: Listed | None  # what Alertmanager lists active; None: nothing in the share is taken as stale
    skip: AlertGroupState | None = None  # the group's state to save instead of applying the share

    def on(self, group: ChannelGroup) -> ChannelGroup:
        """The enriched share, its stale alerts (if any) shown resolved as the group saw them."""
        if self.listed is None:
            return group
        return staleness(group, self.prev, self.now, self.listed).group


class StaleCheck:
    """Judges each share of a notification against its group's resolved alerts and Alertmanager."""

    def __init__(
        self, settings: Settings, alertmanager: ActiveAlerts | None, clock: Callable[[], float]
    ) -> None:
        self._settings = settings
        self._alertmanager = alertmanager
        self._clock = clock

    async def judge(
        self,
        notification: StoredNotification,
        channel: str,
        routed: list[Routed],
        prev: AlertGroupState | None,
    ) -> StaleJudgement:
        now = self._clock()
        if prev is None or not _names_a_resolved_alert(notification, prev):
            return StaleJudgement(prev, now, None)  # the common case: nothing to build or ask
        group = _bare(notification, channel, routed, self._settings)
        first = staleness(group, prev, now)
        if not first.stale:
            return StaleJudgement(prev, now, None)
        listed = await self._listed(group, first.stale)
        if listed is None or not staleness(group, prev, now, listed).whole:
            return StaleJudgement(prev, now, listed)
        url = redact(group.view.external_url)
        log.info(
            "group %r in %s: a stale copy from %r (Alertmanager lists its alerts not active), not applied",
            prev.group_key,
            channel,
            url,
        )
        return StaleJudgement(prev, now, listed, skip=handled(prev, notification.identity, notification.id))

    async def _listed(self, group: ChannelGroup, stale: frozenset[str]) -> Listed | None:
        """What Alertmanager lists active of the group's alerts; None (logged) when it cannot say."""
        if self._alertmanager is None:
            why = "alertmanager.url is not set"
        else:
            labels = common_labels(group.by_fingerprint[fp].labels for fp in sorted(stale))
            matchers = [Matcher(name, value) for name, value in sorted(labels.items())]
            try:
                return frozenset(await self._alertmanager.active_alerts(matchers))
            except UpstreamError as err:
                why = str(err)
        log.warning(
            "group %r in %s: %d alert(s) fire with the startsAt they resolved with and Alertmanager could "
            "not say whether it lists them active (%s): applied, not skipped as a stale copy",
            group.view.group_key,
            group.channel,
            len(stale),
            why,
        )
        return None


def _names_a_resolved_alert(notification: StoredNotification, prev: AlertGroupState) -> bool:
    """Whether any alert the notification shows firing is one the group saw resolved (by fingerprint)."""
    seen = prev.facts.seen_resolved.alerts
    return any(a.fingerprint in seen for a in notification.webhook.alerts if a.status is AlertStatus.FIRING)


def _bare(
    notification: StoredNotification, channel: str, routed: list[Routed], settings: Settings
) -> ChannelGroup:
    """The share as staleness judges it: its alerts and their states, nothing read for them."""
    unread = Reading(None, None, LiveRead.missing("not read"))
    readings = {r.source: unread for r in routed if r.source is not None}
    return build(notification.webhook, channel, routed, readings, PromRound(None, settings))
