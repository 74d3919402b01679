"""Alert group lifecycle per channel: saved, read back, replaced, listed."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

from bot.domain.alert_summary import WorstSeen
from bot.domain.alerts import AlertStatus
from bot.domain.findings import Severity
from bot.domain.incident import Cause, CauseKey, Flaps
from bot.domain.stale import Ended, SeenResolved
from bot.domain.storm import StormEntry
from bot.store import AlertGroupState, Store
from bot.store.models import GroupFacts, StormRecord, StormShare
from tests.bot.domain import alertmanager_samples as samples
from tests.bot.store.conftest import FakeClock, Raw

FIRING = AlertGroupState(
    channel="C0ALERTS",
    group_key=samples.GROUP_KEY,
    status=AlertStatus.FIRING,
    first_firing_at=50.0,
    firing_fingerprints=frozenset({samples.FINGERPRINT_A, samples.FINGERPRINT_B}),
)


async def test_an_unknown_group_is_none(store: Store) -> None:
    assert await store.get_group("C0ALERTS", samples.GROUP_KEY) is None


async def test_a_saved_group_reads_back_with_the_time_it_was_saved(store: Store, clock: FakeClock) -> None:
    saved = await store.save_group(FIRING)
    assert saved == replace(FIRING, updated_at=clock.now)
    assert await store.get_group("C0ALERTS", samples.GROUP_KEY) == saved


async def test_the_group_lives_through_post_update_and_resolve(store: Store, clock: FakeClock) -> None:
    await store.save_group(FIRING)
    clock.advance(5)
    first = GroupFacts(last_notification="n1")
    posted = await store.save_group(replace(FIRING, ts="1700000000.000100", facts=first))
    clock.advance(60)
    second = GroupFacts(last_notification="n2")
    one_left = replace(posted, firing_fingerprints=frozenset({samples.FINGERPRINT_B}), facts=second)
    await store.save_group(one_left)
    clock.advance(60)
    resolved = replace(
        one_left, status=AlertStatus.RESOLVED, firing_fingerprints=frozenset(), resolved_at=clock.now
    )
    await store.save_group(resolved)
    read = await store.get_group("C0ALERTS", samples.GROUP_KEY)
    assert read == replace(resolved, updated_at=clock.now)
    assert read is not None
    assert read.ts == "1700000000.000100"
    assert read.first_firing_at == 50.0
    assert read.facts == GroupFacts(last_notification="n2")


async def test_the_same_group_in_two_channels_is_two_lifecycles(store: Store) -> None:
    await store.save_group(FIRING)
    await store.save_group(replace(FIRING, channel="C0OTHER", status=AlertStatus.RESOLVED))
    first = await store.get_group("C0ALERTS", samples.GROUP_KEY)
    other = await store.get_group("C0OTHER", samples.GROUP_KEY)
    assert first is not None
    assert other is not None
    assert (first.status, other.status) == (AlertStatus.FIRING, AlertStatus.RESOLVED)


async def test_groups_are_listed_by_channel_and_status_least_recently_updated_first(
    store: Store, clock: FakeClock
) -> None:
    keys = ["g1", "g2", "g3"]
    for key in keys:
        clock.advance(1)
        await store.save_group(replace(FIRING, group_key=key))
    clock.advance(1)
    await store.save_group(replace(FIRING, group_key="g1", status=AlertStatus.RESOLVED))
    await store.save_group(replace(FIRING, channel="C0OTHER", group_key="g9"))
    assert [group.group_key for group in await store.groups("C0ALERTS")] == ["g2", "g3", "g1"]
    assert [group.group_key for group in await store.groups("C0ALERTS", AlertStatus.FIRING)] == ["g2", "g3"]
    assert [group.group_key for group in await store.groups(status=AlertStatus.FIRING)] == ["g2", "g3", "g9"]
    assert [group.group_key for group in await store.groups()] == ["g2", "g3", "g1", "g9"]


ENTRY = StormEntry("ResourceProxyNoHealthyPeers", Severity.CRITICAL, "g1", "team-a/db", "alpha")


async def test_the_alert_sides_facts_and_a_storms_record_read_back_as_saved(store: Store) -> None:
    share = StormShare("storm:C0ALERTS:1", (ENTRY,))
    labels = ({"alertname": "ResourceProxyNoHealthyPeers", "target": "team-a/db"},)
    worst = WorstSeen(Severity.CRITICAL, "no healthy peers (2 group/versions)")
    facts = GroupFacts(
        "n1", storm_thread="storm:C0ALERTS:1", storm_share=share, firing_labels=labels, worst_seen=worst
    )
    await store.save_group(replace(FIRING, group_key="g1", facts=facts))
    record = StormRecord(10.0, 20.0, ended_at=None, posted=True, entries={"g1": (ENTRY,)})
    storm = AlertGroupState("C0ALERTS", "storm:C0ALERTS:1", AlertStatus.FIRING, storm=record)
    await store.save_group(storm)
    group = await store.get_group("C0ALERTS", "g1")
    assert group is not None
    assert (group.facts, group.storm) == (facts, None)
    row = await store.get_group("C0ALERTS", "storm:C0ALERTS:1")
    assert row is not None
    assert (row.storm, row.facts) == (record, GroupFacts())


async def test_an_incidents_facts_read_back_as_saved_on_both_backends(store: Store) -> None:
    labels = {"alertname": "ResourceProxyPeerCacheUnsynced"}
    alert = {"status": "firing", "labels": labels, "fingerprint": "a"}
    first = GroupFacts(
        "n1",
        cause=CauseKey("team-a", "platform/crd-store", Cause.PEER_FEED),
        members=("g2", "g3"),
        alerts=(alert,),
        flaps=Flaps((100.0, 200.5), noted_at=200.5),
    )
    member = GroupFacts("n2", cause=first.cause, incident="g1")
    await store.save_group(replace(FIRING, group_key="g1", facts=first))
    await store.save_group(replace(FIRING, group_key="g2", facts=member))
    assert [g.facts for g in await store.groups()] == [first, member]


async def test_incident_facts_a_later_version_wrote_differently_load_as_none(store: Store, raw: Raw) -> None:
    # A cause this version does not know, members and flaps of the wrong shapes: no incident, no crash.
    details = {
        "last_notification": "n1",
        "cause": {"cluster": "team-a", "target": "platform/crd-store", "cause": "cosmic_rays"},
        "members": "g2",
        "alerts": {"not": "a list"},
        "flaps": {"refired_at": ["soon", 5], "noted_at": "later"},
    }
    await raw(
        "INSERT INTO alert_groups (channel, group_key, status, ts, first_firing_at, resolved_at,"
        " firing_fingerprints, details, updated_at, channel_id)"
        " VALUES ('C0ALERTS', 'g1', 'firing', NULL, 5.0, NULL, '[]', ?, 6.0, NULL)",
        json.dumps(details),
    )
    group = await store.get_group("C0ALERTS", "g1")
    assert group is not None
    assert group.facts == GroupFacts("n1", flaps=Flaps((5.0,)))


async def test_alerts_seen_resolved_read_back_in_order_on_both_backends(store: Store, raw: Raw) -> None:
    start = datetime(2023, 11, 14, 22, 0, 0, 123456, tzinfo=UTC)
    seen = SeenResolved(
        {
            "fp-b": Ended(start, start + timedelta(minutes=12), 1700000000.25),
            "fp-a": Ended(start.astimezone(timezone(timedelta(hours=2))), None, 1700000100.0),
        }
    )
    await store.save_group(replace(FIRING, facts=GroupFacts("n1", seen_resolved=seen)))
    group = await store.get_group("C0ALERTS", samples.GROUP_KEY)
    assert group is not None
    assert group.facts == GroupFacts("n1", seen_resolved=seen)
    assert list(group.facts.seen_resolved.alerts) == ["fp-b", "fp-a"]  # the least recently seen first
    [(details,)] = await raw("SELECT details FROM alert_groups")
    assert json.loads(details)["resolved_seen"][0] == [
        "fp-b",
        "2023-11-14T22:00:00.123456+00:00",
        "2023-11-14T22:12:00.123456+00:00",
        1700000000.25,
    ]


async def test_alerts_seen_resolved_of_another_shape_are_left_out(store: Store, raw: Raw) -> None:
    # A later version's shape, a bad time, a time without a zone: those entries only; the good one loads.
    details = {
        "last_notification": "n1",
        "resolved_seen": [
            ["fp-a", "2023-11-14T22:00:00+00:00", None, 5],
            ["fp-b", "yesterday", None, 5.0],
            ["fp-c", "2023-11-14T22:00:00", None, 5.0],
            {"fp": "fp-d"},
            ["fp-e", "2023-11-14T22:00:00+00:00", None, "soon"],
        ],
    }
    await raw(
        "INSERT INTO alert_groups (channel, group_key, status, ts, first_firing_at, resolved_at,"
        " firing_fingerprints, details, updated_at, channel_id)"
        " VALUES ('C0ALERTS', 'g1', 'resolved', NULL, 5.0, NULL, '[]', ?, 6.0, NULL)",
        json.dumps(details),
    )
    group = await store.get_group("C0ALERTS", "g1")
    assert group is not None
    start = datetime(2023, 11, 14, 22, 0, tzinfo=UTC)
    assert group.facts == GroupFacts("n1", seen_resolved=SeenResolved({"fp-a": Ended(start, None, 5.0)}))


# Rows as proxybot wrote them before the group state was typed: the JSON `details` column, kept across
# upgrades, must load as the same facts (and be written back the same way).
OLD_ENTRY = ["ResourceProxyNoHealthyPeers", 3, "team-a/db", "alpha"]
OLD_GROUP_DETAILS = {
    "last_notification": "n7",
    "storm": "storm:C0ALERTS:1",
    "storm_count": {"storm": "storm:C0ALERTS:1", "entries": [OLD_ENTRY]},
    "alert_labels": [{"alertname": "ResourceProxyNoHealthyPeers", "target": "team-a/db"}],
}
OLD_STORM_DETAILS = {
    "kind": "storm",
    "started_at": 10.0,
    "last_new_at": 20.0,
    "ended_at": None,
    "entries": {"g1": [OLD_ENTRY]},
    "posted": True,
}


async def _write_old_rows(raw: Raw) -> None:
    for key, details in (("g1", OLD_GROUP_DETAILS), ("storm:C0ALERTS:1", OLD_STORM_DETAILS)):
        await raw(
            "INSERT INTO alert_groups (channel, group_key, status, ts, first_firing_at, resolved_at,"
            " firing_fingerprints, details, updated_at, channel_id)"
            " VALUES ('C0ALERTS', ?, 'firing', NULL, 5.0, NULL, '[]', ?, 6.0, NULL)",
            key,
            json.dumps(details, sort_keys=True),
        )


async def _stored_details(raw: Raw) -> dict[str, object]:
    rows = await raw("SELECT group_key, details FROM alert_groups")
    return {key: json.loads(details) for key, details in rows}


async def test_rows_written_by_the_previous_version_load_and_save_unchanged(store: Store, raw: Raw) -> None:
    await _write_old_rows(raw)
    group = await store.get_group("C0ALERTS", "g1")
    assert group is not None
    assert group.storm is None
    assert group.facts == GroupFacts(
        last_notification="n7",
        storm_thread="storm:C0ALERTS:1",
        storm_share=StormShare("storm:C0ALERTS:1", (ENTRY,)),
        firing_labels=({"alertname": "ResourceProxyNoHealthyPeers", "target": "team-a/db"},),
    )
    storm = await store.get_group("C0ALERTS", "storm:C0ALERTS:1")
    assert storm is not None
    assert storm.storm == StormRecord(10.0, 20.0, None, True, {"g1": (ENTRY,)})
    await store.save_group(group)
    await store.save_group(storm)
    assert await _stored_details(raw) == {"g1": OLD_GROUP_DETAILS, "storm:C0ALERTS:1": OLD_STORM_DETAILS}


async def test_recording_a_post_keeps_what_the_alert_side_saved(store: Store) -> None:
    facts = GroupFacts(last_notification="n1")
    await store.save_group(replace(FIRING, facts=facts))
    await store.record_post("C0ALERTS", samples.GROUP_KEY, "1700000000.000100", "C0ALERTS")
    group = await store.get_group("C0ALERTS", samples.GROUP_KEY)
    assert group is not None
    assert (group.ts, group.channel_id, group.facts) == ("1700000000.000100", "C0ALERTS", facts)
    assert group.firing_fingerprints == FIRING.firing_fingerprints
    await store.record_post("C0ALERTS", "new", "1.2", "C0ALERTS")  # posted before the alert side saved it
    new = await store.get_group("C0ALERTS", "new")
    assert new is not None
    assert (new.status, new.ts, new.facts) == (AlertStatus.FIRING, "1.2", GroupFacts())


async def test_a_channels_id_is_known_once_a_post_in_it_answered(store: Store) -> None:
    assert await store.channel_id_of("#alerts") is None
    await store.save_group(replace(FIRING, channel="#alerts"))
    assert await store.channel_id_of("#alerts") is None  # saved, not posted yet
    await store.record_post("#alerts", "other", "1.2", "C0ALERTS")
    assert await store.channel_id_of("#alerts") == "C0ALERTS"
    assert await store.channel_id_of("#elsewhere") is None


async def test_firing_posts_are_the_firing_groups_with_a_message_oldest_first(store: Store) -> None:
    def group(key: str, first: float | None, status: AlertStatus = AlertStatus.FIRING) -> AlertGroupState:
        return replace(FIRING, group_key=key, first_firing_at=first, status=status)

    await store.save_group(group("late", 300.0))
    await store.save_group(group("early", 100.0))
    await store.save_group(group("unposted", 50.0))  # its post is still in the outbox
    await store.save_group(group("resolved", 10.0, AlertStatus.RESOLVED))
    storm = StormRecord(started_at=5.0, last_new_at=5.0, posted=True)
    await store.save_group(replace(group("storm:C0ALERTS:1", 5.0), storm=storm))
    for key in ("late", "early", "resolved", "storm:C0ALERTS:1", "digest:2025-06-02T08:00:00+02:00"):
        await store.record_post("C0ALERTS", key, "1700000000.000100", "C0ALERTS")
    found = await store.firing_posts()
    assert [(g.group_key, g.ts, g.channel_id) for g in found] == [
        ("early", "1700000000.000100", "C0ALERTS"),
        ("late", "1700000000.000100", "C0ALERTS"),
    ]
    # The escalation's view: every firing message, storm summaries included.
    assert [g.group_key for g in await store.firing_messages()] == ["storm:C0ALERTS:1", "early", "late"]
