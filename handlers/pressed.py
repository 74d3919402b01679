"""A button press as the button flows use it (`handlers.actions` dispatches them, `handlers.silence` and
`handlers.acknowledge` hold theirs): who pressed, where, which alert group it was drawn for, and the
answers every press gets.

Slack wants each request answered within 3 s (bolt's `ack` callback, `answer_slack`): every button is
answered so at once and its work runs after, as a bolt lazy listener. Every way the work ends is said to the
person who pressed (`answer_press`). Nothing from the payload is trusted beyond the button's value, an
`ActionRef` (validated cluster, target and group id), and the Slack user and channel ids that bolt has
verified with the request's signature.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncRespond

from bot.domain.messages import ActionRef, group_id
from bot.errors import InputError
from bot.render.blocks import text_message
from bot.store.models import AlertGroupState
from config.settings import Requester
from handlers.respond import Asked, answering, say


async def answer_slack(ack: AsyncAck) -> None:
    """Tell Slack the request arrived (bolt injects its `ack` callback by that parameter name)."""
    await ack()


@dataclass(frozen=True)
class Pressed:
    """A button press as the handlers use it: who, where, which alert, and which press."""

    action_id: str
    ref: ActionRef
    who: Requester
    user_name: str
    press: str  # this press, as Slack stamps it (`action_ts`): the same on a redelivery

    @property
    def revision(self) -> str:
        """The outbox revision of this press's thread answer."""
        return f"button:{self.action_id}:{self.who.user}:{self.press}"

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Pressed:
        """Read a `block_actions` payload; InputError when it is not one of our buttons' shape."""
        try:
            action = body["actions"][0]
            user, channel = body["user"], body["channel"]
            who = Requester(
                user=str(user["id"]),
                channel_id=str(channel["id"]),
                channel_name=channel.get("name"),
                direct_message=channel.get("name") == "directmessage" or str(channel["id"]).startswith("D"),
            )
            name = str(user.get("username") or user.get("name") or user["id"])
            ref = ActionRef.decode(str(action["value"]))
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise InputError("the button press is missing fields") from exc
        press = str(action.get("action_ts") or body.get("trigger_id") or "")
        if not press:
            raise InputError("the button press carries neither action_ts nor trigger_id")
        return cls(str(action["action_id"]), ref, who, name, press)


def drawn_group(known: Iterable[AlertGroupState], wanted: str, where: Requester) -> AlertGroupState | None:
    """The group a button was drawn for: its id, in the channel the press (or the modal) came from.

    One Alertmanager group key can be routed to several channels (a rule without the `cluster` and
    `target` labels groups alerts of several clients), each with a row and a message of its own; a group's
    id alone would find another channel's row, and its alerts would be silenced or acknowledged."""
    return next((g for g in known if group_id(g.group_key) == wanted and _drawn_in(g, where)), None)


def _drawn_in(group: AlertGroupState, where: Requester) -> bool:
    if group.channel_id is not None:  # the channel Slack posted its message in
        return group.channel_id == where.channel_id
    return group.channel in where.channel_refs()  # not posted yet: the channel it was routed to


async def answer_press(
    respond: AsyncRespond,
    what: str,
    work: Callable[[Pressed], Awaitable[None]],
    body: Mapping[str, Any],
    log: logging.Logger,
) -> None:
    """Run a button's work; every way it can end is answered to the person who pressed, and logged to
    the flow's `log`."""
    user = (body.get("user") or {}).get("id")
    where = (body.get("channel") or {}).get("id")
    asked = Asked(
        f"The {what}", f"{what} by {user} in {where}", "This button cannot be used: {}.", log, logging.WARNING
    )

    async def pressed() -> None:
        await work(Pressed.from_body(body))

    await answering(respond, asked, pressed)


async def ephemeral(respond: AsyncRespond, text: str) -> None:
    """A line for the person who pressed only."""
    await say(respond, text_message(text))
