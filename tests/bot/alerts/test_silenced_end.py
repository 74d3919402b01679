"""A silenced group's end: the alerts Alertmanager no longer lists are stored resolved, as its webhook."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest

from bot.alerts.silenced_end import GONE_POLLS, SilencedEnds
from bot.domain.alerts import AlertmanagerWebhook, AlertStatus, parse_webhook
from bot.domain.silences import Matcher, Silence
from bot.errors import UpstreamError
from bot.store.models import Accepted, AlertGroupState, GroupFacts, StoredNotification
from tests.bot.domain import alertmanager_samples as samples

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
LABELS = tuple(
    {"alertname": "ResourceProxyNoHealthyPeers", "target": "team-a/billing", "group_version": gv}
    for gv in ("a.example.com/v1", "b.example.com/v1")
)
TARGET = Matcher("target", "team-a/billing")


def silence(*matchers: Matcher, state: str = "active") -> Silence:
    return Silence("s1", state, matchers, NOW, NOW + timedelta(hours=2), "ops", "drain")


def firing_group() -> AlertGroupState:
    facts = GroupFacts(firing_labels=LABELS, last_notification_id=1)
    return AlertGroupState("#alerts", samples.GROUP_KEY, AlertStatus.FIRING, ts="1.1", facts=facts)


@dataclass
class Alertmanager:
    listed: list[str] = field(default_factory=list)
    error: Exception | None = None
    asked: list[tuple[Matcher, ...]] = field(default_factory=list)

    async def active_alerts(self, matchers: Sequence[Matcher]) -> list[tuple[str, datetime]]:
        self.asked.append(tuple(matchers))
        if self.error is not None:
            raise self.error
        return [(fp, NOW) for fp in self.listed]


@dataclass
class Store:
    group: AlertGroupState
    accepted: list[AlertmanagerWebhook] = field(default_factory=list)

    async def groups(
        self, channel: str | None = None, status: AlertStatus | None = None
    ) -> list[AlertGroupState]:
        return [self.group] if status in (None, self.group.status) else []

    async def notification(self, notification_id: int) -> StoredNotification | None:
        if notification_id not in (1, 2):
            return None
        webhook = parse_webhook(samples.FIRING)
        return StoredNotification(notification_id, webhook.identity(), 0.0, samples.FIRING, webhook)

    async def accept(self, raw: bytes, webhook: AlertmanagerWebhook, received_at: float) -> Accepted:
        assert parse_webhook(raw) == webhook, "stored as the webhook it is"
        self.accepted.append(webhook)
        return Accepted(len(self.accepted) + 1, duplicate=False)


@dataclass
class Clock:
    now: float = NOW.timestamp()

    def __call__(self) -> float:
        return self.now


def ends(am: Alertmanager, store: Store, clock: Clock, woken: list[int]) -> SilencedEnds:
    return SilencedEnds(am, store, lambda: woken.append(1), clock, every=15.0)


async def looks_until_gone(watch: SilencedEnds, clock: Clock, silences: list[Silence]) -> None:
    """`GONE_POLLS` looks, one every 15 s: an alert missing from each of them counts as ended at the last."""
    for _ in range(GONE_POLLS - 1):
        await watch.check(silences)
        clock.now += 15.0
    await watch.check(silences)


async def test_a_silenced_group_whose_alerts_are_gone_is_stored_resolved_and_the_worker_woken() -> None:
    am, store, clock = Alertmanager(), Store(firing_group()), Clock()
    woken: list[int] = []
    await looks_until_gone(ends(am, store, clock, woken), clock, [silence(TARGET)])
    assert am.asked[0] == (Matcher("alertname", "ResourceProxyNoHealthyPeers"), TARGET), "the group's labels"
    assert len(am.asked) == GONE_POLLS
    [webhook] = store.accepted
    assert webhook.status is AlertStatus.RESOLVED
    at = NOW + timedelta(seconds=15.0 * (GONE_POLLS - 1))
    assert [(a.fingerprint, a.status, a.ends_at) for a in webhook.alerts] == [
        (samples.FINGERPRINT_A, AlertStatus.RESOLVED, at),
        (samples.FINGERPRINT_B, AlertStatus.RESOLVED, at),
    ]
    assert webhook.group_key == samples.GROUP_KEY
    assert woken == [1]


async def test_an_alert_still_listed_keeps_firing_and_nothing_listed_gone_changes_nothing() -> None:
    am, store, clock = Alertmanager([samples.FINGERPRINT_B]), Store(firing_group()), Clock()
    woken: list[int] = []
    watch = ends(am, store, clock, woken)
    await looks_until_gone(watch, clock, [silence(TARGET)])
    [webhook] = store.accepted
    assert webhook.status is AlertStatus.FIRING
    assert [a.fingerprint for a in webhook.firing()] == [samples.FINGERPRINT_B]
    am.listed = [samples.FINGERPRINT_A, samples.FINGERPRINT_B]
    clock.now += 15.0
    await watch.check([silence(TARGET)])
    assert len(store.accepted) == 1, "every alert listed: nothing stored"


async def test_unsilenced_groups_are_not_asked_about_and_each_is_asked_once_per_interval() -> None:
    am = Alertmanager([samples.FINGERPRINT_A, samples.FINGERPRINT_B])
    store, clock = Store(firing_group()), Clock()
    woken: list[int] = []
    watch = ends(am, store, clock, woken)
    await watch.check([silence(Matcher("target", "other/x")), silence(TARGET, state="expired")])
    assert am.asked == [], "Alertmanager notifies about unsilenced alerts itself"
    await watch.check([silence(TARGET)])
    await watch.check([silence(TARGET)])
    clock.now += 14.0
    await watch.check([silence(TARGET)])
    assert len(am.asked) == 1, "cached for the interval"
    clock.now += 1.0
    await watch.check([silence(TARGET)])
    assert len(am.asked) == 2


async def test_alertmanager_down_changes_nothing_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    am = Alertmanager(
        error=UpstreamError("Alertmanager at http://am failed listing active alerts: timed out")
    )
    store = Store(firing_group())
    woken: list[int] = []
    with caplog.at_level(logging.WARNING):
        await ends(am, store, Clock(), woken).check([silence(TARGET)])
    assert (store.accepted, woken) == ([], [])
    assert "timed out" in caplog.text


async def test_only_the_leader_asks() -> None:
    am, store = Alertmanager(), Store(firing_group())
    watch = SilencedEnds(am, store, lambda: None, Clock(), 15.0, leading=lambda: False)
    await watch.check([silence(TARGET)])
    assert (am.asked, store.accepted) == ([], [])


async def test_an_end_not_applied_yet_is_not_stored_again() -> None:
    am, store, clock = Alertmanager(), Store(firing_group()), Clock()
    woken: list[int] = []
    watch = ends(am, store, clock, woken)
    await looks_until_gone(watch, clock, [silence(TARGET)])
    clock.now += 15.0
    await watch.check([silence(TARGET)])
    assert len(store.accepted) == 1, "the worker has not applied it: the group still names the same one"
    store.group = replace(store.group, facts=replace(store.group.facts, last_notification_id=2))
    clock.now += 15.0
    await watch.check([silence(TARGET)])
    assert len(am.asked) == GONE_POLLS + 1


async def test_one_answer_without_the_alerts_resolves_nothing_an_alertmanager_just_restarted_lists_none() -> (
    None
):
    # Alertmanager keeps alerts in memory: restarted, it lists none until Prometheus sends them again (within
    # its resend delay), while the silences, kept on disk, still mute them.
    am, store, clock = Alertmanager(), Store(firing_group()), Clock()
    woken: list[int] = []
    watch = ends(am, store, clock, woken)
    for _ in range(GONE_POLLS - 1):
        await watch.check([silence(TARGET)])
        clock.now += 15.0
    assert (store.accepted, woken) == ([], []), "missing from fewer looks than GONE_POLLS: not ended"
    am.listed = [samples.FINGERPRINT_A, samples.FINGERPRINT_B]  # Prometheus sent them again
    await watch.check([silence(TARGET)])
    am.listed = []
    for _ in range(GONE_POLLS - 1):
        clock.now += 15.0
        await watch.check([silence(TARGET)])
    assert store.accepted == [], "listed again in between: missing counts from the next look"
    clock.now += 15.0
    await watch.check([silence(TARGET)])
    [webhook] = store.accepted
    assert webhook.status is AlertStatus.RESOLVED
