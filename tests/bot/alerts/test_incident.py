"""One incident per cause, and flapping, through the real pipeline (harness: `tests.fakes.alert_pipeline`).

The fake live source answers with one page for every cluster: `team-a/db` without a healthy peer (the
cause: its endpoints), `team-b/db` without a peer list (the cause: the client's peer feed).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest

from bot.alerts.pipeline import AlertPipeline
from bot.domain.alerts import AlertStatus
from bot.domain.incident import Cause, CauseKey
from bot.domain.messages import group_id
from bot.domain.parser import parse_syncer
from bot.domain.resolution import EventKind
from bot.store import OutboxItem, OutboxKind, Store
from tests.fakes.alert_pipeline import PAGE, Harness, alert, settings, webhook

UNSYNCED = """vcluster_proxy_peers{target="team-b/db",group_version="example.com/v1",state="healthy"} 1
vcluster_proxy_peers{target="team-b/db",group_version="example.com/v1",state="quarantined"} 0
vcluster_proxy_peers{target="team-b/db",group_version="example.com/v1",state="half_open"} 0
vcluster_proxy_peer_cache_synced{target="team-b/db",group_version="example.com/v1"} 0
"""
NO_HEALTHY = "ResourceProxyNoHealthyPeers"
UNAVAILABLE = "ResourceProxyTargetUnavailable"
CHURN = "ResourceProxyPeerChurn"
CHANNEL = "#alpha-alerts"


def group_of(name: str, target: str = "team-a/db") -> str:
    return f'{{}}:{{alertname="{name}", cluster="alpha", target="{target}"}}'


def notify(name: str, fp: str, *, target: str = "team-a/db", resolved: bool = False, at: str = "") -> bytes:
    one = alert(fp, name, target=target, resolved=resolved)
    if at:
        one["startsAt"] = at  # a new episode: Alertmanager's startsAt of the alert firing again
    return webhook([one], group=group_of(name, target))


def probe(fp: str = "p1", *, resolved: bool = False) -> bytes:
    one = alert(fp, "ResourceProxyProbeFailing", cluster=None, resolved=resolved)
    one["labels"] = {
        "alertname": "ResourceProxyProbeFailing",
        "namespace": "vcluster-alpha",
        "cronjob": "proxy-probe",
        "job": "kube-state-metrics",
        "severity": "critical",
    }
    return webhook([one], group='{}:{alertname="ResourceProxyProbeFailing"}')


@pytest.fixture(autouse=True)
def two_causes(harness: Harness) -> None:
    harness.live.snapshot = parse_syncer(PAGE + UNSYNCED)


def text_of(item: OutboxItem) -> str:
    return json.dumps(item.payload, ensure_ascii=False)


def is_details(item: OutboxItem) -> bool:
    """A details reply: a group's own (posted with its message), or a member's in its incident's thread."""
    return item.kind is OutboxKind.REPLY and re.search(r":details(:[0-9a-f]{16})?$", item.key) is not None


def replies_of(items: list[OutboxItem]) -> list[str]:
    """The thread replies' texts, but for the details replies (one per group, edited in place)."""
    return [text_of(i) for i in items if i.kind is OutboxKind.REPLY and not is_details(i)]


def member_reply_key(member: str, first: str = group_of(NO_HEALTHY)) -> str:
    """The outbox key of a member's details reply in its incident's thread."""
    return f"reply:{CHANNEL}:{first}:details:{group_id(member)}"


def details_rows(items: list[OutboxItem], member: str) -> list[OutboxItem]:
    """A member's details reply and its edits, in enqueue order."""
    name = f"details:{group_id(member)}"
    return [
        i
        for i in items
        if i.key == member_reply_key(member)
        or (i.kind is OutboxKind.REPLY_EDIT and i.payload["reply"] == name)
    ]


def beyond_first_details(items: list[OutboxItem]) -> list[OutboxItem]:
    """The items but the first group's own details reply's edits (each member's notification makes one)."""
    return [i for i in items if not (i.kind is OutboxKind.REPLY_EDIT and i.payload["reply"] == "details")]


def posts(items: list[OutboxItem]) -> list[str]:
    return [i.payload["group_key"] for i in items if i.kind is OutboxKind.POST]


async def test_three_alerts_of_one_cause_on_one_target_are_one_message(harness: Harness) -> None:
    await harness.run(notify(NO_HEALTHY, "a1"))
    await harness.run(notify(UNAVAILABLE, "b1"))
    await harness.run(notify(CHURN, "c1"))
    items = await harness.items()
    assert posts(items) == [group_of(NO_HEALTHY)]
    assert {i.payload["group_key"] for i in items} == {group_of(NO_HEALTHY)}  # every operation on it
    # The message and its details reply, then per joining group an edit and its own details reply: no
    # other note in the thread.
    kinds = [OutboxKind.POST, OutboxKind.REPLY]
    kinds += [OutboxKind.UPDATE, OutboxKind.REPLY_EDIT, OutboxKind.REPLY] * 2
    assert [i.kind for i in items] == kinds
    last = text_of([i for i in items if i.kind is OutboxKind.UPDATE][-1])
    assert "*3 alert rules, one cause:* the target's endpoints (no healthy peer)" in last
    assert f"also firing: 🔴 *{UNAVAILABLE}* on `team-a/db`" in last
    assert f"also firing: 🔴 *{CHURN}* on `team-a/db`" in last
    assert replies_of(items) == []
    for name in (UNAVAILABLE, CHURN):
        [reply] = details_rows(items, group_of(name))
        assert reply.kind is OutboxKind.REPLY
        assert reply.payload["group_key"] == group_of(NO_HEALTHY)  # in the incident message's thread
        assert reply.next_attempt_at > harness.clock()  # deferred, as a group's own details reply is
        assert f"FIRING: {name} · team-a/db" in text_of(reply)  # its header
        assert re.search(rf"↳ Joined this incident: . \*{name}\* on `team-a/db`", text_of(reply))
        assert "*Same cause:* no healthy peer" in text_of(reply)
    first = await harness.store.get_group(CHANNEL, group_of(NO_HEALTHY))
    member = await harness.store.get_group(CHANNEL, group_of(UNAVAILABLE))
    assert first is not None
    assert member is not None
    assert first.facts.cause == CauseKey("alpha", "team-a/db", Cause.ENDPOINTS)
    assert first.facts.members == (group_of(UNAVAILABLE), group_of(CHURN))
    assert (member.facts.incident, member.ts) == (group_of(NO_HEALTHY), None)
    assert member.status is AlertStatus.FIRING


async def test_the_first_groups_details_follow_each_reading_of_the_incidents_message(
    harness: Harness,
) -> None:
    """A member re-renders the message from a new reading of the first group's alerts: the first group's
    details reply is edited from that same reading (one reading per version of the message)."""
    await harness.run(notify(NO_HEALTHY, "a1"))
    harness.clock.now += 7
    await harness.run(notify(UNAVAILABLE, "b1"))
    items = await harness.items()
    [update] = [i for i in items if i.kind is OutboxKind.UPDATE]
    edits = [i for i in items if i.kind is OutboxKind.REPLY_EDIT and i.payload["reply"] == "details"]
    assert len(edits) == 1
    read = re.search(r"Live state read [0-9:]+ UTC", text_of(update))
    assert read is not None
    assert read.group(0) in text_of(edits[0])


async def test_another_target_or_another_cause_posts_its_own_message(harness: Harness) -> None:
    await harness.run(notify(NO_HEALTHY, "a1"))
    await harness.run(notify(UNAVAILABLE, "b1", target="team-b/db"))  # another target
    harness.live.snapshot = parse_syncer(UNSYNCED.replace("team-b", "team-a"))
    await harness.run(notify(CHURN, "c1"))  # the same target, now without a peer list: another cause
    assert posts(await harness.items()) == [
        group_of(NO_HEALTHY),
        group_of(UNAVAILABLE, "team-b/db"),
        group_of(CHURN),
    ]


async def test_a_failing_probe_joins_the_incident_of_the_cluster_whose_namespace_it_names(
    harness: Harness,
) -> None:
    await harness.run(notify(NO_HEALTHY, "a1"))
    await harness.run(probe())
    items = await harness.items()
    assert posts(items) == [group_of(NO_HEALTHY)]
    last = text_of([i for i in items if i.kind is OutboxKind.UPDATE][-1])
    assert "also firing: 🔴 *ResourceProxyProbeFailing* (CronJob `vcluster-alpha/proxy-probe`)" in last


async def test_each_alert_resolves_on_its_line_and_the_message_with_the_last_one(harness: Harness) -> None:
    await harness.run(notify(NO_HEALTHY, "a1"))
    await harness.run(notify(UNAVAILABLE, "b1"))
    before = len(await harness.items())
    await harness.run(notify(NO_HEALTHY, "a1", resolved=True))  # the first group resolves first
    items = (await harness.items())[before:]
    [update] = [i for i in items if i.kind is OutboxKind.UPDATE]
    assert update.payload["text"].startswith("FIRING")  # the incident fires on
    assert replies_of(items) == []  # one alert of the incident resolving: left to the edits
    before = len(await harness.items())
    await harness.run(notify(UNAVAILABLE, "b1", resolved=True))
    update, edit, reply = beyond_first_details((await harness.items())[before:])
    assert (update.kind, edit.kind, reply.kind) == (
        OutboxKind.UPDATE,
        OutboxKind.REPLY_EDIT,
        OutboxKind.REPLY,
    )
    assert update.payload["text"].startswith("RESOLVED")
    assert f"↳ ✅ *{UNAVAILABLE}* on `team-a/db` (`example.com/v1`): resolved after 12 min" in text_of(update)
    assert f"*Details:* ✅ RESOLVED: {UNAVAILABLE}" in text_of(edit)  # its own details reply
    assert f"Resolved: *{UNAVAILABLE}*" in text_of(reply)
    assert "All resolved after" in text_of(reply)
    # The reply is the incident's resolution summary, and the message carries its line.
    assert "Resolution summary" in text_of(reply)
    assert "never acknowledged" in text_of(reply)
    assert "Fired 12 min, never acknowledged" in text_of(update)
    [record] = await harness.store.events_since(EventKind.RESOLVED, 0.0)
    assert record.group_key == group_of(NO_HEALTHY)
    assert posts(await harness.items()) == [group_of(NO_HEALTHY)]


async def test_the_first_group_firing_again_hours_later_does_not_list_the_last_episodes_members(
    harness: Harness,
) -> None:
    """An incident resolved in the night, its first group firing again in the morning: the new episode's
    message lists what fires now, not the night's members as "resolved after" lines."""
    await harness.run(notify(NO_HEALTHY, "a1"))
    await harness.run(notify(UNAVAILABLE, "b1"))
    await harness.run(notify(NO_HEALTHY, "a1", resolved=True))
    await harness.run(notify(UNAVAILABLE, "b1", resolved=True))
    harness.clock.now += 4 * 3600
    before = len(await harness.items())
    await harness.run(notify(NO_HEALTHY, "a1", at="2023-11-15T12:00:00Z"))
    [update] = [i for i in (await harness.items())[before:] if i.kind is OutboxKind.UPDATE]
    assert update.payload["text"].startswith("FIRING")
    assert UNAVAILABLE not in text_of(update)
    # The night's member firing again joins the new episode, its line shown again.
    before = len(await harness.items())
    await harness.run(notify(UNAVAILABLE, "b1", at="2023-11-15T12:01:00Z"))
    [update] = [i for i in (await harness.items())[before:] if i.kind is OutboxKind.UPDATE]
    assert f"*{UNAVAILABLE}*" in text_of(update)
    assert posts(await harness.items()) == [group_of(NO_HEALTHY)]


async def test_a_member_resolving_while_the_first_fires_turns_only_its_line_and_its_details(
    harness: Harness,
) -> None:
    await harness.run(notify(NO_HEALTHY, "a1"))
    await harness.run(notify(UNAVAILABLE, "b1"))
    before = len(await harness.items())
    await harness.run(notify(UNAVAILABLE, "b1", resolved=True))
    # No reply: the thread's followers are told when the incident resolves, not when one alert of it does.
    update, edit = beyond_first_details((await harness.items())[before:])
    assert (update.kind, edit.kind) == (OutboxKind.UPDATE, OutboxKind.REPLY_EDIT)
    assert update.payload["text"].startswith("FIRING")
    assert f"↳ ✅ *{UNAVAILABLE}*" in text_of(update)
    assert edit.payload["reply"] == f"details:{group_id(group_of(UNAVAILABLE))}"
    assert f"*Details:* ✅ RESOLVED: {UNAVAILABLE}" in text_of(edit)
    assert f"↳ Joined this incident: ✅ *{UNAVAILABLE}*" in text_of(edit)
    # Firing again later, it goes back to the same message (membership is for good) and the same reply.
    before = len(await harness.items())
    await harness.run(notify(UNAVAILABLE, "b1", at="2023-11-15T08:00:00Z"))
    items = await harness.items()
    assert posts(items) == [group_of(NO_HEALTHY)]
    update, edit, reply = beyond_first_details(items[before:])
    assert f"also firing: 🔴 *{UNAVAILABLE}*" in text_of(update)
    assert f"FIRING: {UNAVAILABLE}" in text_of(edit)
    assert f"New: *{UNAVAILABLE}*" in text_of(reply)  # firing again is worth a reply
    assert [i.kind for i in details_rows(items, group_of(UNAVAILABLE))].count(OutboxKind.REPLY) == 1


def member_update(*fingerprints: str, resolved: tuple[str, ...] = ()) -> bytes:
    """A notification of the UNAVAILABLE member group with these alerts (one per HA replica)."""
    alerts = []
    for n, fp in enumerate(fingerprints):
        one = alert(fp, UNAVAILABLE, resolved=fp in resolved)
        one["labels"]["pod"] = f"vc-db-{n}"
        alerts.append(one)
    return webhook(alerts, group=group_of(UNAVAILABLE))


async def test_a_member_has_one_details_reply_edited_in_place_on_every_update(harness: Harness) -> None:
    member = group_of(UNAVAILABLE)
    await harness.run(notify(NO_HEALTHY, "a1"))
    await harness.run(member_update("b1"))  # joins
    await harness.run(member_update("b1", "b2"))  # an alert added
    await harness.run(member_update("b1", "b2", resolved=("b1",)))  # one of its alerts resolves
    harness.clock.now += 60
    await harness.run(member_update("b1", "b2", resolved=("b1", "b2")))  # the member resolves
    items = await harness.items()
    rows = details_rows(items, member)
    kinds = [OutboxKind.REPLY, *[OutboxKind.REPLY_EDIT] * 3]
    assert [i.kind for i in rows] == kinds  # one reply, one edit per later notification
    assert len({i.key for i in rows}) == len(rows)
    assert all(i.payload["group_key"] == group_of(NO_HEALTHY) for i in rows)
    assert "· resolved" not in text_of(rows[1])
    assert f"*{UNAVAILABLE}* on `team-a/db` `example.com/v1` · pod `vc-db-0` · resolved" in text_of(rows[2])
    assert f"*Details:* ✅ RESOLVED: {UNAVAILABLE}" in text_of(rows[-1])
    # Beyond its details: one reply for the alert added, none for the resolves (the incident fires on).
    [added] = replies_of(items)
    assert "New: " in added
    assert posts(items) == [group_of(NO_HEALTHY)]


async def test_an_update_after_a_restart_edits_the_same_reply(harness: Harness) -> None:
    await harness.run(notify(NO_HEALTHY, "a1"))
    await harness.run(member_update("b1"))
    harness.pipeline = harness.make_pipeline(settings())
    await harness.pipeline.restore()
    await harness.run(member_update("b1", "b2"))
    rows = details_rows(await harness.items(), group_of(UNAVAILABLE))
    assert [i.kind for i in rows] == [OutboxKind.REPLY, OutboxKind.REPLY_EDIT]
    assert rows[0].key == member_reply_key(group_of(UNAVAILABLE))


async def test_a_closed_incident_is_not_joined(harness: Harness) -> None:
    await harness.run(notify(NO_HEALTHY, "a1"))
    await harness.run(notify(NO_HEALTHY, "a1", resolved=True))
    await harness.run(notify(UNAVAILABLE, "b1"))
    assert posts(await harness.items()) == [group_of(NO_HEALTHY), group_of(UNAVAILABLE)]


async def test_a_restarted_pipeline_knows_the_open_incidents(harness: Harness) -> None:
    await harness.run(notify(NO_HEALTHY, "a1"))
    harness.pipeline = harness.make_pipeline(settings())
    await harness.pipeline.restore()
    await harness.run(notify(UNAVAILABLE, "b1"))
    assert posts(await harness.items()) == [group_of(NO_HEALTHY)]


async def test_an_incident_whose_message_went_into_a_storms_thread_is_left(harness: Harness) -> None:
    await harness.run(notify(NO_HEALTHY, "a1"))
    await harness.run(notify(UNAVAILABLE, "b1"))
    # A storm folded the first group's post into its thread (what StormDesk does to a post not yet sent).
    first = await harness.store.get_group(CHANNEL, group_of(NO_HEALTHY))
    assert first is not None
    await harness.store.save_group(replace(first, facts=replace(first.facts, storm_thread="storm:x:1")))
    await harness.run(notify(CHURN, "c1"))  # would have joined: posts on its own
    await harness.run(notify(UNAVAILABLE, "b1", resolved=True))  # its incident's message is gone: its own
    assert posts(await harness.items()) == [group_of(NO_HEALTHY), group_of(CHURN), group_of(UNAVAILABLE)]
    member = await harness.store.get_group(CHANNEL, group_of(UNAVAILABLE))
    assert member is not None
    assert member.facts.incident is None


class CrashingAt:
    """The real store, except that the `nth` call of one method raises, like a process dying there."""

    def __init__(self, store: Store, method: str, nth: int) -> None:
        self._store, self._method, self._left = store, method, nth

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)
        if name != self._method:
            return method

        async def maybe_crash(*args: Any, **kwargs: Any) -> Any:
            self._left -= 1
            if self._left == 0:
                raise RuntimeError(f"killed in {name}")
            return await method(*args, **kwargs)

        return maybe_crash


@pytest.mark.parametrize(("method", "nth"), [("save_group", 1), ("save_group", 2), ("mark_processed", 1)])
async def test_a_crash_while_joining_then_a_rerun_adds_nothing_and_ends_joined(
    harness: Harness, method: str, nth: int
) -> None:
    await harness.run(notify(NO_HEALTHY, "a1"))
    await harness.accept(notify(UNAVAILABLE, "b1"))
    doomed = AlertPipeline(
        settings(), CrashingAt(harness.store, method, nth), harness.outbox, harness.live, clock=harness.clock
    )
    await doomed.restore()
    [notification] = await harness.store.pending()
    with pytest.raises(RuntimeError, match="killed"):
        await doomed.process(notification)
    after_crash = [(i.kind, i.key) for i in await harness.items()]
    harness.pipeline = harness.make_pipeline(settings())
    await harness.pipeline.restore()
    await harness.run()
    assert [(i.kind, i.key) for i in await harness.items()] == after_crash
    [reply] = details_rows(await harness.items(), group_of(UNAVAILABLE))  # queued before the crash, once
    assert reply.key == member_reply_key(group_of(UNAVAILABLE))
    first = await harness.store.get_group(CHANNEL, group_of(NO_HEALTHY))
    member = await harness.store.get_group(CHANNEL, group_of(UNAVAILABLE))
    assert first is not None
    assert member is not None
    assert (first.facts.members, member.facts.incident) == ((group_of(UNAVAILABLE),), group_of(NO_HEALTHY))
    assert await harness.store.pending_count() == 0


@pytest.mark.parametrize(("method", "nth"), [("save_group", 1), ("save_group", 2), ("mark_processed", 1)])
async def test_a_crash_while_a_member_updates_then_a_rerun_edits_its_reply_once(
    harness: Harness, method: str, nth: int
) -> None:
    await harness.run(notify(NO_HEALTHY, "a1"))
    await harness.run(member_update("b1"))
    await harness.accept(member_update("b1", "b2"))
    doomed = AlertPipeline(
        settings(), CrashingAt(harness.store, method, nth), harness.outbox, harness.live, clock=harness.clock
    )
    await doomed.restore()
    [notification] = await harness.store.pending()
    with pytest.raises(RuntimeError, match="killed"):
        await doomed.process(notification)
    harness.pipeline = harness.make_pipeline(settings())
    await harness.pipeline.restore()
    await harness.run()
    items = await harness.items()
    rows = details_rows(items, group_of(UNAVAILABLE))
    assert [i.kind for i in rows] == [OutboxKind.REPLY, OutboxKind.REPLY_EDIT]
    assert len(replies_of(items)) == 1  # the alert added, once
    assert await harness.store.pending_count() == 0


# -- flapping ---------------------------------------------------------------------------------------------


async def flap(harness: Harness, name: str, fp: str, times: int, *, every: float = 300.0) -> None:
    """Resolve and fire again `times` times, `every` seconds apart (each episode its own startsAt)."""
    for n in range(times):
        harness.clock.now += every / 2
        await harness.run(notify(name, fp, resolved=True, at=f"2023-11-14T22:{n:02d}:00Z"))
        harness.clock.now += every / 2
        await harness.run(notify(name, fp, at=f"2023-11-14T23:{n:02d}:00Z"))


async def test_a_flapping_group_keeps_one_message_with_its_count_and_one_note_an_hour(
    harness: Harness,
) -> None:
    await harness.run(notify(NO_HEALTHY, "a1"))
    await flap(harness, NO_HEALTHY, "a1", 5)  # 5 refires in 25 minutes
    items = await harness.items()
    assert posts(items) == [group_of(NO_HEALTHY)]
    replies = replies_of(items)
    # Before it flaps: resolved, new, resolved (one refire); then one note, and nothing per change.
    assert len(replies) == 4
    assert "is flapping: it fired again 2 times in the last hour" in replies[3]
    updates = [text_of(i) for i in items if i.kind is OutboxKind.UPDATE]
    assert len(updates) == 10  # every change still edits the message
    assert "Flapping: 5 times in the last hour" in updates[-1]
    assert "Flapping: 3 times" in updates[-5]
    assert [i.kind for i in items].count(OutboxKind.UPLOAD) == 0
    # Still flapping an hour later: one more note, not more.
    await flap(harness, NO_HEALTHY, "a1", 8, every=600.0)
    replies = replies_of(await harness.items())
    notes = [r for r in replies if "is flapping" in r]
    assert len(notes) == 2


async def test_a_flapping_member_shows_its_count_on_its_line_and_stays_quiet(harness: Harness) -> None:
    await harness.run(notify(NO_HEALTHY, "a1"))
    await harness.run(notify(CHURN, "c1"))
    before = len(await harness.items())
    await flap(harness, CHURN, "c1", 4)
    items = (await harness.items())[before:]
    assert posts(await harness.items()) == [group_of(NO_HEALTHY)]
    replies = replies_of(items)
    # Its resolves are left to the edits (the incident fires on): firing again once, then the one note.
    assert len(replies) == 2
    assert "New: " in replies[0]
    assert f"*{CHURN}* on `team-a/db` (`example.com/v1`) is flapping" in replies[-1]
    last = text_of([i for i in items if i.kind is OutboxKind.UPDATE][-1])
    assert f"also firing: 🔴 *{CHURN}* on `team-a/db`" in last
    assert "🔁 flapping: 4 times in the last hour" in last
    # Its details reply is edited on every change, never posted again.
    assert [i.kind for i in details_rows(items, group_of(CHURN))] == [OutboxKind.REPLY_EDIT] * 8


def linked(body: bytes) -> bytes:
    """The notification with the links Alertmanager sends: the graph per alert, its own address."""
    doc = json.loads(body)
    doc["externalURL"] = "http://alertmanager.example:9093"
    for one in doc["alerts"]:
        one["generatorURL"] = "http://prometheus.example:9090/graph?g0.expr=up"
    return json.dumps(doc).encode()


def urls(item: OutboxItem) -> list[str]:
    return [
        e["url"]
        for b in item.payload["blocks"]
        if b["type"] == "actions"
        for e in b["elements"]
        if "url" in e
    ]


async def test_the_incident_message_keeps_its_links_when_a_member_re_renders_it(harness: Harness) -> None:
    await harness.run(linked(notify(NO_HEALTHY, "a1")))
    await harness.run(linked(notify(UNAVAILABLE, "b1")))
    items = await harness.items()
    post = next(i for i in items if i.kind is OutboxKind.POST)
    update = [i for i in items if i.kind is OutboxKind.UPDATE][-1]
    assert len(urls(post)) == 2  # the graph and the silence page
    assert urls(update) == urls(post)


async def test_an_older_member_notification_replayed_after_a_newer_one_changes_nothing(
    harness: Harness,
) -> None:
    # A stop that left both open replays them in order: the older must not set the member's line back.
    await harness.run(notify(NO_HEALTHY, "a1"))
    await harness.run(member_update("b1"))  # joins
    await harness.accept(member_update("b1", "b2"))
    await harness.accept(member_update("b1", "b2", resolved=("b1",)))
    older, newer = await harness.store.pending()
    await harness.pipeline.process(newer)
    before = [(i.kind, i.key) for i in await harness.items()]
    await harness.pipeline.process(older)
    assert [(i.kind, i.key) for i in await harness.items()] == before
    member = await harness.store.get_group(CHANNEL, group_of(UNAVAILABLE))
    assert member is not None
    assert (member.facts.last_notification, member.facts.last_notification_id) == (newer.identity, newer.id)


async def test_a_member_that_pages_harder_heads_the_message_and_its_reply_says_so(harness: Harness) -> None:
    first = alert("b1", UNAVAILABLE)
    first["labels"]["severity"] = "warning"
    await harness.run(webhook([first], group=group_of(UNAVAILABLE)))
    await harness.run(notify(NO_HEALTHY, "a1"))  # critical
    items = await harness.items()
    update = [i for i in items if i.kind is OutboxKind.UPDATE][-1]
    assert f"🔴 FIRING: {NO_HEALTHY}" in text_of(update)  # the message is headed by it
    [reply] = [
        i for i in items if i.key == member_reply_key(group_of(NO_HEALTHY), first=group_of(UNAVAILABLE))
    ]
    assert f"↳ Joined this incident and heads it (it pages hardest): 🔴 *{NO_HEALTHY}*" in text_of(reply)
