"""A silenced group's end: Alertmanager notifies nothing for silenced alerts, their resolution included.

So for every firing group that a silence covers (as `bot.alerts.silences.SilenceWatch` last read them),
Alertmanager is asked which of its alerts it still lists (`GET /api/v2/alerts`, filtered by the group's
labels, silenced ones included). The alerts it has not listed for `GONE_POLLS` looks in a row have
resolved (an Alertmanager just restarted lists no alert until Prometheus sends them again, within its resend
delay, 1 min by default: one answer without them proves nothing): the group's last applied
notification is stored again with those alerts resolved, as the webhook Alertmanager would have sent, and
the alert worker applies it like any other (the same resolved message, reply and later logic).

It runs in the watch's loop, never on a post's way; each group is asked at most once per `every`
seconds; Alertmanager down or slow (2 s per group) changes nothing and says so in the log. With several
replicas only the leader asks (the one applying notifications), so one end is stored once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bot.alerts.silences import covering, shown
from bot.alerts.stale_check import ActiveAlerts
from bot.domain.alerts import AlertmanagerWebhook, AlertStatus, parse_webhook
from bot.domain.messages import group_id
from bot.domain.silences import Matcher, Silence, group_labels_from_key
from bot.errors import InputError, UpstreamError
from bot.store.base import AlertStore
from bot.store.models import AlertGroupState, StoredNotification

log = logging.getLogger(__name__)

# Looks (each `every` seconds apart, 15 s by default) an alert must be missing from before it counts as
# ended: 90 s at the default, past Prometheus' resend delay (1 min) and an evaluation interval, so an
# Alertmanager that restarted meanwhile has been sent its firing alerts again.
GONE_POLLS = 6


@dataclass
class SilencedEnds:
    """Resolves the messages of silenced groups whose alerts Alertmanager no longer lists."""

    alertmanager: ActiveAlerts  # asked within `bot.clients.alertmanager.ACTIVE_TIMEOUT` (2 s) per group
    store: AlertStore
    wake: Callable[[], None]  # the alert worker's (`Deps.wake.set`)
    clock: Callable[[], float]
    every: float
    leading: Callable[[], bool] = lambda: True  # whether this replica holds the leader lease
    _asked: dict[tuple[str, str], float] = field(default_factory=dict)
    # The group's last notification when its end was stored: until the worker applied that, not again.
    _stored: dict[tuple[str, str], tuple[int | None, float]] = field(default_factory=dict)
    # When each of a group's alerts was first found missing (channel, group key, fingerprint).
    _missing_since: dict[tuple[str, str, str], float] = field(default_factory=dict)

    async def check(self, silences: Iterable[Silence]) -> None:
        """Ask about each firing group a silence covers (the leader only, each once per `every`)."""
        if not self.leading():
            return
        listed = tuple(silences)
        now = self.clock()
        for group in await self.store.groups(status=AlertStatus.FIRING):
            where = (group.channel, group.group_key)
            if now - self._asked.get(where, float("-inf")) < self.every or not _silenced(group, listed):
                continue
            stored = self._stored.get(where)
            if (
                stored is not None
                and stored[0] == group.facts.last_notification_id
                and now - stored[1] < 10 * self.every
            ):
                continue  # the end stored last time is not applied yet (the worker is busy)
            self._asked[where] = now
            await self._check(group, now)
        self._asked = {k: v for k, v in self._asked.items() if now - v < 2 * self.every}
        self._stored = {k: v for k, v in self._stored.items() if now - v[1] < 10 * self.every}
        asked = set(self._asked)
        self._missing_since = {k: v for k, v in self._missing_since.items() if k[:2] in asked}

    async def _check(self, group: AlertGroupState, now: float) -> None:
        last = group.facts.last_notification_id
        notification = None if last is None else await self.store.notification(last)
        if notification is None:
            log.warning("silenced group %s: its last notification is gone, not checked", group.group_key)
            return
        try:
            matchers = [Matcher(k, v) for k, v in sorted(group_labels_from_key(group.group_key).items())]
            still = {fp for fp, _ in await self.alertmanager.active_alerts(matchers)}
        except (InputError, UpstreamError) as err:
            log.warning("silenced group %s not checked for its end: %s", group_id(group.group_key), err)
            return
        where = (group.channel, group.group_key)
        for fp in still:
            self._missing_since.pop((*where, fp), None)
        missing = {a.fingerprint for a in notification.webhook.firing()} - still
        for fp in missing:
            self._missing_since.setdefault((*where, fp), now)
        grace = (GONE_POLLS - 1) * self.every
        unsure = {fp for fp in missing if now - self._missing_since[(*where, fp)] < grace}
        ended = resolved_copy(notification, still | unsure, datetime.fromtimestamp(now, UTC))
        if ended is None:
            return
        if not self.leading():  # the lease may have passed on while Alertmanager was asked
            return
        raw, webhook = ended
        accepted = await self.store.accept(raw, webhook, now)
        self._stored[where] = (last, now)
        log.info(
            "silenced group %s in %s: alerts no longer listed by Alertmanager, resolved (notification %d)",
            group_id(group.group_key),
            group.channel,
            accepted.id,
        )
        self.wake()


def _silenced(group: AlertGroupState, silences: Sequence[Silence]) -> bool:
    return group.storm is None and shown(covering(silences, group.facts.firing_labels)) is not None


def resolved_copy(
    notification: StoredNotification, listed: set[str], at: datetime
) -> tuple[bytes, AlertmanagerWebhook] | None:
    """The notification again with its firing alerts that Alertmanager no longer lists resolved at `at`
    (as Alertmanager's own webhook would say it); None when every one is still listed."""
    gone = {a.fingerprint for a in notification.webhook.firing()} - listed
    if not gone:
        return None
    doc: dict[str, Any] = json.loads(notification.raw)
    for alert in doc["alerts"]:
        if alert.get("fingerprint") in gone:
            alert["status"], alert["endsAt"] = AlertStatus.RESOLVED.value, at.isoformat()
    # Alerts left out of a truncated notification may still fire: the group resolves once none is listed.
    truncated = bool(doc.get("truncatedAlerts")) and bool(listed)
    firing = truncated or any(a.get("status") == AlertStatus.FIRING.value for a in doc["alerts"])
    doc["status"] = (AlertStatus.FIRING if firing else AlertStatus.RESOLVED).value
    raw = json.dumps(doc).encode()
    return raw, parse_webhook(raw)
