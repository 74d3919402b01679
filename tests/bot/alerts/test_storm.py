"""Storm mode through the pipeline: many new groups in one channel become one summary and thread lines."""

from __future__ import annotations

from bot.alerts.storm import StormPolicy
from bot.store import AlertGroupState, OutboxItem, OutboxKind, OutboxState
from tests.fakes.alert_pipeline import Harness, alert, settings, text_of, webhook


def storm_webhook(i: int, cluster: str = "alpha") -> bytes:
    return webhook(
        [alert(f"s{i}", cluster=cluster, target=f"team-{i}/db")], group=f'{{}}:{{target="team-{i}/db"}}'
    )


def lines_in(items: list[OutboxItem]) -> int:
    replies = [i for i in items if i.kind is OutboxKind.REPLY]
    return sum(len(i.payload["blocks"][0]["text"]["text"].splitlines()) for i in replies)


async def test_thirty_new_groups_become_a_storm_summary_and_thread_lines(harness: Harness) -> None:
    for i in range(30):
        await harness.accept(storm_webhook(i, cluster="alpha" if i % 2 else "beta"))
    # Both clusters post to one channel here, so the cause reads "several clients at once".
    harness.pipeline = harness.make_pipeline(settings(channel="#fleet"))
    await harness.run()
    await harness.settle()
    items = await harness.items()
    posts = [i for i in items if i.kind is OutboxKind.POST]
    # The ten groups before the storm was recognisable had not gone out: they joined its thread.
    [summary_post] = posts
    storm_key = summary_post.payload["group_key"]
    assert storm_key.startswith("storm:#fleet:")
    assert lines_in(items) == 30
    replies = [i for i in items if i.kind is OutboxKind.REPLY]
    assert len(replies) < 30  # lines are gathered, not one Slack call each
    assert all(r.payload["group_key"] == storm_key for r in replies)
    latest = [i for i in items if i.kind is not OutboxKind.REPLY and i.payload["group_key"] == storm_key][-1]
    assert latest.kind is OutboxKind.UPDATE
    assert "30 alerts" in latest.payload["text"]
    assert "shared platform path" in latest.payload["text"]
    folded = await harness.store.outbox_item('post:#fleet:{}:{target="team-0/db"}')
    assert folded is not None
    assert (folded.state, folded.result) == (OutboxState.DONE, {"folded_into": storm_key})


async def storm_rows(harness: Harness, channel: str = "#alpha-alerts") -> list[AlertGroupState]:
    return [g for g in await harness.store.groups(channel) if g.group_key.startswith("storm:")]


async def test_the_summary_is_posted_at_once_then_edited_at_most_once_per_linger(harness: Harness) -> None:
    policy = StormPolicy(groups=2, linger_seconds=2.0, settle_seconds=0.25)
    harness.pipeline = harness.make_pipeline(settings(), policy)

    async def edits() -> list[OutboxItem]:
        return [i for i in await harness.items() if i.kind is OutboxKind.UPDATE]

    for i in range(3):
        await harness.accept(storm_webhook(i))
    for notification in await harness.store.pending():
        assert await harness.pipeline.process(notification)  # not settling: closed at once
    summary = [i for i in await harness.items() if i.kind is OutboxKind.POST]
    assert [i.payload["group_key"][:7] for i in summary] == ["storm:#"]
    assert "3 alerts" in summary[0].payload["text"]  # the groups that started it are counted at once
    for i in range(3, 20):
        await harness.accept(storm_webhook(i))
    await harness.run()
    assert await edits() == []  # seventeen more groups within the linger: no edit yet
    # The last one is held open until the storm's row counts it (nothing pending = rows complete).
    assert [n.webhook.group_key for n in await harness.store.pending()] == ['{}:{target="team-19/db"}']
    assert harness.pipeline.next_deadline() == harness.clock.now + 0.25
    harness.clock.now += 0.25
    await harness.pipeline.expire_storms()  # the worker's deadline loop
    assert await harness.store.pending() == []
    assert await edits() == []  # the row is saved; Slack still waits for the linger
    [row] = await storm_rows(harness)
    assert row.storm is not None
    assert len(row.storm.entries) == 20
    harness.clock.now += 1.75
    await harness.pipeline.expire_storms()
    [edit] = await edits()
    assert "20 alerts" in edit.payload["text"]
    await harness.run(storm_webhook(20))
    await harness.run(storm_webhook(21))
    assert len(await edits()) == 1
    harness.clock.now += 2.0
    await harness.pipeline.expire_storms()
    assert "22 alerts" in (await edits())[-1].payload["text"]


async def test_a_notification_held_for_its_storm_row_is_not_applied_again_over_a_newer_one(
    harness: Harness,
) -> None:
    policy = StormPolicy(groups=2, linger_seconds=2.0, settle_seconds=0.25)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for i in range(4):  # the third starts the storm (its row is saved), the fourth joins it
        await harness.accept(storm_webhook(i))
    *before, first = await harness.store.pending()
    for notification in before:
        assert await harness.pipeline.process(notification)
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
    state = await harness.store.get_group("#alpha-alerts", group)
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
    posted = await harness.store.outbox_item('post:#alpha-alerts:{}:{target="team-0/db"}')
    assert posted is not None
    await harness.store.complete(posted.id, {"ts": "1.0"})  # it went out before the storm
    for i in range(1, 4):
        await harness.run(storm_webhook(i))
    group = '{}:{target="team-0/db"}'
    two = webhook([alert("s0", target="team-0/db"), alert("s0b", target="team-0/db")], group=group)
    await harness.run(two)
    await harness.settle()
    edits = [i for i in await harness.items() if i.kind is OutboxKind.UPDATE]
    assert group in [e.payload["group_key"] for e in edits]  # its own message is edited in place
    summary = [e for e in edits if e.payload["group_key"].startswith("storm:")][-1]
    assert "5 alerts" in summary.payload["text"]
    [row] = await storm_rows(harness)
    assert row.storm is not None
    assert len(row.storm.entries[group]) == 2
    state = await harness.store.get_group("#alpha-alerts", group)
    assert state is not None
    assert state.facts.storm_thread is None  # it keeps its own message
    assert state.facts.storm_share is not None
    assert len(state.facts.storm_share.entries) == 2


async def test_a_storm_ends_after_quiet_and_new_groups_post_again(harness: Harness) -> None:
    policy = StormPolicy(groups=2, window_seconds=60, quiet_seconds=120)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for i in range(4):
        await harness.run(storm_webhook(i))
    storm_key = next(
        i.payload["group_key"]
        for i in await harness.items()
        if i.kind is OutboxKind.POST and i.payload["group_key"].startswith("storm:")
    )
    await harness.settle()  # the summary's last edit went out: only the storm's end is ahead
    assert harness.pipeline.next_deadline() == harness.clock.now + 118
    harness.clock.now += 117
    assert await harness.pipeline.expire_storms() == []
    harness.clock.now += 1
    assert await harness.pipeline.expire_storms() == [storm_key]
    last = (await harness.items())[-1]
    assert last.kind is OutboxKind.UPDATE
    assert "storm over" in last.payload["text"]
    state = await harness.store.get_group("#alpha-alerts", storm_key)
    assert state is not None
    assert state.status.value == "resolved"
    await harness.run(storm_webhook(10))
    assert (await harness.items())[-1].kind is OutboxKind.POST
    assert (await harness.items())[-1].payload["group_key"] == '{}:{target="team-10/db"}'


async def test_a_change_in_a_storm_group_goes_to_the_storm_thread(harness: Harness) -> None:
    harness.pipeline = harness.make_pipeline(settings(), StormPolicy(groups=1))
    await harness.run(storm_webhook(0))
    await harness.run(storm_webhook(1))
    await harness.settle()
    before = {i.id for i in await harness.items()}
    resolved = webhook([alert("s1", target="team-1/db", resolved=True)], group='{}:{target="team-1/db"}')
    await harness.run(resolved)
    await harness.settle()
    new = [i for i in await harness.items() if i.id not in before]
    assert {i.payload["group_key"] for i in new} == {new[0].payload["group_key"]}
    assert new[0].payload["group_key"].startswith("storm:")
    assert sorted(i.kind for i in new) == [OutboxKind.REPLY, OutboxKind.UPDATE]  # a line, a fresh count
    assert "resolved" in text_of(next(i for i in new if i.kind is OutboxKind.REPLY))


async def test_a_storm_survives_a_restart(harness: Harness) -> None:
    policy = StormPolicy(groups=1)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    await harness.run(storm_webhook(0))
    await harness.run(storm_webhook(1))
    restarted = harness.make_pipeline(settings(), policy)
    await restarted.restore()
    harness.pipeline = restarted
    await harness.run(storm_webhook(2))
    storm_posts = [
        i
        for i in await harness.items()
        if i.kind is OutboxKind.POST and i.payload["group_key"].startswith("storm:")
    ]
    assert len(storm_posts) == 1
    assert restarted.next_deadline() is not None


async def test_a_restart_counts_the_groups_saved_after_the_last_summary(harness: Harness) -> None:
    policy = StormPolicy(groups=1, linger_seconds=2.0)
    harness.pipeline = harness.make_pipeline(settings(), policy)
    for i in range(2):
        await harness.run(storm_webhook(i))
    for i in range(2, 5):
        await harness.accept(storm_webhook(i))
    for notification in await harness.store.pending():
        await harness.pipeline.process(notification)  # within the linger: no summary, no storm row save
    [row] = await storm_rows(harness)
    assert row.storm is not None
    assert len(row.storm.entries) == 2
    restarted = harness.make_pipeline(settings(), policy)
    await restarted.restore()  # the process died here
    harness.pipeline = restarted
    await harness.run(storm_webhook(5))
    edits = [i for i in await harness.items() if i.kind is OutboxKind.UPDATE]
    assert "6 alerts" in edits[-1].payload["text"]
    [row] = await storm_rows(harness)
    assert row.storm is not None
    assert len(row.storm.entries) == 6


async def test_long_thread_lines_go_to_more_replies_never_cut_off(harness: Harness) -> None:
    long = "x" * 120  # a long target name: 15 such lines are more than a reply's 3000 characters

    def long_webhook(i: int) -> bytes:
        target = f"team-{i}/{long}"
        return webhook([alert(f"s{i}", target=target)], group=f'{{}}:{{target="{target}"}}')

    for i in range(30):
        await harness.accept(long_webhook(i))
    await harness.run()
    await harness.settle()
    sections = [
        i.payload["blocks"][0]["text"]["text"] for i in await harness.items() if i.kind is OutboxKind.REPLY
    ]
    assert all(len(s) <= 3000 for s in sections)
    assert not [s for s in sections if "more" in s.splitlines()[-1]]
    shown = "\n".join(sections)
    assert [i for i in range(30) if f"team-{i}/{long}" not in shown] == []
