"""The fake Slack's workspace: channels, messages, uploads, and the Web API methods that act on them.

Strict where Slack is strict, because a lenient fake hides real defects:
- channels are addressed by ID; only `chat.postMessage` and `chat.postEphemeral` also take a name
  (`#name` or `name`), and `chat.postMessage` answers with the channel's ID. Every other method
  (`chat.update`, `chat.delete`, `chat.getPermalink`, `files.completeUploadExternal`'s `channel_id`,
  `conversations.*`) answers `channel_not_found` for a name;
- posting where the bot is not a member is `not_in_channel`; a reply to a message that does not exist in
  that channel is refused;
- content over Slack's limits is refused (`sim.slack_blocks`);
- files follow files_upload_v2's three steps strictly (`sim.slack_files`);
- every method needs its OAuth scope; the bot has the scopes of `config/slack/manifest.yaml` unless a test
  grants others (`missing_scope` otherwise, with `needed` and `provided` as Slack sends them).
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sim.slack_answers import Answer, error_answer, json_param
from sim.slack_blocks import check_message
from sim.slack_files import Files

# The bot scopes of config/slack/manifest.yaml (a test keeps the two equal).
MANIFEST_SCOPES = frozenset({"commands", "chat:write", "files:write", "channels:history", "groups:history"})
BOT_USER, BOT_ID, TEAM_ID = "UBOT", "BBOT", "T1"
# auth.test's `url`: where the workspace's archive links (`/archives/C.../p...`) point.
WORKSPACE_URL = "https://proxybot-sim.slack.com/"
HISTORY_PAGE = 100
# Message metadata's `event_type`: Slack takes letters, digits and underscores (e.g. `task_created`).
EVENT_TYPE = re.compile(r"[A-Za-z0-9_]{1,255}")


@dataclass
class Channel:
    """A conversation of the workspace, and whether the bot is in it."""

    id: str
    name: str
    member: bool = True


@dataclass
class Message:
    """A message as Slack holds it, with its edit history; `channel` is the channel's ID."""

    channel: str
    ts: str
    text: str
    blocks: list[Any]
    thread_ts: str | None
    channel_name: str = ""
    metadata: dict[str, Any] | None = None
    versions: list[dict[str, Any]] = field(default_factory=list)
    # A thread reply also shown in the channel (posted with `reply_broadcast`).
    broadcast: bool = False

    def as_history(self, with_metadata: bool) -> Answer:
        item: Answer = {"type": "message", "ts": self.ts, "text": self.text, "blocks": self.blocks}
        item |= {"user": BOT_USER, "bot_id": BOT_ID}
        if self.thread_ts is not None:
            item["thread_ts"] = self.thread_ts
        if self.broadcast:
            item["subtype"] = "thread_broadcast"
        if with_metadata and self.metadata is not None:
            item["metadata"] = self.metadata
        return item


# Scope each method needs; a method not listed needs none (auth.test, chat.getPermalink).
SCOPES = {
    "chat.postMessage": "chat:write",
    "chat.update": "chat:write",
    "chat.delete": "chat:write",
    "chat.postEphemeral": "chat:write",
    "files.getUploadURLExternal": "files:write",
    "files.completeUploadExternal": "files:write",
    "files.delete": "files:write",
    "conversations.history": "channels:history",
    "conversations.replies": "channels:history",
    "conversations.info": "channels:read",
}


class Workspace:
    """Channels and messages; every method takes the request's params and returns Slack's answer."""

    def __init__(
        self,
        upload_base: Callable[[], str],
        scopes: Iterable[str] = MANIFEST_SCOPES,
        wall: Callable[[], float] = time.time,
    ) -> None:
        # Slack's `ts` is the message's time (seconds.microseconds), unique per channel: history's
        # `oldest`/`latest` compare against it.
        self._wall = wall
        self._last_ts = 0.0
        self.scopes = frozenset(scopes)
        self.channels: dict[str, Channel] = {}
        self.messages: dict[tuple[str, str], Message] = {}
        self.files = Files(upload_base, time.monotonic)
        self._ids = itertools.count(1)

    @property
    def uploads(self) -> list[dict[str, Any]]:
        """Every file shared, oldest first (a deleted one carries `deleted_at`)."""
        return self.files.uploads

    # -- channels ------------------------------------------------------------------------------------
    def add_channel(self, ref: str, *, name: str | None = None, member: bool = True) -> str:
        """A channel named `#name` (it gets an ID) or with ID `ref` (and `name`); returns its ID."""
        found = self.find(ref)
        if found is not None:
            found.member = member
            return found.id
        if ref.startswith("#"):
            channel = Channel(f"C{next(self._ids):08d}", ref[1:], member)
        else:
            channel = Channel(ref, (name or f"channel-{ref.lower()}").removeprefix("#"), member)
        self.channels[channel.id] = channel
        return channel.id

    def find(self, ref: str) -> Channel | None:
        """The channel `ref` names: an ID, `#name` or `name` (the lookup chat.postMessage does)."""
        if ref in self.channels:
            return self.channels[ref]
        name = ref.removeprefix("#")
        return next((c for c in self.channels.values() if c.name == name), None)

    def add_message(
        self, channel_id: str, text: str, thread_ts: str | None = None, ts: str | None = None
    ) -> Message:
        """A message of the bot's that is already in the channel (posted before a test began)."""
        channel = self.channels[channel_id]
        msg = Message(channel.id, ts or self._next_ts(), text, [], thread_ts, channel.name)
        self.messages[(channel.id, msg.ts)] = msg
        return msg

    def _by_id(self, ref: object) -> Channel | None:
        return self.channels.get(str(ref)) if ref else None

    # -- methods ---------------------------------------------------------------------------------------
    def missing_scope(self, method: str) -> Answer | None:
        needed = SCOPES.get(method)
        if needed is None or needed in self.scopes:
            return None
        provided = ",".join(sorted(self.scopes))
        return {"ok": False, "error": "missing_scope", "needed": needed, "provided": provided}

    def post_message(self, params: dict[str, Any]) -> Answer:
        channel = self.find(str(params.get("channel") or ""))
        refused = content_refusal(params) or _membership(channel)
        if refused is not None:
            return refused
        assert channel is not None
        thread_ts = params.get("thread_ts") or None
        if thread_ts is not None and (channel.id, str(thread_ts)) not in self.messages:
            return error_answer("thread_not_found")
        broadcast, bad = _broadcast(params, thread_ts)
        metadata, bad = (None, bad) if bad is not None else _metadata(params)
        if bad is not None:
            return bad
        ts = self._next_ts()
        msg = Message(channel.id, ts, str(params.get("text", "")), blocks_of(params), thread_ts, channel.name)
        msg.metadata, msg.broadcast = metadata, broadcast
        self.messages[(channel.id, ts)] = msg
        return {"ok": True, "channel": channel.id, "ts": ts, "message": {"ts": ts, "text": msg.text}}

    def update(self, params: dict[str, Any]) -> Answer:
        channel = self._by_id(params.get("channel"))
        if channel is None:
            return error_answer("channel_not_found")
        refused = content_refusal(params)
        if refused is not None:
            return refused
        msg = self.messages.get((channel.id, str(params.get("ts"))))
        if msg is None:
            return error_answer("message_not_found")
        msg.versions.append({"text": msg.text, "blocks": msg.blocks})
        msg.text, msg.blocks = str(params.get("text", "")), blocks_of(params)
        if "metadata" in params:
            metadata, bad = _metadata(params)
            if bad is not None:
                return bad
            msg.metadata = metadata
        return {"ok": True, "channel": channel.id, "ts": msg.ts, "text": msg.text}

    def delete(self, params: dict[str, Any]) -> Answer:
        channel = self._by_id(params.get("channel"))
        if channel is None:
            return error_answer("channel_not_found")
        msg = self.messages.pop((channel.id, str(params.get("ts"))), None)
        if msg is None:
            return error_answer("message_not_found")
        return {"ok": True, "channel": channel.id, "ts": msg.ts}

    def permalink(self, params: dict[str, Any]) -> Answer:
        channel = self._by_id(params.get("channel"))
        if channel is None:
            return error_answer("channel_not_found")
        ts = str(params.get("message_ts"))
        if (channel.id, ts) not in self.messages:
            return error_answer("message_not_found")
        link = f"{WORKSPACE_URL}archives/{channel.id}/p{ts.replace('.', '')}"
        return {"ok": True, "channel": channel.id, "permalink": link}

    def ephemeral(self, params: dict[str, Any]) -> Answer:
        channel = self.find(str(params.get("channel") or ""))
        refused = content_refusal(params) or _membership(channel)
        if refused is not None:
            return refused
        if not params.get("user"):
            return error_answer("user_not_in_channel")
        return {"ok": True, "message_ts": self._next_ts()}

    def upload_url(self, params: dict[str, Any]) -> Answer:
        return self.files.upload_url(params)

    def complete_upload(self, params: dict[str, Any]) -> Answer:
        channel_ref, thread_ts = params.get("channel_id"), params.get("thread_ts") or None
        channel = self._by_id(channel_ref)
        if channel_ref and channel is None:
            return error_answer("channel_not_found")
        if channel is not None and not channel.member:
            return error_answer("not_in_channel")
        if thread_ts is not None and (channel is None or (channel.id, str(thread_ts)) not in self.messages):
            return error_answer("thread_not_found")
        return self.files.complete(params, {"channel_id": channel_ref, "thread_ts": thread_ts})

    def delete_file(self, params: dict[str, Any]) -> Answer:
        return self.files.delete(params)

    def history(self, params: dict[str, Any]) -> Answer:
        channel = self._by_id(params.get("channel"))
        if channel is None:
            return error_answer("channel_not_found")
        if not channel.member:
            return error_answer("not_in_channel")
        top = [m for m in self.messages.values() if m.channel == channel.id and m.thread_ts is None]
        return _page(sorted(top, key=lambda m: float(m.ts), reverse=True), params)

    def replies(self, params: dict[str, Any]) -> Answer:
        channel = self._by_id(params.get("channel"))
        if channel is None:
            return error_answer("channel_not_found")
        ts = str(params.get("ts") or "")
        parent = self.messages.get((channel.id, ts))
        if parent is None:
            return error_answer("thread_not_found")
        thread = [m for m in self.messages.values() if m.channel == channel.id and m.thread_ts == ts]
        return _page([parent, *sorted(thread, key=lambda m: float(m.ts))], params)

    def info(self, params: dict[str, Any]) -> Answer:
        channel = self._by_id(params.get("channel"))
        if channel is None:
            return error_answer("channel_not_found")
        about = {"id": channel.id, "name": channel.name, "is_channel": True, "is_member": channel.member}
        return {"ok": True, "channel": about}

    def _next_ts(self) -> str:
        self._last_ts = max(self._wall(), self._last_ts + 1e-6)
        return f"{self._last_ts:.6f}"


def auth_test(_: dict[str, Any]) -> Answer:
    """What Slack answers: who the token is, and the workspace's URL (the host of its archive links)."""
    return {
        "ok": True,
        "url": WORKSPACE_URL,
        "team": "proxybot sim",
        "user": "proxybot",
        "team_id": TEAM_ID,
        "user_id": BOT_USER,
        "bot_id": BOT_ID,
    }


def blocks_of(params: dict[str, Any]) -> list[Any]:
    blocks = json_param(params.get("blocks"))
    return list(blocks) if isinstance(blocks, list) else []


def content_refusal(params: dict[str, Any]) -> Answer | None:
    """Slack's refusal of the message in `params` (text and blocks), or None."""
    refusal = check_message(str(params.get("text", "")), blocks_of(params))
    return None if refusal is None else refusal.body()


def _membership(channel: Channel | None) -> Answer | None:
    if channel is None:
        return error_answer("channel_not_found")
    return None if channel.member else error_answer("not_in_channel")


def _broadcast(params: dict[str, Any], thread_ts: object) -> tuple[bool, Answer | None]:
    """Whether a post is a reply broadcast to its channel, or Slack's refusal: `reply_broadcast` is a
    boolean, and only a reply (with `thread_ts`) can be broadcast."""
    value = params.get("reply_broadcast", False)
    if isinstance(value, str):  # a form-encoded call sends it as text
        value = {"true": True, "1": True, "false": False, "0": False, "": False}.get(value.lower(), value)
    if not isinstance(value, bool):
        return False, error_answer("invalid_arguments")
    if value and thread_ts is None:
        return False, error_answer("invalid_arguments")
    return value, None


def _metadata(params: dict[str, Any]) -> tuple[dict[str, Any] | None, Answer | None]:
    """The message metadata of a post, or Slack's refusal: an object with an `event_type` of letters,
    digits and `_`, and an `event_payload` object."""
    if "metadata" not in params:
        return None, None
    metadata = json_param(params.get("metadata"))
    event_type = metadata.get("event_type") if isinstance(metadata, dict) else None
    payload = metadata.get("event_payload") if isinstance(metadata, dict) else None
    if (
        not isinstance(event_type, str)
        or not EVENT_TYPE.fullmatch(event_type)
        or not isinstance(payload, dict)
    ):
        return None, error_answer("invalid_metadata_format")
    return metadata, None


def _window(messages: list[Message], params: dict[str, Any]) -> list[Message] | None:
    """The messages between `oldest` and `latest` (exclusive unless `inclusive`), as Slack filters
    history; None when either bound is not a timestamp."""
    try:
        oldest = float(str(params.get("oldest") or 0))
        latest = float(str(params.get("latest") or "inf"))
    except ValueError:
        return None
    inclusive = str(params.get("inclusive", "")).lower() in ("1", "true")
    if inclusive:
        return [m for m in messages if oldest <= float(m.ts) <= latest]
    return [m for m in messages if oldest < float(m.ts) < latest]


def _page(messages: list[Message], params: dict[str, Any]) -> Answer:
    try:
        limit = min(int(str(params.get("limit") or HISTORY_PAGE)), 999)
        start = int(str(params.get("cursor") or 0))
    except ValueError:
        return error_answer("invalid_cursor")
    windowed = _window(messages, params)
    if windowed is None:
        return error_answer("invalid_ts_oldest")
    messages = windowed
    with_metadata = str(params.get("include_all_metadata", "")).lower() in ("1", "true")
    chunk = messages[start : start + limit]
    more = start + limit < len(messages)
    answer: Answer = {"ok": True, "messages": [m.as_history(with_metadata) for m in chunk], "has_more": more}
    answer["response_metadata"] = {"next_cursor": str(start + limit) if more else ""}
    return answer
