"""Stale copies from a lagging Alertmanager replica, through the real pipeline (`tests.fakes.alert_pipeline`).

With Alertmanager in HA a replica that missed its peers' gossip can deliver an older state of a group after
a newer one: the group resolved by replica A, then still firing from replica B. Such a copy shows firing
only alerts seen resolved with the same startsAt: it is not applied, once Alertmanager (the harness' fake,
listing nothing active unless a test fires an alert there) does not list them active. Every copy here
differs from the notifications before it (an identical body is already refused as a duplicate when it is
accepted).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from bot.alerts.storm import StormPolicy
from bot.domain.alerts import AlertmanagerWebhook, AlertStatus
from bot.domain.silences import Matcher
from bot.domain.stale import STALE_WINDOW_SECONDS
from bot.store import AlertGroupState, OutboxKind
from tests.fakes.alert_pipeline import Harness, alert, settings, webhook

CHANNEL = "#alpha-alerts"
GROUP = '{}:{alertname="ResourceProxyNoHealthyPeers"}'
LAGGING = "http://alertmanager-1.alertmanager:9093"
REFIRED_AT = "2023-11-14T23:30:00Z"  # after the first episode's endsAt (22:12): a new episode


def alerts(
    *, firing: tuple[str, ...] = (), resolved: tuple[str, ...] = (), starts: str = ""
) -> list[dict[str, Any]]:
    found = [alert(fp) for fp in firing] + [alert(fp, resolved=True) for fp in resolved]
    for one in found:
        one["labels"]["pod"] = f"vc-{one['fingerprint']}"  # one alert per client replica
        if starts and one["status"] == "firing":
            one["startsAt"] = starts
    return found


def from_replica(body: list[dict[str, Any]], external_url: str = LAGGING, group: str = GROUP) -> bytes:
    raw = json.loads(webhook(body, group=group))
    raw["externalURL"] = external_url
    return json.dumps(raw).encode()


async def group_state(harness: Harness, group: str = GROUP) -> AlertGroupState:
    state = await harness.store.get_group(CHANNEL, group)
    assert state is not None
    return state


async def resolved_group(harness: Harness) -> int:
    """A group of two alerts posted, then resolved by replica A: the outbox rows so far."""
    await harness.run(webhook(alerts(firing=("a1", "a2"))))
    harness.clock.now += 60
    await harness.run(webhook(alerts(resolved=("a1", "a2"))))
    assert (await group_state(harness)).status is AlertStatus.RESOLVED
    return len(await harness.items())


async def test_a_stale_firing_copy_after_the_resolve_is_not_applied(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    before = await resolved_group(harness)
    resolved = await group_state(harness)
    harness.clock.now += 20
    caplog.set_level(logging.INFO, logger="bot.alerts.stale_check")
    # Replica B saw a2 resolve but not a1 when it flushed: its copy is older than what A sent.
    await harness.run(from_replica(alerts(firing=("a1",), resolved=("a2",))))
    assert len(await harness.items()) == before  # no Slack operation at all
    after = await group_state(harness)
    assert (after.status, after.firing_fingerprints, after.resolved_at) == (
        AlertStatus.RESOLVED,
        frozenset(),
        resolved.resolved_at,
    )
    assert after.facts.flaps == resolved.facts.flaps  # no "firing again", no flap counted
    assert after.facts.last_notification != resolved.facts.last_notification  # recorded as handled
    assert await harness.store.pending_count() == 0
    [line] = [r for r in caplog.records if "stale copy" in r.getMessage()]
    assert line.levelno == logging.INFO
    for named in (GROUP, CHANNEL, LAGGING):  # the group and the replica hint (its externalURL)
        assert named in line.getMessage()


async def test_the_replica_hint_is_logged_without_a_password_in_its_url(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    await resolved_group(harness)
    caplog.set_level(logging.INFO, logger="bot.alerts.stale_check")
    await harness.run(from_replica(alerts(firing=("a1",), resolved=("a2",)), "http://am:hunter22@am-1:9093"))
    [line] = [r.getMessage() for r in caplog.records if "stale copy" in r.getMessage()]
    assert "hunter22" not in line
    assert "am-1:9093" in line


async def test_a_replayed_stale_copy_is_skipped_also_once_the_window_passed(harness: Harness) -> None:
    before = await resolved_group(harness)
    await harness.accept(from_replica(alerts(firing=("a1",), resolved=("a2",))))
    [stale] = await harness.store.pending()
    await harness.pipeline.process(stale)
    # A crash before it was closed: it runs again later, when the same startsAt would no longer be stale.
    harness.clock.now += STALE_WINDOW_SECONDS + 60
    await harness.pipeline.process(stale)
    assert len(await harness.items()) == before
    assert (await group_state(harness)).status is AlertStatus.RESOLVED


async def test_a_real_refire_with_a_new_starts_at_is_applied(harness: Harness) -> None:
    before = await resolved_group(harness)
    harness.clock.now += 20
    await harness.run(from_replica(alerts(firing=("a1",), resolved=("a2",), starts=REFIRED_AT)))
    update, edit, reply = (await harness.items())[before:]
    assert (update.kind, edit.kind, reply.kind) == (
        OutboxKind.UPDATE,
        OutboxKind.REPLY_EDIT,
        OutboxKind.REPLY,
    )
    assert update.payload["text"].startswith("FIRING")
    assert reply.payload["text"] == "1 new"
    state = await group_state(harness)
    assert (state.status, state.firing_fingerprints) == (AlertStatus.FIRING, frozenset({"a1"}))
    assert len(state.facts.flaps.refired_at) == 1


async def test_an_alert_never_seen_resolved_is_applied(harness: Harness) -> None:
    before = await resolved_group(harness)
    await harness.run(from_replica(alerts(firing=("a3",), resolved=("a1", "a2"))))
    update = (await harness.items())[before]
    assert update.kind is OutboxKind.UPDATE
    assert update.payload["text"].startswith("FIRING")
    assert (await group_state(harness)).firing_fingerprints == {"a3"}


async def test_the_same_starts_at_long_after_the_resolve_is_applied_as_a_refire(harness: Harness) -> None:
    # Alertmanager ended the alert itself (Prometheus cut off past its resend window); Prometheus, back,
    # sends it with the startsAt it had: a real re-fire, past the delivery lag a stale copy can have.
    before = await resolved_group(harness)
    harness.clock.now += STALE_WINDOW_SECONDS + 1
    await harness.run(from_replica(alerts(firing=("a1",), resolved=("a2",))))
    update = (await harness.items())[before]
    assert (update.kind, update.payload["text"].startswith("FIRING")) == (OutboxKind.UPDATE, True)
    assert (await group_state(harness)).status is AlertStatus.FIRING


async def test_a_mixed_copy_is_applied_but_its_stale_alerts_stay_resolved(harness: Harness) -> None:
    before = await resolved_group(harness)
    # a1 firing is B's stale view; a3 is new: the copy is applied, a1 shown resolved as A reported it.
    await harness.run(from_replica(alerts(firing=("a1", "a3"), resolved=("a2",))))
    update, edit, reply = (await harness.items())[before:]
    assert update.payload["text"].startswith("FIRING")
    assert "1 alert firing, 2 resolved" in json.dumps(update.payload)
    assert "pod `vc-a1` · resolved" in json.dumps(edit.payload, ensure_ascii=False)
    assert "pod `vc-a3` · firing" in json.dumps(edit.payload, ensure_ascii=False)
    assert reply.payload["text"] == "1 new"  # a3 only
    state = await group_state(harness)
    assert state.firing_fingerprints == {"a3"}
    # Once a3 resolves too, the group resolves: a1 was never taken back as firing.
    await harness.run(webhook(alerts(resolved=("a1", "a2", "a3"))))
    assert (await group_state(harness)).status is AlertStatus.RESOLVED


async def test_a_stale_copy_of_a_firing_group_leaves_its_other_alerts_as_they_are(harness: Harness) -> None:
    await harness.run(webhook(alerts(firing=("a1", "a2"))))
    await harness.run(webhook(alerts(firing=("a2",), resolved=("a1",))))
    before = len(await harness.items())
    await harness.run(from_replica(alerts(firing=("a1",))))  # B's copy from before a1 resolved
    assert len(await harness.items()) == before
    state = await group_state(harness)
    assert (state.status, state.firing_fingerprints) == (AlertStatus.FIRING, frozenset({"a2"}))


# -- Alertmanager asked before a copy is skipped ---------------------------------------------------------


def fire_in_alertmanager(harness: Harness, fingerprint: str, raw: bytes) -> None:
    """Alertmanager lists the alert active with the labels and startsAt the copy shows."""
    [shown] = [a for a in AlertmanagerWebhook.model_validate_json(raw).alerts if a.fingerprint == fingerprint]
    harness.alertmanager.fire(fingerprint, shown.labels, shown.starts_at)


async def test_a_copy_alertmanager_lists_active_is_a_real_refire_and_applied(harness: Harness) -> None:
    # Prometheus was cut off past its resend window: Alertmanager resolved a1 itself, then fired it again
    # with the same startsAt when Prometheus came back, within the stale window.
    before = await resolved_group(harness)
    harness.clock.now += 20
    copy = from_replica(alerts(firing=("a1",), resolved=("a2",)))
    fire_in_alertmanager(harness, "a1", copy)
    await harness.run(copy)
    update, edit, reply = (await harness.items())[before:]
    assert (update.kind, edit.kind, reply.kind) == (
        OutboxKind.UPDATE,
        OutboxKind.REPLY_EDIT,
        OutboxKind.REPLY,
    )
    assert update.payload["text"].startswith("FIRING")
    state = await group_state(harness)
    assert (state.status, state.firing_fingerprints) == (AlertStatus.FIRING, frozenset({"a1"}))
    # Asked once, for the alerts' common labels (the group's among them).
    [asked] = harness.alertmanager.asked
    assert Matcher("alertname", "ResourceProxyNoHealthyPeers") in asked
    assert Matcher("pod", "vc-a1") in asked


async def test_a_copy_alertmanager_lists_with_another_starts_at_is_skipped(harness: Harness) -> None:
    before = await resolved_group(harness)
    copy = from_replica(alerts(firing=("a1",), resolved=("a2",)))
    fire_in_alertmanager(harness, "a1", from_replica(alerts(firing=("a1",), starts=REFIRED_AT)))
    await harness.run(copy)  # the episode Alertmanager fires now is a later one: this copy is the old one
    assert len(await harness.items()) == before
    assert (await group_state(harness)).status is AlertStatus.RESOLVED


async def test_a_stale_copy_is_skipped_without_reading_any_live_state(harness: Harness) -> None:
    await resolved_group(harness)
    reads = len(harness.live.reads)
    harness.live.gate = asyncio.Event()  # a live read would hang the notification
    await asyncio.wait_for(harness.run(from_replica(alerts(firing=("a1",), resolved=("a2",)))), timeout=5)
    assert len(harness.live.reads) == reads
    assert await harness.store.pending_count() == 0


@pytest.mark.parametrize("down", ["timed out", "could not connect (ConnectError)", "HTTP 500: boom"])
async def test_a_copy_alertmanager_cannot_be_asked_about_is_applied_with_a_warning(
    harness: Harness, caplog: pytest.LogCaptureFixture, down: str
) -> None:
    before = await resolved_group(harness)
    harness.alertmanager.down = down
    caplog.set_level(logging.INFO, logger="bot.alerts.stale_check")
    await harness.run(from_replica(alerts(firing=("a1",), resolved=("a2",))))
    update = (await harness.items())[before]
    assert (update.kind, update.payload["text"].startswith("FIRING")) == (OutboxKind.UPDATE, True)
    assert (await group_state(harness)).firing_fingerprints == {"a1"}
    [line] = [r for r in caplog.records if r.name == "bot.alerts.stale_check"]
    assert line.levelno == logging.WARNING
    for named in (GROUP, CHANNEL, down):
        assert named in line.getMessage()


async def test_without_alertmanager_configured_a_suspected_copy_is_applied_with_a_warning(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    harness.pipeline = harness.make_pipeline(settings(), alertmanager=False)
    before = await resolved_group(harness)
    caplog.set_level(logging.INFO, logger="bot.alerts.stale_check")
    await harness.run(from_replica(alerts(firing=("a1", "a3"), resolved=("a2",))))
    update, edit, _ = (await harness.items())[before:]
    assert (update.kind, edit.kind) == (OutboxKind.UPDATE, OutboxKind.REPLY_EDIT)
    assert "pod `vc-a1` · firing" in json.dumps(edit.payload, ensure_ascii=False)  # not shown resolved
    assert (await group_state(harness)).firing_fingerprints == {"a1", "a3"}
    [line] = [r for r in caplog.records if r.name == "bot.alerts.stale_check"]
    assert (line.levelno, "alertmanager.url is not set" in line.getMessage()) == (logging.WARNING, True)


async def test_a_mixed_copy_shows_firing_what_alertmanager_lists_active(harness: Harness) -> None:
    before = await resolved_group(harness)
    copy = from_replica(alerts(firing=("a1", "a3"), resolved=("a2",)))
    fire_in_alertmanager(harness, "a1", copy)
    await harness.run(copy)
    edit = (await harness.items())[before + 1]
    assert "pod `vc-a1` · firing" in json.dumps(edit.payload, ensure_ascii=False)
    assert (await group_state(harness)).firing_fingerprints == {"a1", "a3"}


async def test_no_copy_suspected_no_alertmanager_asked(harness: Harness) -> None:
    await harness.run(webhook(alerts(firing=("a1", "a2"))))
    await harness.run(from_replica(alerts(firing=("a1",), resolved=("a2",), starts=REFIRED_AT)))
    assert harness.alertmanager.asked == []


# -- incidents and storms go through the same check ------------------------------------------------------

UNAVAILABLE = "ResourceProxyTargetUnavailable"
MEMBER = f'{{}}:{{alertname="{UNAVAILABLE}", cluster="alpha", target="team-a/db"}}'
FIRST = '{}:{alertname="ResourceProxyNoHealthyPeers", cluster="alpha", target="team-a/db"}'


def member_alerts(*, firing: tuple[str, ...] = (), resolved: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    found = alerts(firing=firing, resolved=resolved)
    for one in found:
        one["labels"]["alertname"] = UNAVAILABLE
    return found


async def test_a_stale_copy_of_an_incident_member_changes_nothing(harness: Harness) -> None:
    await harness.run(webhook(alerts(firing=("a1",)), group=FIRST))
    await harness.run(webhook(member_alerts(firing=("b1", "b2")), group=MEMBER))
    member = await group_state(harness, MEMBER)
    assert member.facts.incident == FIRST  # it joined the incident's message
    await harness.run(webhook(member_alerts(resolved=("b1", "b2")), group=MEMBER))
    before = len(await harness.items())
    await harness.run(from_replica(member_alerts(firing=("b1",), resolved=("b2",)), group=MEMBER))
    assert len(await harness.items()) == before  # neither the incident's message nor the member's reply
    member = await group_state(harness, MEMBER)
    assert (member.status, member.facts.incident) == (AlertStatus.RESOLVED, FIRST)


def storm_body(i: int, *, firing: tuple[str, ...] = (), resolved: tuple[str, ...] = ()) -> bytes:
    found = [alert(f"{fp}{i}", target=f"team-{i}/db") for fp in firing]
    found += [alert(f"{fp}{i}", target=f"team-{i}/db", resolved=True) for fp in resolved]
    return from_replica(found, group=f'{{}}:{{target="team-{i}/db"}}')


async def test_a_stale_copy_of_a_group_in_a_storm_changes_nothing(harness: Harness) -> None:
    policy = StormPolicy(groups=2)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for i in range(4):
        await harness.run(storm_body(i, firing=("s", "t")))
    await harness.settle(policy.first_within_seconds)
    for i in range(4):
        await harness.run(storm_body(i, resolved=("s", "t")))
    await harness.settle()
    group = await group_state(harness, '{}:{target="team-0/db"}')
    assert group.facts.storm_thread is not None
    storm = await group_state(harness, group.facts.storm_thread)
    assert storm.status is AlertStatus.RESOLVED
    before = len(await harness.items())
    await harness.run(storm_body(0, firing=("s",), resolved=("t",)))
    await harness.settle()
    assert len(await harness.items()) == before  # no summary edit, no new table
    assert (await group_state(harness, group.facts.storm_thread)).status is AlertStatus.RESOLVED
    assert (await group_state(harness, '{}:{target="team-0/db"}')).status is AlertStatus.RESOLVED
