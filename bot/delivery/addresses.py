"""Where a step's message is: the channel IDs Slack taught, each message's `ts`, remembered.

Channels are configured by `#name` or ID; Slack takes a name only in chat.postMessage, so every later call
on a message or its thread uses the channel ID from the post's answer (kept with the group, or learnt from
any post in the channel). A message's address, once stored, never changes (`Store.record_post` keeps the
first), so it is read once and kept (the most recently used `ADDRESSES_KEPT`).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from bot.clients.slack import Posted
from bot.delivery.keys import post_key, reply_key
from bot.store.base import Store
from bot.store.models import OutboxState
from config.validation import SLACK_CHANNEL_ID

ADDRESSES_KEPT = 4096


class NotPostedYet(Exception):
    """The message an edit, reply or upload belongs to has no `ts` yet."""


class Unsendable(Exception):
    """The row can never be sent (its message failed, or its payload is malformed)."""


class Folded(Exception):
    """The row's message was folded into a storm's thread before it went out: there is nothing to send."""


class ChannelIdUnknown(Exception):
    """The message was stored without its channel's ID, and no post in that channel has taught it yet."""


@dataclass(frozen=True, slots=True)
class Address:
    """Where a posted message is, as every call after chat.postMessage wants it."""

    channel_id: str
    ts: str


class Addresses:
    """The channel IDs and message addresses of one sender."""

    def __init__(self, store: Store) -> None:
        self._store = store
        # Configured channel (a `#name` or an ID) -> its Slack ID, from chat.postMessage answers.
        self._channel_ids: dict[str, str] = {}
        # (channel, group) -> the message's `ts` and the channel ID stored with it. A message's address,
        # once stored, never changes (`Store.record_post` keeps the first), so it is read once: a storm
        # summary's row carries every entry of the storm, and reading it for each reply and edit of the
        # storm made delivery's cost grow with the square of the storm's size.
        self._addresses: OrderedDict[tuple[str, str], tuple[str, str | None]] = OrderedDict()

    def learnt(self, channel: str) -> str | None:
        """The Slack ID a post in the configured channel taught, if any yet."""
        return self._channel_ids.get(channel)

    def teach(self, channel: str, channel_id: str) -> None:
        """A channel's ID found another way (a message found in its history)."""
        self._channel_ids.setdefault(channel, channel_id)

    def learn(self, channel: str, posted: Posted) -> Posted:
        """A post's answer teaches its channel's ID; the answer, passed on."""
        self._channel_ids[channel] = posted.channel_id
        return posted

    def channel_id(self, channel: str, stored: str | None, *, by_name: bool = False) -> str:
        """The Slack ID of a configured channel: as stored with the message, configured, or learnt
        (`by_name`: the configured name will do when the ID is not known)."""
        if stored:
            return stored
        if SLACK_CHANNEL_ID.match(channel):
            return channel
        learnt = self._channel_ids.get(channel)
        if learnt is None and by_name:
            return channel
        if learnt is None:
            raise ChannelIdUnknown(
                f"the message was posted to {channel} by an older proxybot, which did not keep the "
                f"channel's ID; it is learnt from the next message posted there (or configure the "
                f"channel by its ID)"
            )
        return learnt

    async def message(self, channel: str, group: str, *, by_name: bool = False) -> Address:
        """Where the group's message is: from the group, else from its completed post."""
        stored = await self._stored(channel, group)
        if stored is not None:
            ts, channel_id = stored
            return Address(self.channel_id(channel, channel_id, by_name=by_name), ts)
        posted = await self._store.outbox_item(post_key(channel, group))
        result = posted.result if posted is not None else None
        if result is not None and isinstance(result.get("ts"), str):
            stored = result.get("channel_id")
            known = stored if isinstance(stored, str) else None
            return Address(self.channel_id(channel, known, by_name=by_name), result["ts"])
        if posted is not None and posted.state is OutboxState.FAILED:
            raise Unsendable(f"the message of group {group} was never posted: {posted.last_error}")
        if posted is not None and posted.state is OutboxState.DONE:
            # Completed without a message: folded into a storm's thread before it went out.
            raise Folded(f"the message of group {group} was not posted: {posted.result}")
        raise NotPostedYet(f"the message of group {group} is not posted yet")

    async def reply(self, channel: str, group: str, reply: str) -> Address:
        """Where the group's reply `reply` is, from its completed row (an edit needs it posted)."""
        row = await self._store.outbox_item(reply_key(channel, group, reply))
        if row is None:
            raise Unsendable(f"group {group} has no reply {reply!r} to edit")
        if row.state is OutboxState.FAILED:
            raise Unsendable(f"the reply {reply!r} of group {group} was never posted: {row.last_error}")
        result = row.result or {}
        ts, channel_id = result.get("ts"), result.get("channel_id")
        if row.state is OutboxState.DONE and isinstance(ts, str) and isinstance(channel_id, str):
            return Address(channel_id, ts)
        if row.state is OutboxState.DONE:
            raise Folded(f"the reply {reply!r} of group {group} was not posted: {result}")
        raise NotPostedYet(f"the reply {reply!r} of group {group} is not posted yet")

    async def _stored(self, channel: str, group: str) -> tuple[str, str | None] | None:
        """The message's `ts` and stored channel ID, from memory or else the group's row."""
        known = self._addresses.get((channel, group))
        if known is not None:
            self._addresses.move_to_end((channel, group))
            return known
        state = await self._store.get_group(channel, group)
        if state is None or state.ts is None:
            return None
        self._remember(channel, group, state.ts, state.channel_id)
        return state.ts, state.channel_id

    def _remember(self, channel: str, group: str, ts: str, channel_id: str | None) -> None:
        self._addresses[(channel, group)] = (ts, channel_id)
        self._addresses.move_to_end((channel, group))
        if len(self._addresses) > ADDRESSES_KEPT:
            self._addresses.popitem(last=False)
