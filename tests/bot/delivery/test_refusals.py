"""What Slack refuses (200 `ok: false`): content is sent again smaller, then as text only, never dropped for
its size; a refusal an operator fixes pauses that channel only; each is one clear log line and a metric."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from bot.clients.slack import SlackClient
from bot.delivery.keys import post_key, update_key
from bot.delivery.worker import Delivery
from bot.metrics import BotMetrics
from bot.render.blocks import Message
from bot.store import OutboxState, Store
from tests.bot.delivery.test_worker import ALERTS, FAST, drained, msg, running, slack_at, until
from tests.fakes.slack_api import FakeSlack

POINTER = "[ERROR] must be less than 151 characters [json-pointer:/blocks/0/text/text]"


def headline(chars: int) -> Message:
    """A message whose header is over Slack's 150: the fake refuses it as Slack does (invalid_blocks)."""
    header = {"type": "header", "text": {"type": "plain_text", "text": "x" * chars}}
    return Message("ResourceProxyNoHealthyPeers firing", (header, *msg("0 healthy peers").blocks))


def counted(slack: SlackClient) -> BotMetrics:
    metrics = BotMetrics()
    slack.refused = lambda method, error: metrics.slack_refusals.labels(method, error).inc()
    return metrics


def refusals(metrics: BotMetrics, method: str, error: str) -> float:
    found = metrics.registry.get_sample_value(
        "proxybot_slack_refusals_total", {"method": method, "error": error}
    )
    return found or 0.0


async def test_a_refused_post_goes_out_smaller_with_slacks_words_in_the_log(
    fake: FakeSlack, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    slack = slack_at(fake.api_url)
    metrics = counted(slack)
    with caplog.at_level(logging.WARNING, logger="bot.delivery"):
        async with running(Delivery(store, slack, policy=FAST)) as delivery:
            await delivery.post(ALERTS, "grp", headline(151))
            await drained(store)
    [top] = fake.top_level(ALERTS)
    assert top.blocks[0]["type"] == "header"
    assert len(top.blocks[0]["text"]["text"]) <= 150
    assert "0 healthy peers" in str(top.blocks)
    assert [c.error for c in fake.calls_to("chat.postMessage")] == ["invalid_blocks", None]
    [line] = [r.getMessage() for r in caplog.records if "refused the content" in r.getMessage()]
    assert "post:#alerts:grp" in line
    assert "invalid_blocks" in line
    assert POINTER in line  # response_metadata.messages: where in the blocks Slack found the fault
    assert refusals(metrics, "chat.postMessage", "invalid_blocks") == 1


async def test_refused_twice_it_goes_out_as_text_only(fake: FakeSlack, store: Store) -> None:
    fake.fail("chat.postMessage", status=200, error="msg_blocks_too_long", times=2)
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", headline(20))
        await drained(store)
    [top] = fake.top_level(ALERTS)
    assert top.blocks == []
    assert top.text.splitlines()[0] == "ResourceProxyNoHealthyPeers firing"
    assert "0 healthy peers" in top.text
    posted = await store.outbox_item(post_key(ALERTS, "grp"))
    assert posted is not None
    assert posted.state is OutboxState.DONE


async def test_an_edit_refused_goes_out_smaller_then_text_only_replacing_the_blocks(
    fake: FakeSlack, store: Store
) -> None:
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", msg("firing"))
        await drained(store)
        await delivery.update(ALERTS, "grp", headline(400), revision="n2")
        await drained(store)
        [top] = fake.top_level(ALERTS)
        assert len(top.blocks[0]["text"]["text"]) <= 150
        fake.fail("chat.update", status=200, error="msg_too_long", times=2)
        await delivery.update(ALERTS, "grp", msg("resolved"), revision="n3")
        await drained(store)
    [top] = fake.top_level(ALERTS)
    # A text-only edit says `blocks: []`: Slack would otherwise keep showing the old blocks.
    assert (top.text, top.blocks) == ("resolved", [])
    assert fake.calls_to("chat.update")[-1].params["blocks"] == []


async def test_a_refused_thread_reply_goes_out_smaller(fake: FakeSlack, store: Store) -> None:
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", msg("firing"))
        await drained(store)
        await delivery.reply(ALERTS, "grp", headline(151), revision="n2")
        await drained(store)
    [top] = fake.top_level(ALERTS)
    [reply] = fake.thread(ALERTS, top.ts)
    assert len(reply.blocks[0]["text"]["text"]) <= 150


async def test_content_refused_three_times_is_given_up_and_the_channel_flows(
    fake: FakeSlack, store: Store
) -> None:
    fake.fail("chat.postMessage", status=200, error="invalid_blocks", times=3, messages=(POINTER,))
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "bad", headline(20))
        await delivery.update(ALERTS, "bad", msg("later"), revision="n2")
        await delivery.post(ALERTS, "good", msg("fine"))
        await drained(store)
    posted = await store.outbox_item(post_key(ALERTS, "bad"))
    assert posted is not None
    assert posted.state is OutboxState.FAILED
    assert "invalid_blocks" in (posted.last_error or "")
    assert POINTER in (posted.last_error or "")
    edit = await store.outbox_item(update_key(ALERTS, "bad", "n2"))
    assert edit is not None
    assert edit.state is OutboxState.FAILED
    assert [m.text for m in fake.top_level()] == ["fine"]


@pytest.mark.parametrize(
    ("error", "fix"),
    [("channel_not_found", "check the channel in the config"), ("not_in_channel", "invite the bot")],
)
async def test_a_channel_slack_refuses_waits_and_the_others_flow(
    fake: FakeSlack, store: Store, caplog: pytest.LogCaptureFixture, error: str, fix: str
) -> None:
    if error == "not_in_channel":
        fake.add_channel("#locked", member=False)
    slack = slack_at(fake.api_url)
    metrics = counted(slack)
    with caplog.at_level(logging.ERROR, logger="bot.delivery"):
        # The refused channel waits the backoff cap: long enough that it is refused once in this test.
        async with running(Delivery(store, slack, policy=replace(FAST, backoff_cap=30.0))) as delivery:
            await delivery.post("#locked", "grp", msg("firing"))
            await delivery.post("#locked", "other", msg("firing too"))
            await delivery.post(ALERTS, "grp", msg("delivered"))
            await delivery.post("#other", "grp", msg("delivered too"))

            async def tried() -> bool:
                return refusals(metrics, "chat.postMessage", error) > 0 and await store.depth() == 2

            await until(tried)
    assert [m.text for m in fake.top_level(ALERTS)] == ["delivered"]
    assert [m.text for m in fake.top_level("#other")] == ["delivered too"]
    for group in ("grp", "other"):  # kept for when the operator fixes it, not given up
        item = await store.outbox_item(post_key("#locked", group))
        assert item is not None
        assert item.state is OutboxState.PENDING
    [line] = [r.getMessage() for r in caplog.records if "Slack refused" in r.getMessage()]
    assert ("#locked", error, fix) == tuple(w for w in ("#locked", error, fix) if w in line)
    assert refusals(metrics, "chat.postMessage", error) == 1


async def test_a_refused_edit_of_the_details_reply_goes_out_smaller(fake: FakeSlack, store: Store) -> None:
    async with running(Delivery(store, slack_at(fake.api_url), policy=FAST)) as delivery:
        await delivery.post(ALERTS, "grp", msg("firing"))
        await delivery.reply_in_place(ALERTS, "grp", msg("details 1"), reply="details", revision="n1")
        await drained(store)
        await delivery.reply_in_place(ALERTS, "grp", headline(400), reply="details", revision="n2")
        await drained(store)
    [top] = fake.top_level(ALERTS)
    [details] = fake.thread(ALERTS, top.ts)
    assert len(details.blocks[0]["text"]["text"]) <= 150
    assert [c.error for c in fake.calls_to("chat.update")] == ["invalid_blocks", None]
    edit = await store.outbox_item(f"reply-edit:{ALERTS}:grp:details:n2")
    assert edit is not None
    assert edit.state is OutboxState.DONE
