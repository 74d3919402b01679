"""Acknowledge / Unacknowledge: signed presses and `/proxy ack|unack` through bolt's real dispatch, the
message posted and edited by the bot's own delivery worker at the strict fake Slack."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from bot.app import Deps, create_app
from bot.clients.slack import SlackClient
from bot.compose import slack_endpoints
from bot.delivery.keys import update_key
from bot.delivery.worker import Delivery
from bot.domain.alerts import AlertStatus
from bot.domain.messages import ActionRef
from bot.render.acknowledge import ack_button
from bot.render.blocks import Message, actions, context, section
from bot.render.slack import ACTION_ACK, ACTION_UNACK, ACTIONS_BLOCK_ID
from bot.store import AlertGroupState, OutboxState, Store
from bot.store.models import GroupFacts
from handlers import commands
from handlers.acknowledge import Acknowledger
from handlers.commands import CommandDeps
from tests.fakes.slack_api import FakeSlack, iter_texts
from tests.fakes.slack_app import (
    ALERTS,
    ALICE,
    BOB,
    GROUP_KEY,
    button_body,
    fake,
    make_settings,
    ref_value,
    store,
)
from tests.fakes.slack_requests import asgi, command_body, signed
from tests.waiting import eventually

__all__ = ["fake", "store"]

FIRED = 1_764_580_800.0  # 2025-12-01 09:20:00 UTC
PRESSED = FIRED + 125.0  # 2 min after it fired


class Clock:
    def __init__(self) -> None:
        self.now = PRESSED

    def __call__(self) -> float:
        return self.now


def alert_message(read_at: str = "09:20") -> Message:
    value = ref_value()
    return Message(
        "FIRING: ResourceProxyNoHealthyPeers on platform/crd-store",
        (
            section("*ResourceProxyNoHealthyPeers* on `platform/crd-store`"),
            context([f"live read {read_at} UTC"]),
            actions([ack_button(value)], ACTIONS_BLOCK_ID),
        ),
    )


async def fire(store: Store, delivery: Delivery, first_firing_at: float = FIRED) -> None:
    """The group firing, and its message queued as the alert side queues it."""
    await store.save_group(
        AlertGroupState(
            channel="#alerts",
            group_key=GROUP_KEY,
            status=AlertStatus.FIRING,
            first_firing_at=first_firing_at,
            facts=GroupFacts(firing_labels=({"alertname": "X", "target": "platform/crd-store"},)),
        )
    )
    await delivery.post("#alerts", GROUP_KEY, alert_message())


@contextlib.asynccontextmanager
async def running(
    tmp_path: Path, fake: FakeSlack, store: Store, clock: Clock
) -> AsyncIterator[tuple[httpx.AsyncClient, Delivery]]:
    settings = make_settings(tmp_path, fake.api_url)
    deps = Deps(settings=settings, store=store)
    delivery = Delivery(store, SlackClient.from_settings(settings.slack, timeout=5))
    acks = Acknowledger(store, delivery, clock=clock)
    command_deps = CommandDeps(settings, ctx=None, acks=acks)  # type: ignore[arg-type]  # ack reads no cluster
    routes, workers = slack_endpoints(
        settings,
        deps,
        replies=delivery,
        acks=acks,
        registrations=[lambda app: commands.register(app, command_deps)],
    )
    app = create_app(deps, [*workers, delivery.run], extra=routes)
    async with app.router.lifespan_context(app), asgi(app) as http:
        yield http, delivery


async def press(http: httpx.AsyncClient, body: str) -> None:
    answer = await http.post("/slack/events", content=body, headers=signed(body))
    assert (answer.status_code, answer.text) == (200, "")


def posted(fake: FakeSlack) -> Any:
    found = [m for m in fake.top_level(ALERTS) if "ResourceProxyNoHealthyPeers" in m.text]
    return found[0] if len(found) == 1 else None


def shown(fake: FakeSlack) -> str:
    return "\n".join(iter_texts(posted(fake).blocks))


def button_of(fake: FakeSlack) -> tuple[str, str]:
    [block] = [b for b in posted(fake).blocks if b.get("block_id") == ACTIONS_BLOCK_ID]
    [button] = block["elements"]
    return str(button["action_id"]), str(button["text"]["text"])


def on(message: Any, action_id: str, response_url: str, *, user: str = ALICE) -> str:
    """A press of a button on the alert's message."""
    return button_body(action_id, ref_value(), response_url, user=user, message_ts=message.ts)


def typed(text: str, response_url: str) -> str:
    """`/proxy TEXT` typed by Alice in #alerts."""
    return command_body(
        text, response_url, user=ALICE, user_name="alice", channel=ALERTS, channel_name="alerts"
    )


def ack_line(user: str) -> str:
    return f"👀 Acknowledged by <@{user}> at 09:22 UTC (2 min after it fired)"


async def test_acknowledge_edits_the_message_and_says_so_once_in_the_thread(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    clock = Clock()
    async with running(tmp_path, fake, store, clock) as (http, delivery):
        await fire(store, delivery)
        message = await eventually(lambda: posted(fake), "the alert's message")
        assert button_of(fake) == (ACTION_ACK, "Acknowledge")
        await press(http, on(message, ACTION_ACK, fake.response_url("a1")))
        await eventually(lambda: ack_line(ALICE) in shown(fake), "the acknowledgement on the message")
        assert button_of(fake) == (ACTION_UNACK, "Unacknowledge")
        [reply] = await eventually(lambda: fake.thread(ALERTS, message.ts), "the thread line")
        assert reply.text == f"👀 <@{ALICE}> acknowledged this alert at 09:22 UTC (2 min after it fired)."
        # Bob presses too: told who has it, ephemerally; nothing else changes.
        clock.now += 30
        await press(
            http,
            on(message, ACTION_ACK, fake.response_url("b1"), user=BOB),
        )
        [told] = await eventually(lambda: fake.responses, "Bob's answer")
        assert told["response_type"] == "ephemeral"
        assert f"<@{ALICE}> has this alert already" in told["text"]
        await delivery.update("#alerts", GROUP_KEY, alert_message(), "n2")  # a later edit by the alert side
        await eventually_done(store, update_key("#alerts", GROUP_KEY, "n2"))
    assert ack_line(ALICE) in shown(fake), "an edit queued without it still shows the acknowledgement"
    assert ack_line(BOB) not in shown(fake)
    assert len(fake.thread(ALERTS, message.ts)) == 1
    held = await store.acknowledgement("#alerts", GROUP_KEY)
    assert held is not None
    assert (held.user, held.at) == (ALICE, PRESSED)


async def eventually_done(store: Store, key: str) -> None:
    async def done() -> bool:
        item = await store.outbox_item(key)
        return item is not None and item.state is OutboxState.DONE

    await eventually(done, f"{key} to be sent")


async def test_an_edit_queued_while_a_press_is_handled_is_not_undone_by_the_acknowledgement(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    """The alert side queues newer content between the press and its edit (another replica, the pipeline
    meanwhile): the acknowledgement's edit shows the message as it is when sent, never older content."""
    async with running(tmp_path, fake, store, Clock()) as (http, delivery):
        await fire(store, delivery)
        message = await eventually(lambda: posted(fake), "the alert's message")
        enqueue = store.enqueue

        async def meanwhile(key: str, *args: Any, **kwargs: Any) -> Any:
            if ":ack:" in key:  # the acknowledgement's edit: the alert side's newer content goes first
                await delivery.update("#alerts", GROUP_KEY, alert_message("09:22"), "newer")
            return await enqueue(key, *args, **kwargs)

        store.enqueue = meanwhile  # type: ignore[method-assign]
        await press(http, on(message, ACTION_ACK, fake.response_url("a1")))
        await eventually(lambda: ack_line(ALICE) in shown(fake), "the acknowledgement on the message")
        await eventually_done(store, update_key("#alerts", GROUP_KEY, "newer"))
        await eventually_sent(store)
    assert "live read 09:22 UTC" in shown(fake), "the newer content stays"
    assert ack_line(ALICE) in shown(fake)


async def eventually_sent(store: Store) -> None:
    async def sent() -> bool:
        return not await store.depth()

    await eventually(sent, "the outbox to be sent")


async def test_unacknowledge_takes_the_line_off_and_turns_the_button_back(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    async with running(tmp_path, fake, store, Clock()) as (http, delivery):
        await fire(store, delivery)
        message = await eventually(lambda: posted(fake), "the alert's message")
        await press(http, on(message, ACTION_ACK, fake.response_url("a1")))
        await eventually(lambda: ack_line(ALICE) in shown(fake), "the acknowledgement")
        body = button_body(
            ACTION_UNACK, ref_value(), fake.response_url("b1"), user=BOB, message_ts=message.ts
        )
        await press(http, body)
        await eventually(lambda: "Acknowledged by" not in shown(fake), "the line gone")
        assert button_of(fake) == (ACTION_ACK, "Acknowledge")
        replies = await eventually(lambda: len(fake.thread(ALERTS, message.ts)) == 2, "the second line")
        assert replies
        last = fake.thread(ALERTS, message.ts)[-1].text
        assert last.startswith(f"<@{BOB}> removed <@{ALICE}>'s acknowledgement at 09:22 UTC")
    assert await store.acknowledgement("#alerts", GROUP_KEY) is None


async def test_a_group_that_resolves_and_fires_again_is_not_acknowledged(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    async with running(tmp_path, fake, store, Clock()) as (http, delivery):
        await fire(store, delivery)
        message = await eventually(lambda: posted(fake), "the alert's message")
        await press(http, on(message, ACTION_ACK, fake.response_url("a1")))
        await eventually(lambda: ack_line(ALICE) in shown(fake), "the acknowledgement")
        await store.save_group(
            AlertGroupState("#alerts", GROUP_KEY, AlertStatus.RESOLVED, first_firing_at=FIRED)
        )
        await store.save_group(
            AlertGroupState("#alerts", GROUP_KEY, AlertStatus.FIRING, first_firing_at=FIRED + 900)
        )
        await delivery.update("#alerts", GROUP_KEY, alert_message(), "refired")
        await eventually(lambda: "Acknowledged by" not in shown(fake), "a new episode, unacknowledged")
        assert button_of(fake) == (ACTION_ACK, "Acknowledge")


async def test_refusals_are_ephemeral_and_name_why(tmp_path: Path, fake: FakeSlack, store: Store) -> None:
    async with running(tmp_path, fake, store, Clock()) as (http, delivery):
        await fire(store, delivery)
        await eventually(lambda: posted(fake), "the alert's message")
        other = ActionRef.for_group("team-a", "platform/crd-store", GROUP_KEY + "gone").encode()
        await press(http, button_body(ACTION_ACK, other, fake.response_url("x1")))
        [untracked] = await eventually(lambda: fake.responses, "the answer about an unknown message")
        assert "no longer tracked" in untracked["text"]
        fake.add_channel("C0RANDOM1", name="random")
        body = button_body(
            ACTION_ACK, ref_value(), fake.response_url("x2"), channel="C0RANDOM1", channel_name="random"
        )
        await press(http, body)
        await eventually(lambda: len(fake.responses) == 2, "the refusal")
        assert "You may not acknowledge alerts of cluster `team-a` from here" in fake.responses[1]["text"]
        assert "`access`" in fake.responses[1]["text"]
    assert await store.acknowledgement("#alerts", GROUP_KEY) is None


async def test_proxy_ack_and_unack_act_on_the_targets_firing_messages_in_the_channel(
    tmp_path: Path, fake: FakeSlack, store: Store
) -> None:
    # The channel also holds a digest, whose row carries no alert group's labels (it was read as one:
    # "the alert group's key carries no label set").
    digest = AlertGroupState("#alerts", "digest:2026-12-04", AlertStatus.FIRING, ts="1700000000.000100")
    await store.save_group(digest)
    async with running(tmp_path, fake, store, Clock()) as (http, delivery):
        await fire(store, delivery)
        await eventually(lambda: posted(fake), "the alert's message")
        body = command_body(
            "ack platform/crd-store",
            fake.response_url("c1"),
            user=ALICE,
            user_name="alice",
            channel=ALERTS,
            channel_name="alerts",
        )
        await press(http, body)
        await eventually(lambda: ack_line(ALICE) in shown(fake), "the acknowledgement from the command")
        [said] = await eventually(lambda: fake.responses, "the command's answer")
        assert said["text"].startswith("You have this alert")
        body = command_body(
            "unack platform/crd-store",
            fake.response_url("c2"),
            user=ALICE,
            user_name="alice",
            channel=ALERTS,
            channel_name="alerts",
        )
        await press(http, body)
        await eventually(lambda: "Acknowledged by" not in shown(fake), "the command's unack")
        body = command_body(
            "ack platform/other",
            fake.response_url("c3"),
            user=ALICE,
            user_name="alice",
            channel=ALERTS,
            channel_name="alerts",
        )
        await press(http, body)
        await eventually(lambda: len(fake.responses) == 3, "the answer about a quiet target")
        assert fake.responses[2]["text"].startswith("No firing alert about `platform/other` is posted in")
