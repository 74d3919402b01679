"""Storm mode through the pipeline: many new groups in one channel become one summary and one table."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterable
from typing import Any

import pytest

from bot.alerts.storm import StormPolicy
from bot.domain.parser import parse_syncer
from bot.render.storm import COLUMNS
from bot.store import AlertGroupState, OutboxItem, OutboxKind, OutboxState
from bot.store.models import Withdrawal
from tests.fakes.alert_pipeline import Harness, alert, settings, webhook

CHANNEL = "#alpha-alerts"
STORM_TABLE_MOST = 99  # Slack's table holds 100 rows: the header and 99 targets


def target(i: int) -> str:
    return f"team-{i}/db"


def storm_webhook(i: int, cluster: str = "alpha", *, resolved: bool = False) -> bytes:
    one = alert(f"s{i}", cluster=cluster, target=target(i), resolved=resolved)
    return webhook([one], group=f'{{}}:{{target="{target(i)}"}}')


def page(targets: Iterable[str], *, healthy: int = 2, quarantined: int = 0, synced: int = 1) -> str:
    """A /metrics/syncer page where every target's peers and cache read the same."""
    lines = ["# TYPE vcluster_proxy_peers gauge", "# TYPE vcluster_proxy_peer_cache_synced gauge"]
    for t in targets:
        where = f'target="{t}",group_version="example.com/v1"'
        for state, n in (("healthy", healthy), ("quarantined", quarantined), ("half_open", 0)):
            lines.append(f'vcluster_proxy_peers{{{where},state="{state}"}} {n}')
        lines.append(f"vcluster_proxy_peer_cache_synced{{{where}}} {synced}")
    return "\n".join(lines) + "\n"


def storm_items(items: list[OutboxItem], kind: OutboxKind) -> list[OutboxItem]:
    return [i for i in items if i.kind is kind and i.payload["group_key"].startswith("storm:")]


def shown(item: OutboxItem) -> str:
    """Every text of a message's payload, as Slack shows it."""
    return json.dumps(item.payload, ensure_ascii=False)


def is_table(item: OutboxItem) -> bool:
    """A table of the storm's targets: a file, or a reply (or its edit) holding a table block."""
    if not item.payload["group_key"].startswith("storm:"):
        return False
    if item.kind is OutboxKind.UPLOAD:
        return True
    blocks = item.payload.get("blocks") or []
    return item.kind in (OutboxKind.REPLY, OutboxKind.REPLY_EDIT) and any(
        b.get("type") == "table" for b in blocks
    )


def tables(items: list[OutboxItem]) -> list[OutboxItem]:
    """The storm's tables in its thread, oldest first."""
    return [i for i in items if is_table(i)]


def table(item: OutboxItem) -> str:
    """A table as lines: a title, a blank line, the header, one row per target (a table block's cells
    joined by two spaces, as the file aligns them)."""
    if item.kind is OutboxKind.UPLOAD:
        return base64.b64decode(item.payload["file"]).decode()
    [title, block] = item.payload["blocks"]
    lines = [title["elements"][0]["text"], ""]
    for row in block["rows"]:
        lines.append("  ".join(cell_text(c) for c in row))
    return "\n".join(lines)


def cell_text(cell: dict[str, Any]) -> str:
    if cell["type"] == "raw_text":
        return str(cell["text"])
    return "".join(e["text"] for section in cell["elements"] for e in section["elements"])


async def storm_rows(harness: Harness, channel: str = CHANNEL) -> list[AlertGroupState]:
    return [g for g in await harness.store.groups(channel) if g.group_key.startswith("storm:")]


async def test_a_burst_of_new_groups_is_one_summary_and_one_table_of_every_target(harness: Harness) -> None:
    harness.live.snapshot = parse_syncer(page((target(i) for i in range(30)), synced=0))
    for i in range(30):
        await harness.accept(storm_webhook(i))
    await harness.run()
    await harness.settle(StormPolicy().first_within_seconds)
    items = await harness.items()
    [summary] = [i for i in items if i.kind is OutboxKind.POST]
    storm_key = summary.payload["group_key"]
    assert storm_key.startswith(f"storm:{CHANNEL}:")
    assert [i.kind for i in items if i.kind is not OutboxKind.POST] == [OutboxKind.REPLY]
    text = shown(summary)
    assert "30 targets" in text
    assert "`alpha` · 30 targets: 30 peer cache unsynced (peers from a stale list)" in text
    assert "*Common cause:* `alpha`'s peer feed: `peer_cache_synced` is 0 on every one of the 30" in text
    [upload] = tables(items)
    rows = table(upload).splitlines()
    assert rows[2].split() == ["CLUSTER", "TARGET", "ALERTS", "STATE", "NOW", "SINCE", "(UTC)"]
    assert sorted(r.split()[1] for r in rows[3:]) == sorted(target(i) for i in range(30))
    assert all("peer cache unsynced" in r and "2023-11-14 22:00:00" in r for r in rows[3:])
    # The ten groups before the storm was recognisable had not gone out: the storm carries them.
    folded = await harness.store.outbox_item(f'post:{CHANNEL}:{{}}:{{target="team-0/db"}}')
    assert folded is not None
    assert (folded.state, folded.result) == (OutboxState.DONE, {"folded_into": storm_key})


def table_block(item: OutboxItem) -> dict[str, Any]:
    [block] = [b for b in item.payload["blocks"] if b["type"] == "table"]
    return dict(block)


async def test_up_to_99_targets_the_table_is_slack_s_own_table_block_with_a_header_row(
    harness: Harness,
) -> None:
    harness.live.snapshot = parse_syncer(page((target(i) for i in range(STORM_TABLE_MOST)), synced=0))
    for i in range(STORM_TABLE_MOST):
        await harness.accept(storm_webhook(i))
    await harness.run()
    await harness.settle(StormPolicy().first_within_seconds)
    [reply] = tables(await harness.items())
    assert reply.kind is OutboxKind.REPLY
    rows = table_block(reply)["rows"]
    assert len(rows) == 100  # Slack's most: the header and 99 targets
    assert [cell_text(c) for c in rows[0]] == list(COLUMNS)
    assert sorted(cell_text(r[1]) for r in rows[1:]) == sorted(target(i) for i in range(STORM_TABLE_MOST))


async def test_a_storm_of_more_targets_than_a_slack_table_holds_gets_a_file(harness: Harness) -> None:
    harness.live.snapshot = parse_syncer(page((target(i) for i in range(100)), synced=0))
    for i in range(100):
        await harness.accept(storm_webhook(i))
    await harness.run()
    await harness.settle(StormPolicy().first_within_seconds)
    items = await harness.items()
    [upload] = tables(items)
    assert upload.kind is OutboxKind.UPLOAD
    assert len(table(upload).splitlines()) == 3 + 100
    assert storm_items(items, OutboxKind.REPLY) == []


async def test_a_storm_outgrowing_a_slack_table_gets_the_file_after_its_table_reply(
    harness: Harness,
) -> None:
    policy = StormPolicy(groups=2)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for i in range(3):
        await harness.run(storm_webhook(i))
    await harness.settle(policy.first_within_seconds)
    [reply] = tables(await harness.items())
    assert reply.kind is OutboxKind.REPLY  # Slack's own table, while it fits
    for i in range(3, 101):
        await harness.accept(storm_webhook(i))
    await harness.run()
    await harness.settle()
    items = await harness.items()
    [_, upload] = tables(items)
    assert upload.kind is OutboxKind.UPLOAD
    assert len(table(upload).splitlines()) == 3 + 101
    assert storm_items(items, OutboxKind.REPLY_EDIT) == []  # the table's reply stays as it was
    assert storm_items(items, OutboxKind.DELETE_FILE) == []  # the reply is no file
    # Later changes replace the file; the reply is not edited again.
    await harness.run(storm_webhook(101))
    await harness.settle()
    items = await harness.items()
    assert storm_items(items, OutboxKind.REPLY_EDIT) == []
    [delete] = storm_items(items, OutboxKind.DELETE_FILE)
    assert upload.key.endswith(delete.payload["upload"])


UNAVAILABLE = "ResourceProxyTargetUnavailable"
CHURN = "ResourceProxyPeerChurn"  # joins the incident of an unavailable target (the storm's: NoHealthyPeers)


def hung_target_webhook(name: str) -> bytes:
    """An alert on `team-a/db`, whose peers are all quarantined (its endpoints: an incident's cause)."""
    one = alert(f"{name}-1", name, target="team-a/db")
    return webhook([one], group=f'{{}}:{{alertname="{name}", target="team-a/db"}}')


def hung_and_unsynced(targets: Iterable[str]) -> str:
    """team-a/db down on its own (no healthy peer), every other target's cache unsynced."""
    hung = page(["team-a/db"], healthy=0, quarantined=2)
    rest = [line for line in page(targets, synced=0).splitlines() if not line.startswith("#")]
    return hung + "\n".join(rest) + "\n"


async def test_an_alert_that_joined_an_incident_before_the_storm_counts_in_its_summary(
    harness: Harness,
) -> None:
    harness.live.snapshot = parse_syncer(hung_and_unsynced(target(i) for i in range(30)))
    await harness.run(hung_target_webhook(UNAVAILABLE))  # posted: the incident of team-a/db
    await harness.run(hung_target_webhook(CHURN))  # joins that incident's message
    assert [i.payload["group_key"] for i in storm_items(await harness.items(), OutboxKind.POST)] == []
    for i in range(30):
        await harness.accept(storm_webhook(i))
    await harness.run()
    await harness.settle(StormPolicy().first_within_seconds)
    [summary] = storm_items(await harness.items(), OutboxKind.POST)
    text = shown(summary)
    assert f"*{CHURN}*: 1 alert on 1 target" in text
    assert f"*{UNAVAILABLE}*: 1 alert on 1 target" in text
    assert "32 alerts in 32 groups on 31 targets" in text
    [reply] = tables(await harness.items())
    assert f"team-a/db  {CHURN}, {UNAVAILABLE}" in table(reply)


async def test_an_alert_joining_an_incident_during_the_storm_counts_in_its_summary(
    harness: Harness,
) -> None:
    policy = StormPolicy(groups=3)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    harness.live.snapshot = parse_syncer(hung_and_unsynced(target(i) for i in range(3)))
    await harness.run(hung_target_webhook(UNAVAILABLE))  # posted: the incident of team-a/db
    await harness.run(hung_target_webhook(CHURN))  # a member: the incident keeps its message
    for i in range(3):
        await harness.run(storm_webhook(i))
    await harness.settle(policy.first_within_seconds)
    [summary] = storm_items(await harness.items(), OutboxKind.POST)
    assert "*ResourceProxyNoHealthyPeers*: 3 alerts on 3 targets" in shown(summary)
    # team-a/db's NoHealthyPeers joins the incident while the storm lasts: the summary counts it too.
    await harness.run(hung_target_webhook("ResourceProxyNoHealthyPeers"))
    await harness.settle()
    items = await harness.items()
    [edit] = storm_items(items, OutboxKind.UPDATE)
    assert "*ResourceProxyNoHealthyPeers*: 4 alerts on 4 targets" in shown(edit)
    assert len(storm_items(items, OutboxKind.POST)) == 1


async def test_the_first_summary_waits_for_new_groups_to_pause_but_not_longer_than_its_cap(
    harness: Harness,
) -> None:
    policy = StormPolicy(groups=2, gather_seconds=0.4, first_within_seconds=1.5)
    harness.pipeline = harness.make_pipeline(settings(), policy)

    async def summaries() -> list[OutboxItem]:
        return storm_items(await harness.items(), OutboxKind.POST)

    for i in range(3):
        await harness.run(storm_webhook(i))
    started = harness.clock.now
    assert await summaries() == []
    for i in range(3, 7):  # a new group every 0.3 s: never a 0.4 s pause
        harness.clock.now += 0.3
        await harness.run(storm_webhook(i))
        assert await summaries() == []
    assert harness.pipeline.next_deadline() == started + 1.5
    harness.clock.now = started + 1.5
    await harness.pipeline.expire_storms()
    [summary] = await summaries()
    assert "7 alerts" in summary.payload["text"]
    # New groups were still coming: the table waits for them to pause, the summary is edited with it.
    assert tables(await harness.items()) == []
    harness.clock.now += 0.1
    await harness.run(storm_webhook(7))
    assert len(await summaries()) == 1
    deadline = harness.pipeline.next_deadline()
    assert deadline is not None
    assert deadline <= harness.clock.now + 0.4
    harness.clock.now += 0.4
    await harness.pipeline.expire_storms()
    items = await harness.items()
    [edit] = storm_items(items, OutboxKind.UPDATE)
    assert "8 alerts" in edit.payload["text"]
    [upload] = tables(items)
    assert target(7) in table(upload)


async def test_the_table_goes_at_its_latest_while_new_groups_keep_coming(harness: Harness) -> None:
    policy = StormPolicy(groups=2, gather_seconds=0.4, first_within_seconds=1.5, table_within_seconds=4.0)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    started = harness.clock.now
    for i in range(20):  # a new group every 0.3 s for 6 s
        await harness.run(storm_webhook(i))
        await harness.pipeline.expire_storms()
        harness.clock.now += 0.3
    [upload] = tables(await harness.items())
    # The third group started the storm (at 0.6 s): its table's latest is 4.6 s, first looked at 4.8 s.
    assert upload.created_at == pytest.approx(started + 4.8)
    assert target(16) in table(upload)
    assert target(17) not in table(upload)  # in the next table, a refresh later


def second_alert_webhook(i: int) -> bytes:
    """Group `i`'s update, as Alertmanager sends it a group_interval later: a second alert joined."""
    one = alert(f"s{i}", target=target(i))
    two = alert(f"t{i}", "ResourceProxyHighErrorRate", target=target(i))
    return webhook([one, two], group=f'{{}}:{{target="{target(i)}"}}')


async def test_a_trickle_is_whole_in_slack_once_it_pauses_in_a_handful_of_calls(harness: Harness) -> None:
    """New groups every 0.3 s for 12 s, then each group's update for 12 s: the summary's count is edited
    as it grows (each edit four times as long after the one before), the table waits for the changes to
    pause, then one edit and one table name every target with every alert."""
    policy = StormPolicy(groups=2)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for body in [storm_webhook(i) for i in range(40)] + [second_alert_webhook(i) for i in range(40)]:
        await harness.run(body)
        await harness.pipeline.expire_storms()
        harness.clock.now += 0.3
    last_change = harness.clock.now - 0.3
    items = await harness.items()
    assert tables(items) == []  # the storm kept changing: no table yet
    [summary] = storm_items(items, OutboxKind.POST)
    growing = storm_items(items, OutboxKind.UPDATE)
    # Edits 4 s after the post, then 16 s after that (looked at every 0.3 s); the next would be 64 s later.
    assert [round(e.created_at - summary.created_at, 1) for e in growing] == [4.2, 20.4]
    assert harness.pipeline.next_deadline() == pytest.approx(last_change + policy.gather_seconds)
    harness.clock.now = last_change + policy.gather_seconds
    await harness.pipeline.expire_storms()
    items = await harness.items()
    [upload] = tables(items)
    assert all(target(i) in table(upload) for i in range(40))
    final = storm_items(items, OutboxKind.UPDATE)[-1]
    assert "80 alerts" in final.payload["text"]
    calls = [i for i in items if i.payload["group_key"].startswith("storm:")]
    assert len(calls) == 1 + len(growing) + 2  # the post, the growing edits, the last edit, the table


async def test_the_table_waits_for_the_queue_to_empty_not_only_for_the_count_to_pause(
    harness: Harness,
) -> None:
    """A pause in the storm's count with notifications still queued (another channel's, or the worker
    rendering a big summary meanwhile) is no pause: the table would go out short of targets."""
    policy = StormPolicy(groups=2)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for body in [*(storm_webhook(i) for i in range(3)), storm_webhook(90, "beta"), storm_webhook(3)]:
        await harness.accept(body)
        harness.clock.now += 0.001  # webhooks arrive one after another (`Arrivals`: one tick is no pause)
    *queued, last = await harness.store.pending()
    for notification in queued:
        await harness.pipeline.process(notification)
        assert tables(await harness.items()) == [], "a table with targets still queued"
        harness.clock.now += (
            2 * policy.gather_seconds
        )  # alpha's storm does not change while beta's is applied
    # The queue empties with the last: all arrived long before, so the table goes at once, whole.
    await harness.pipeline.process(last, settle=True)
    [upload] = tables(await harness.items())
    assert all(target(i) in table(upload) for i in range(4))


@pytest.mark.parametrize(
    ("behind", "shared_store", "full_batch", "newer", "waits"),
    [
        (1.0, False, False, False, False),
        (0.5, False, False, False, True),
        (1.0, True, False, False, True),
        (1.0, False, True, False, False),
        (1.0, False, True, True, True),
    ],
    ids=["paused", "recent", "shared-store", "full-batch", "full-batch-newer-queued"],
)
async def test_a_backlog_applied_after_its_senders_paused_gets_its_table_when_the_queue_empties(
    harness: Harness, behind: float, shared_store: bool, full_batch: bool, newer: bool, waits: bool
) -> None:
    """The worker behind (a fleet's storm): nothing arrived for `gather_seconds` or more when the queue
    ran empty, so the storm's changes have paused already and the table does not wait again: with the
    last notification applied, or, when the queue emptied on a full batch (no settle: the worker finds
    it empty only at its next look), when the worker then ends quiet storms. While the newest arrival is
    more recent than that, not applied yet, or not known (replicas sharing a store each take
    notifications in), the table waits for the pause as before."""
    policy = StormPolicy(groups=2)
    harness.pipeline = harness.make_pipeline(settings(), policy, shared_store=shared_store)
    for i in range(6):
        await harness.accept(storm_webhook(i))
        harness.clock.now += 0.001  # one after another (`Arrivals`: several in one tick are no pause)
    harness.clock.now += behind * policy.gather_seconds  # the worker gets to them this long after
    queued = await harness.store.pending()
    for notification in queued:
        settle = notification is queued[-1] and not full_batch
        await harness.pipeline.process(notification, settle=settle)
    if full_batch:
        if newer:
            await harness.accept(storm_webhook(6))  # after the drain's last look: not applied
        await harness.pipeline.expire_storms()  # as the worker does once a drain finds nothing more
    if waits:
        assert tables(await harness.items()) == [], "a table before the pause"
        harness.clock.now += policy.gather_seconds
        await harness.pipeline.expire_storms()
    [upload] = tables(await harness.items())
    assert all(target(i) in table(upload) for i in range(6))


async def test_a_notification_arriving_while_the_last_batch_is_applied_is_no_pause(
    harness: Harness,
) -> None:
    """The batch fetched, then a webhook arrives while it is applied, slowly (enrichment up to its
    budget): the queue looked empty when fetched, yet the newest arrival is not applied, so the table
    waits for it; once it is applied, with nothing newer for `gather_seconds`, the table goes whole."""
    policy = StormPolicy(groups=2)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for i in range(5):
        await harness.accept(storm_webhook(i))
    batch = await harness.store.pending()
    harness.clock.now += 2 * policy.gather_seconds
    await harness.accept(storm_webhook(5))  # after the fetch: not in the batch
    harness.clock.now += 2 * policy.gather_seconds  # the batch still being applied
    for notification in batch:
        await harness.pipeline.process(notification, settle=notification is batch[-1])
    assert tables(await harness.items()) == [], "a table without target 5"
    await harness.run()  # the next drain applies it: nothing arrived since, for longer than the pause
    [upload] = tables(await harness.items())
    assert all(target(i) in table(upload) for i in range(6))


async def test_later_changes_edit_the_summary_and_replace_the_table_at_most_once_per_refresh(
    harness: Harness,
) -> None:
    policy = StormPolicy(groups=2)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for i in range(3):
        await harness.run(storm_webhook(i))
    await harness.settle(policy.first_within_seconds)
    [first_table] = tables(await harness.items())
    for i in range(3, 6):
        harness.clock.now += 5
        await harness.run(storm_webhook(i))
        await harness.pipeline.expire_storms()
    items = await harness.items()
    assert storm_items(items, OutboxKind.UPDATE) == []
    assert len(tables(items)) == 1
    assert harness.pipeline.next_deadline() == first_table.created_at + policy.refresh_seconds
    await harness.settle(policy.refresh_seconds - 15)
    items = await harness.items()
    [edit] = storm_items(items, OutboxKind.UPDATE)
    assert "6 alerts" in edit.payload["text"]
    [_, second_table] = tables(items)
    assert target(5) in table(second_table)
    # The table reply is edited in place: nothing to delete.
    assert second_table.kind is OutboxKind.REPLY_EDIT
    assert second_table.key.startswith(first_table.key.replace("reply:", "reply-edit:", 1))
    assert storm_items(items, OutboxKind.DELETE_FILE) == []
    # The same notification again changes nothing: no call at the next refresh.
    await harness.run(storm_webhook(5))
    before = len(await harness.items())
    await harness.settle()
    assert len(await harness.items()) == before


async def test_a_storm_whose_alerts_all_resolved_is_edited_to_resolved_with_its_duration(
    harness: Harness,
) -> None:
    harness.pipeline = harness.make_pipeline(settings(), StormPolicy(groups=2))
    for i in range(4):
        await harness.run(storm_webhook(i))
    await harness.settle(StormPolicy().first_within_seconds)
    harness.clock.now += 60
    for i in range(4):
        await harness.run(storm_webhook(i, resolved=True))
    items = await harness.items()
    last = storm_items(items, OutboxKind.UPDATE)[-1]
    assert "Alert storm resolved" in last.payload["text"]
    assert "*Resolved after 1 min*" in shown(last)
    assert "(resolved)" in table(tables(items)[-1])
    [row] = await storm_rows(harness)
    assert row.status.value == "resolved"
    await harness.run(storm_webhook(10))  # the channel is calm again: a new group is posted alone
    assert (await harness.items())[-1].payload["group_key"] == '{}:{target="team-10/db"}'


async def test_a_quiet_storm_ends_and_a_later_change_of_its_groups_still_edits_it(harness: Harness) -> None:
    policy = StormPolicy(groups=2, window_seconds=60, quiet_seconds=120)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for i in range(4):
        await harness.run(storm_webhook(i))
    await harness.settle(policy.first_within_seconds)
    [summary] = storm_items(await harness.items(), OutboxKind.POST)
    storm_key = summary.payload["group_key"]
    assert harness.pipeline.next_deadline() == summary.created_at + 120 - policy.first_within_seconds
    harness.clock.now += 117
    assert await harness.pipeline.expire_storms() == []
    harness.clock.now += 2
    assert await harness.pipeline.expire_storms() == [storm_key]
    last = storm_items(await harness.items(), OutboxKind.UPDATE)[-1]
    assert "Alert storm over" in last.payload["text"]
    assert "4 alerts still firing" in shown(last)
    await harness.run(storm_webhook(3, resolved=True))
    late = storm_items(await harness.items(), OutboxKind.UPDATE)[-1]
    assert "3 alerts still firing" in shown(late)
    assert len(tables(await harness.items())) == 1  # no new table for it


async def test_targets_of_a_cluster_not_read_in_time_say_so(harness: Harness) -> None:
    harness.pipeline = harness.make_pipeline(settings(timeout=0.05), StormPolicy(groups=2, read_seconds=0.05))
    harness.live.gate = asyncio.Event()  # every read hangs
    for i in range(3):
        await harness.run(storm_webhook(i))
    await harness.settle(StormPolicy().first_within_seconds)
    items = await harness.items()
    [summary] = storm_items(items, OutboxKind.POST)
    assert "3 live state not read" in shown(summary)
    assert "no shared cause stands out" not in shown(summary)
    rows = table(tables(items)[0]).splitlines()[3:]
    assert all("live state not read: not read within 0.05 s" in r for r in rows)
    harness.live.gate.set()


async def test_a_notification_held_for_its_storm_row_is_not_applied_again_over_a_newer_one(
    harness: Harness,
) -> None:
    policy = StormPolicy(groups=2, settle_seconds=0.25)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for i in range(4):  # the third starts the storm, the fourth joins it
        await harness.accept(storm_webhook(i))
    *before, starting, first = await harness.store.pending()
    for notification in before:
        assert await harness.pipeline.process(notification)
    assert await harness.pipeline.process(starting, settle=True)  # the storm's row is saved with it
    assert not await harness.pipeline.process(first, settle=True)  # held until the storm's row counts it
    group = '{}:{target="team-3/db"}'
    await harness.accept(
        webhook([alert("s3", target="team-3/db"), alert("s3b", target="team-3/db")], group=group)
    )
    [update] = [n for n in await harness.store.pending() if n.id != first.id]
    assert await harness.pipeline.process(update)  # the group now has two alerts; closed at once
    # The worker's next drain lists the held notification again (it is still pending in the store).
    [again] = await harness.store.pending()
    assert again.id == first.id
    assert not await harness.pipeline.process(again, settle=True)
    state = await harness.store.get_group(CHANNEL, group)
    assert state is not None
    assert state.firing_fingerprints == {"s3", "s3b"}  # not set back to the older notification's one alert
    harness.clock.now += 0.25
    await harness.pipeline.expire_storms()
    assert await harness.store.pending() == []
    [row] = await storm_rows(harness)
    assert row.storm is not None
    assert len(row.storm.entries[group]) == 2


async def test_later_alerts_of_a_group_posted_before_the_storm_count_in_the_summary(
    harness: Harness,
) -> None:
    policy = StormPolicy(groups=2)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    await harness.run(storm_webhook(0))
    posted = await harness.store.outbox_item(f'post:{CHANNEL}:{{}}:{{target="team-0/db"}}')
    assert posted is not None
    await harness.store.complete(posted.id, {"ts": "1.0"})  # it went out before the storm
    for i in range(1, 4):
        await harness.run(storm_webhook(i))
    group = '{}:{target="team-0/db"}'
    two = webhook([alert("s0", target="team-0/db"), alert("s0b", target="team-0/db")], group=group)
    await harness.run(two)
    await harness.settle(policy.first_within_seconds)
    items = await harness.items()
    # Its own message and thread are not edited for a change the storm's summary shows: what is queued
    # for it is its details reply only (no edit, no "alerts added" reply).
    [details] = [e for e in items if e.payload["group_key"] == group]
    assert (details.kind, details.key) == (OutboxKind.REPLY, f"reply:{CHANNEL}:{group}:details")
    [summary] = storm_items(items, OutboxKind.POST)
    assert "5 alerts" in summary.payload["text"]
    assert "team-0/db  ResourceProxyNoHealthyPeers x2" in table(tables(items)[0])
    state = await harness.store.get_group(CHANNEL, group)
    assert state is not None
    assert state.facts.storm_thread is None  # it keeps its own message
    assert state.facts.storm_share is not None
    assert len(state.facts.storm_share.entries) == 2
    assert state.firing_fingerprints == {"s0", "s0b"}


async def test_a_group_posted_before_the_storm_has_its_message_brought_up_to_date_once_when_it_ends(
    harness: Harness,
) -> None:
    """Its second alert shows in the summary while the storm lasts; when the storm ends its own message
    is edited once to show both, and a restart after that (its row reloaded) queues nothing more."""
    policy = StormPolicy(groups=2, quiet_seconds=120)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    await harness.run(storm_webhook(0))
    group = '{}:{target="team-0/db"}'
    posted = await harness.store.outbox_item(f"post:{CHANNEL}:{group}")
    assert posted is not None
    await harness.store.complete(posted.id, {"ts": "1.0"})  # it went out before the storm
    for i in range(1, 4):
        await harness.run(storm_webhook(i))
    await harness.run(
        webhook([alert("s0", target="team-0/db"), alert("s0b", target="team-0/db")], group=group)
    )
    await harness.settle(policy.first_within_seconds)

    def own_edits(items: list[OutboxItem]) -> list[OutboxItem]:
        return [e for e in items if e.kind is OutboxKind.UPDATE and e.payload["group_key"] == group]

    assert own_edits(await harness.items()) == []  # held back while the storm lasts
    state = await harness.store.get_group(CHANNEL, group)
    assert state is not None
    assert state.facts.held_message is not None
    harness.clock.now += policy.quiet_seconds
    [storm_key] = await harness.pipeline.expire_storms()
    [edit] = own_edits(await harness.items())
    assert edit.key == f"update:{CHANNEL}:{group}:after:{storm_key}"
    assert "1 alert firing" in shown(posted)
    assert "2 alerts firing" in shown(edit)
    state = await harness.store.get_group(CHANNEL, group)
    assert state is not None
    assert state.facts.held_message is None
    # Another storm's end, or a restart, finds nothing held: no second edit.
    harness.pipeline = harness.make_pipeline(settings(), policy)
    await harness.pipeline.restore()
    await harness.pipeline.expire_storms()
    assert len(own_edits(await harness.items())) == 1


async def test_a_group_posted_before_the_storm_with_no_later_change_is_not_edited_when_it_ends(
    harness: Harness,
) -> None:
    policy = StormPolicy(groups=2, quiet_seconds=120)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    await harness.run(storm_webhook(0))
    group = '{}:{target="team-0/db"}'
    posted = await harness.store.outbox_item(f"post:{CHANNEL}:{group}")
    assert posted is not None
    await harness.store.complete(posted.id, {"ts": "1.0"})
    for i in range(1, 4):
        await harness.run(storm_webhook(i))
    await harness.settle(policy.first_within_seconds)
    harness.clock.now += policy.quiet_seconds
    assert len(await harness.pipeline.expire_storms()) == 1
    items = await harness.items()
    assert [e for e in items if e.kind is OutboxKind.UPDATE and e.payload["group_key"] == group] == []


async def test_a_group_posted_before_the_storm_shows_its_resolution_on_its_own_message(
    harness: Harness,
) -> None:
    policy = StormPolicy(groups=2)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    await harness.run(storm_webhook(0))
    posted = await harness.store.outbox_item(f'post:{CHANNEL}:{{}}:{{target="team-0/db"}}')
    assert posted is not None
    await harness.store.complete(posted.id, {"ts": "1.0"})
    for i in range(1, 4):
        await harness.run(storm_webhook(i))
    await harness.run(storm_webhook(0, resolved=True))
    await harness.settle(policy.first_within_seconds)
    items = await harness.items()
    group = '{}:{target="team-0/db"}'
    [edit] = [e for e in items if e.kind is OutboxKind.UPDATE and e.payload["group_key"] == group]
    assert "resolved" in shown(edit).lower()
    assert "4 alerts in 4 groups" in storm_items(items, OutboxKind.POST)[0].payload["text"]


async def test_a_storm_survives_a_restart_and_its_next_table_replaces_the_old(harness: Harness) -> None:
    policy = StormPolicy(groups=1)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    await harness.run(storm_webhook(0))
    await harness.run(storm_webhook(1))
    await harness.settle(policy.first_within_seconds)
    [first_table] = tables(await harness.items())
    assert first_table.kind is OutboxKind.REPLY
    restarted = harness.make_pipeline(settings(), policy)
    await restarted.restore()
    harness.pipeline = restarted
    await harness.run(storm_webhook(2))
    await harness.settle()
    items = await harness.items()
    assert len(storm_items(items, OutboxKind.POST)) == 1
    assert "3 alerts" in storm_items(items, OutboxKind.UPDATE)[-1].payload["text"]
    # The restarted process knows the table is a reply: it edits it.
    assert tables(items)[-1].kind is OutboxKind.REPLY_EDIT
    assert tables(items)[-1].payload["reply"] == "table"
    assert storm_items(items, OutboxKind.DELETE_FILE) == []
    # What the storm's row kept of each alert (its start) is in the new table.
    rows = table(tables(items)[-1]).splitlines()[3:]
    assert [r.split()[1] for r in rows] == [target(0), target(1), target(2)]
    assert all(r.endswith("2023-11-14 22:00:00") for r in rows)


async def test_a_restart_counts_the_groups_saved_after_the_storms_row(harness: Harness) -> None:
    policy = StormPolicy(groups=1)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for i in range(2):
        await harness.run(storm_webhook(i))
    await harness.settle(policy.first_within_seconds)
    for i in range(2, 5):
        await harness.accept(storm_webhook(i))
    for notification in await harness.store.pending():
        await harness.pipeline.process(notification)  # not settling: the storm's row is not saved
    [row] = await storm_rows(harness)
    assert row.storm is not None
    assert len(row.storm.entries) == 2
    restarted = harness.make_pipeline(settings(), policy)
    await restarted.restore()  # the process died here
    harness.pipeline = restarted
    await harness.run(storm_webhook(5))
    await harness.settle()
    edits = storm_items(await harness.items(), OutboxKind.UPDATE)
    assert "6 alerts" in edits[-1].payload["text"]
    [row] = await storm_rows(harness)
    assert row.storm is not None
    assert len(row.storm.entries) == 6


class Killed(Exception):
    """The process died here (raised out of the pipeline, as a kill -9 leaves the store)."""


def kill_at_withdrawal(harness: Harness, group_key: str) -> None:
    """The next withdrawal of `group_key`'s post does not happen: the process dies just before it."""
    withdraw = harness.outbox.withdraw_post

    async def dying(channel: str, group: str, *, folded_into: str) -> Withdrawal:
        if group == group_key:
            harness.outbox.withdraw_post = withdraw  # type: ignore[method-assign]
            raise Killed
        return await withdraw(channel, group, folded_into=folded_into)

    harness.outbox.withdraw_post = dying  # type: ignore[method-assign]


def group_of(i: int) -> str:
    return f'{{}}:{{target="{target(i)}"}}'


async def started_storm_killed_mid_fold(harness: Harness, policy: StormPolicy) -> None:
    """Groups 0 and 1 queued their posts; group 2 starts a storm, and the process dies while folding
    group 1 (group 0 folded, group 1 marked as the storm's, its post still queued); then it restarts."""
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for i in range(2):
        await harness.run(storm_webhook(i))
    kill_at_withdrawal(harness, group_of(1))
    with pytest.raises(Killed):
        await harness.run(storm_webhook(2))
    harness.pipeline = harness.make_pipeline(settings(), policy)


async def test_a_kill_while_folding_the_first_groups_loses_none_of_them(harness: Harness) -> None:
    policy = StormPolicy(groups=2)
    await started_storm_killed_mid_fold(harness, policy)
    await harness.pipeline.restore()
    await harness.run()  # group 2's notification was not closed: applied again
    await harness.settle(policy.first_within_seconds)
    for i in range(2):  # both folded: the storm is their only trace
        post = await harness.store.outbox_item(f"post:{CHANNEL}:{group_of(i)}")
        assert post is not None
        assert post.state is OutboxState.DONE
        assert post.result is not None
        assert post.result["folded_into"].startswith(f"storm:{CHANNEL}:")
    items = await harness.items()
    [upload] = tables(items)
    assert [r.split()[1] for r in table(upload).splitlines()[3:]] == [target(i) for i in range(3)]
    # A later change of a folded group shows in the storm, not on a message that never went out.
    two = webhook([alert("s0", target=target(0)), alert("s0b", target=target(0))], group=group_of(0))
    await harness.run(two)
    await harness.settle()
    [edit, *_] = storm_items(await harness.items(), OutboxKind.UPDATE)
    assert "4 alerts" in edit.payload["text"]


async def test_a_group_marked_mid_fold_whose_post_went_out_keeps_its_own_message(harness: Harness) -> None:
    policy = StormPolicy(groups=2)
    await started_storm_killed_mid_fold(harness, policy)
    post = await harness.store.outbox_item(f"post:{CHANNEL}:{group_of(1)}")
    assert post is not None
    await harness.store.mark_sending(post.id, harness.clock())  # the old sender had it on its way
    await harness.pipeline.restore()
    state = await harness.store.get_group(CHANNEL, group_of(1))
    assert state is not None
    assert state.facts.storm_thread is None  # its changes go to its own message
    assert state.facts.storm_share is not None  # and still count in the storm


async def test_a_group_marked_mid_fold_whose_post_reached_slack_keeps_its_own_message(
    harness: Harness,
) -> None:
    policy = StormPolicy(groups=2)
    await started_storm_killed_mid_fold(harness, policy)
    post = await harness.store.outbox_item(f"post:{CHANNEL}:{group_of(1)}")
    assert post is not None
    await harness.store.complete(post.id, {"ts": "7.0"})  # the old sender's post reached Slack ...
    await harness.store.record_post(CHANNEL, group_of(1), "7.0", "C1")  # ... and its answer was kept
    await harness.pipeline.restore()
    state = await harness.store.get_group(CHANNEL, group_of(1))
    assert state is not None
    assert (state.ts, state.facts.storm_thread) == ("7.0", None)
