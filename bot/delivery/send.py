"""One planned step as a Slack call, paced per channel, at the address `bot.delivery.addresses` finds.

Channels are configured by `#name` or ID, and the outbox keeps what was configured; Slack takes a name only
in chat.postMessage, so every later call on a message or its thread uses the channel ID from the post's
answer (kept with the group). A message stored without one (by a proxybot before it kept IDs) waits for the
ID until any message posted in its channel teaches it; a channel configured by ID needs no lookup.

A post is keyed by (channel, group): when the group's `ts` is already known (a re-run after a crash
between Slack's answer and our completion), the post becomes an edit, never a second top-level message.

Slack's chat.postMessage has no idempotency key, and a sender can die (or time out) after Slack made the
message but before its answer was recorded. So every post and reply carries its outbox row's id in the
message metadata, the row is marked in flight (`Store.mark_sending`) before the call, and a row found
marked is first looked for in the channel's history (or the thread's replies) since the mark: a message
found there is adopted, not posted again. A refusal from Slack clears the mark (no message was made).
Without the history scopes (`missing_scope`), this falls back to at-least-once, said once in the log.
File uploads have no metadata to look for: they stay at-least-once. An upload's row keeps the IDs of the
files Slack made, so a later row can delete them (a storm's table, replaced by a newer one), once the newer
one went out (a thread never shows no table); a file Slack no longer has counts as deleted.

A post, reply or edit whose content Slack refuses (`invalid_blocks`, `msg_too_long`, ...) is sent again
smaller, then as text only (`bot.render.refit`); only a refusal of the text itself gives it up.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from bot.clients.slack import Posted, SlackRateLimited, SlackRejected
from bot.delivery.addresses import Address, Addresses, NotPostedYet, Unsendable
from bot.delivery.keys import post_key, update_key, upload_key
from bot.delivery.plan import SHOW_AGAIN, SHOWN_AT, Step
from bot.domain.alerts import AlertStatus
from bot.domain.resolution import EventKind
from bot.domain.silences import Silence
from bot.domain.verification import Verdict
from bot.lease import Lease
from bot.ports import Clock
from bot.render.acknowledge import shown_with
from bot.render.blocks import Message, aged
from bot.render.refit import smaller, text_only
from bot.render.silence_line import ShownSilence, resolved_alert, shown_silenced, silenceable
from bot.render.verification import with_verification_line
from bot.store.base import Store
from bot.store.models import OutboxItem, OutboxKind, OutboxState
from config.validation import SLACK_CHANNEL_ID

Sleep = Callable[[float], Awaitable[None]]
T = TypeVar("T")

log = logging.getLogger(__name__)

# Looked for from this long before the in-flight mark: Slack's clock (its `ts`) may be behind ours.
MARK_SKEW = 60.0
# files.delete's answers for a file that is no longer there: deleted already, which is what was asked.
FILE_GONE = frozenset({"file_not_found", "file_deleted"})


class SlackSender(Protocol):
    """What the worker needs of Slack (`bot.clients.slack.SlackClient`)."""

    async def post(
        self, channel: str, message: Message, thread_ts: str | None = None, *, mark: str | None = None
    ) -> Posted: ...

    async def find_marked(
        self, channel_id: str, mark: str, oldest: float, thread_ts: str | None = None
    ) -> str | None: ...

    async def update(self, channel_id: str, ts: str, message: Message) -> None: ...

    async def upload_png(
        self, channel_id: str, thread_ts: str, png: bytes, filename: str, title: str
    ) -> None: ...

    async def upload_file(
        self, channel_id: str, thread_ts: str, content: bytes, filename: str, title: str
    ) -> tuple[str, ...]: ...

    async def delete_file(self, file_id: str) -> None: ...


class ShownSilences(Protocol):
    """The silence each message shows, from Alertmanager's last listing (`bot.alerts.silences`)."""

    def shown_for(self, label_sets: Sequence[Mapping[str, str]]) -> Silence | None: ...


class NotLeading(Exception):
    """This process may no longer send (its lease is short or gone): the row is left for the leader."""


class StepSender:
    """Makes the Slack call of one step; remembers channel IDs and each channel's next post slot."""

    def __init__(
        self,
        store: Store,
        slack: SlackSender,
        posts_per_second: float,
        clock: Clock,
        sleep: Sleep,
        lease: Lease | None = None,
        *,
        shown: Clock | None = None,
    ):
        self._store = store
        self._lease = lease
        self._slack = slack
        self._interval = 1.0 / posts_per_second
        self._clock = clock
        self._shown_clock = shown or clock  # the time messages tell (`Delivery`'s `shown`)
        self._sleep = sleep
        self._next_post_at: dict[str, float] = {}
        # Channels whose history Slack refused to show (`missing_scope`): posts there are at-least-once.
        self._cannot_look: set[str] = set()
        self._where = Addresses(store)
        # Set once the bot watches Alertmanager's silences (`Delivery.show_silences`).
        self.silences: ShownSilences | None = None

    async def send(self, channel: str, step: Step) -> dict[str, Any] | None:
        """The call's result for the row; None when the row was completed by someone else meanwhile."""
        kind, payload, group = step.item.kind, step.payload, step.group_key
        if kind is OutboxKind.POST:
            return await self._post(step)
        if kind is OutboxKind.REPLY_EDIT:
            reply = await self._where.reply(channel, group, str(payload.get("reply", "")))
            await self._edit(step.item, reply, _message(payload))
            return {"ts": reply.ts, "channel_id": reply.channel_id}
        if kind is OutboxKind.DELETE_FILE:
            return await self._delete_files(step)
        # A reply is a chat.postMessage: it may name the channel, and its answer teaches the ID.
        where = await self._where.message(channel, group, by_name=kind is OutboxKind.REPLY)
        if kind is OutboxKind.UPDATE:
            newest = await self._newest(step)
            if newest is None:  # its content rows were pruned: the next edit of the message shows it all
                return {"skipped": "no content of the message is kept to show again"}
            await self._edit(step.item, where, await self._shown(step, newest))
            return {"ts": where.ts, "channel_id": where.channel_id}
        if kind is OutboxKind.REPLY:
            found = await self._earlier(step.item, channel, where.channel_id, where.ts)
            if found is not None:
                if step.superseded:  # edits merged into this step since that try are newer than Slack's
                    await self._edit(step.item, found, _message(payload))
                return {
                    "ts": found.ts,
                    "thread_ts": where.ts,
                    "channel_id": found.channel_id,
                    "adopted": True,
                }
            await self._paced(channel)
            posted = self._where.learn(
                channel,
                await self._fitting(
                    step.item,
                    _message(payload),
                    lambda m: self._marked_post(step.item, where.channel_id, m, where.ts),
                    lambda: self._paced(channel),
                ),
            )
            return {"ts": posted.ts, "thread_ts": where.ts, "channel_id": posted.channel_id}
        if "file" in payload:
            content, filename, title = _upload(payload, "file")
            files = await self._slack.upload_file(where.channel_id, where.ts, content, filename, title)
            return {"thread_ts": where.ts, "channel_id": where.channel_id, "files": list(files)}
        png, filename, title = _upload(payload, "png")
        await self._slack.upload_png(where.channel_id, where.ts, png, filename, title)
        return {"thread_ts": where.ts, "channel_id": where.channel_id}

    async def _delete_files(self, step: Step) -> dict[str, Any]:
        """files.delete of every file an earlier upload of the message made, once the upload replacing it
        (if named) went out: when Slack refused that one, the old file stays, the only one shown (and the
        next replacement's delete, of the refused upload, deletes it: `_shown_upload`)."""
        replaced_by = step.payload.get("replaced_by")
        if replaced_by is not None:
            key = upload_key(step.item.channel, step.group_key, str(replaced_by))
            replacement = await self._store.outbox_item(key)
            if replacement is not None and replacement.state is OutboxState.PENDING:
                raise NotPostedYet(f"the upload {replaced_by} of group {step.group_key} has not gone out yet")
            if replacement is None or replacement.state is not OutboxState.DONE:
                log.warning(
                    "kept upload %s of group %r: the upload meant to replace it (%s) was not made",
                    step.payload.get("upload"),
                    step.group_key,
                    replaced_by,
                )
                return {"deleted": [], "kept": "replacement not uploaded"}
        upload = await self._shown_upload(step, str(step.payload.get("upload", "")))
        result = upload.result if upload is not None else None
        files = result.get("files") if result is not None else None
        gone = []
        for file_id in files if isinstance(files, list) else []:
            try:
                await self._slack.delete_file(str(file_id))
            except SlackRejected as error:
                if error.error_code not in FILE_GONE:
                    raise
            gone.append(str(file_id))
        return {"deleted": gone}

    async def _shown_upload(self, step: Step, revision: str) -> OutboxItem | None:
        """The upload whose files are in the thread in place of revision `revision`: itself once it went
        out, else (Slack refused it) the one it was to replace, and so on back (`replaces`)."""
        seen: set[str] = set()
        while revision and revision not in seen:
            seen.add(revision)
            upload = await self._store.outbox_item(upload_key(step.item.channel, step.group_key, revision))
            if upload is None:
                return None
            if upload.state is OutboxState.PENDING:
                raise NotPostedYet(f"the upload {revision} of group {step.group_key} has not gone out yet")
            if upload.state is OutboxState.DONE:
                return upload
            revision = str(upload.payload.get("replaces") or "")
        return None

    async def _newest(self, step: Step) -> Message | None:
        """An edit's content: its own, or for a `SHOW_AGAIN` edit the message's newest content now (its
        post's or its latest content edit's, whichever replica queued it), its ages told as they are now
        (that content was made for when it was queued); None when none is kept."""
        if not step.payload.get(SHOW_AGAIN):
            return _message(step.payload)
        channel, group = step.item.channel, step.group_key
        found = await self._store.last_payload(
            channel, post_key(channel, group), update_key(channel, group, "")
        )
        if found is None:
            return None
        queued_at = found.get(SHOWN_AT)
        if not isinstance(queued_at, int | float):  # queued by a proxybot that kept no time with it
            return _message(found)
        return aged(_message(found), self._shown_clock() - queued_at)

    async def _shown(self, step: Step, content: Message) -> Message:
        """A message's post or edit as it is shown now: with the acknowledgement the store holds for it
        at this moment, whichever replica queued the content and when (`bot.render.acknowledge`)."""
        ack = await self._store.acknowledgement(step.item.channel, step.group_key)
        message = await self._verified(step, shown_with(content, ack))
        if self.silences is None:
            return message
        # Only a firing message offers Silence… (a resolved one shows no silence), and the content says
        # which it is: the group's row may still say firing while its resolved edit goes out (the pipeline
        # queues its operations before it saves the row).
        group = (
            await self._store.get_group(step.item.channel, step.group_key) if silenceable(content) else None
        )
        firing = group is not None and group.status is AlertStatus.FIRING
        found = self.silences.shown_for(group.facts.firing_labels) if group is not None and firing else None
        silence = None if found is None else ShownSilence.of(found)
        return shown_silenced(message, silence, datetime.fromtimestamp(self._clock(), UTC))

    async def _verified(self, step: Step, content: Message) -> Message:
        """A resolved alert message with its episode's verification after resolve, once there is one
        (`bot.alerts.verification`): a firing one (its next episode) shows none."""
        if not resolved_alert(content):
            return content
        group = await self._store.get_group(step.item.channel, step.group_key)
        if group is None or group.first_firing_at is None:
            return content
        events = await self._store.episode_events(step.item.channel, step.group_key, group.first_firing_at)
        kept = (Verdict.of_detail(e.detail) for e in events if e.kind is EventKind.VERIFICATION)
        verdict = next((v for v in kept if v is not None and v.sentence), None)
        return content if verdict is None else with_verification_line(content, verdict)

    async def _post(self, step: Step) -> dict[str, Any] | None:
        channel, group = step.item.channel, step.group_key
        state = await self._store.get_group(channel, group)
        content = await self._shown(step, _message(step.payload))
        if state is not None and state.ts is not None:
            # Slack already has this message (we died after posting): edit it, never post a second one.
            channel_id = self._where.channel_id(channel, state.channel_id)
            await self._edit(step.item, Address(channel_id, state.ts), content)
            return {"ts": state.ts, "channel_id": channel_id, "edited": True}
        # A storm may fold a queued post into its thread; looked at before and after the pacing wait.
        if not await self._still_pending(step.item):
            return None
        known = state.channel_id if state is not None else None
        found = await self._earlier(step.item, channel, known)
        if found is not None:
            await self._store.record_post(channel, group, found.ts, found.channel_id)
            # Edits merged into this step since that try are newer than what Slack holds.
            await self._edit(step.item, found, content)
            return {"ts": found.ts, "channel_id": found.channel_id, "adopted": True}
        slot = await self._paced(channel)
        if not await self._still_pending(step.item):
            self._next_post_at[channel] = slot  # unused: the next post (the storm's summary) takes it
            return None
        posted = self._where.learn(
            channel,
            await self._fitting(
                step.item,
                content,
                lambda m: self._marked_post(step.item, channel, m),
                lambda: self._paced(channel),
            ),
        )
        await self._store.record_post(channel, group, posted.ts, posted.channel_id)
        return {"ts": posted.ts, "channel_id": posted.channel_id}

    async def _edit(self, item: OutboxItem, where: Address, message: Message) -> None:
        await self._fitting(item, message, lambda m: self._slack.update(where.channel_id, where.ts, m))

    async def _fitting(
        self,
        item: OutboxItem,
        message: Message,
        call: Callable[[Message], Awaitable[T]],
        before_again: Callable[[], Awaitable[object]] | None = None,
    ) -> T:
        """`call(message)`; when Slack refuses the content, again `smaller`, then `text_only` (each
        after `before_again`: a post waits for its next slot). Other errors, and a refusal of the text
        itself, go to the caller."""
        forms = [("smaller", smaller(message)), ("as text only", text_only(message))]
        current = message
        for how, next_form in forms:
            try:
                return await call(current)
            except SlackRejected as error:
                if not error.about_content:
                    raise
                log.warning(
                    "delivery: Slack refused the content of %s (%s): sent again %s", item.key, error, how
                )
            current = next_form
            if before_again is not None:
                await before_again()
        return await call(current)

    async def _marked_post(
        self, item: OutboxItem, channel: str, message: Message, thread_ts: str | None = None
    ) -> Posted:
        """chat.postMessage carrying the row's mark, with the row marked in flight around the call.

        The mark is fenced by the lease in the store, and the lease must outlast the call: a replica that
        lost the lease (paused, cut off from the database) never posts what the next leader will send."""
        if self._lease is not None and self._lease.remaining() < self._lease.timings.send_margin:
            raise NotLeading(f"the {self._lease.name} lease has {self._lease.remaining():.1f} s left")
        fence = None if self._lease is None else self._lease.name
        if not await self._store.mark_sending(item.id, self._clock(), fence=fence):
            raise NotLeading(f"{item.key} is no longer this replica's to send")
        try:
            return await self._slack.post(channel, message, thread_ts, mark=mark_of(item))
        except (SlackRateLimited, SlackRejected):
            await self._store.mark_sending(item.id, None)  # Slack answered: no message was made
            raise

    async def _earlier(
        self, item: OutboxItem, channel: str, channel_id: str | None, thread_ts: str | None = None
    ) -> Address | None:
        """Where this row's message is when an earlier try that got no answer made it after all."""
        if item.sent_at is None:
            return None
        # History takes only an ID (a reply's address may be the configured `#name`).
        known = [
            channel_id,
            self._where.learnt(channel),
            await self._store.channel_id_of(channel),
            channel,
        ]
        where = next((c for c in known if c and SLACK_CHANNEL_ID.match(c)), None)
        if where in self._cannot_look:
            return None
        if where is None:
            log.warning(
                "delivery: %s may have reached %s before, but the channel's ID is not known to look for "
                "it: sent again (configure the channel by ID to avoid this)",
                item.key,
                channel,
            )
            return None
        try:
            found = await self._slack.find_marked(where, mark_of(item), item.sent_at - MARK_SKEW, thread_ts)
        except SlackRejected as error:
            if error.error_code not in ("missing_scope", "not_allowed_token_type"):
                raise
            self._cannot_look.add(where)
            log.warning(
                "delivery: Slack refused reading the history of %s (%s): a post there whose answer was lost "
                "may be posted twice; add the channels:history and groups:history scopes to the Slack app",
                where,
                error.error_code,
            )
            return None
        if found is None:
            return None
        log.info("delivery: %s was already in Slack (ts %s): adopted, not posted again", item.key, found)
        self._where.teach(channel, where)
        return Address(where, found)

    async def _still_pending(self, item: OutboxItem) -> bool:
        current = await self._store.outbox_item(item.key)
        return current is not None and current.state is OutboxState.PENDING

    async def _paced(self, channel: str) -> float:
        """Wait for this channel's next chat.postMessage slot, and take it; the slot's time."""
        now = self._clock()
        slot = max(now, self._next_post_at.get(channel, 0.0))
        self._next_post_at[channel] = slot + self._interval
        if slot > now:
            await self._sleep(slot - now)
        return slot


def mark_of(item: OutboxItem) -> str:
    """What a row's message carries in its metadata (the row's id in the store)."""
    return f"outbox:{item.id}"


def _message(payload: Mapping[str, Any]) -> Message:
    text, blocks = payload.get("text"), payload.get("blocks") or []
    if not isinstance(text, str) or not isinstance(blocks, list):
        raise Unsendable("malformed outbox payload: needs text (string) and blocks (list)")
    return Message(text, tuple(blocks), broadcast=payload.get("reply_broadcast") is True)


def _upload(payload: Mapping[str, Any], content: str) -> tuple[bytes, str, str]:
    try:
        data = base64.b64decode(str(payload[content]), validate=True)
        return data, str(payload["filename"]), str(payload["title"])
    except (KeyError, ValueError) as error:
        raise Unsendable(f"malformed upload payload: {error}") from None
