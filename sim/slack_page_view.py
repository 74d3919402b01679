"""One channel of the fake Slack as HTML, laid out as Slack shows it (the demo page's content).

Messages oldest first with the app's name and time, "(edited)" on edited ones; thread replies folded under
their parent (`<details>`: a count, expandable) with the files shared into the thread; answers through a
`response_url` shown where Slack shows them: an ephemeral one marked as visible only to the asker.
Uploaded files: PNGs as images, text as a preview of its first lines. Pure: takes a snapshot, returns HTML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sim.slack_mrkdwn import escape, mrkdwn_html
from sim.slack_page_blocks import blocks_html
from sim.slack_workspace import Message

APP_NAME = "proxybot"
PREVIEW_LINES = 40
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FIXED_TIME = "09:41"  # what every message shows in the screenshots' frozen clock


@dataclass(frozen=True)
class Answer:
    """An answer sent through a `response_url` the page handed out, at the wall time it was seen."""

    at: float
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class ChannelSnapshot:
    """What a channel holds now: top-level messages, threads, files, answers to the page's asker."""

    top: Sequence[Message]
    threads: Mapping[str, Sequence[Message]]
    files: Sequence[Mapping[str, Any]]  # each with `shown_at`: its wall time
    answers: Sequence[Answer] = ()
    fixed_time: bool = False
    open_threads: frozenset[str] = field(default_factory=frozenset)


def channel_html(snap: ChannelSnapshot) -> str:
    """The channel's messages and answers, in the order Slack shows them."""
    items: list[tuple[float, str]] = [(float(m.ts), message_html(m, snap)) for m in snap.top]
    items += [(f["shown_at"], file_message_html(f, snap)) for f in snap.files if not f.get("thread_ts")]
    items += [(a.at, answer_html(a, snap)) for a in snap.answers]
    if not items:
        return '<div class="empty">No messages yet: they appear here as the bot posts them.</div>'
    return "".join(html for _, html in sorted(items, key=lambda item: item[0]))


def time_label(ts: float, fixed: bool) -> str:
    return FIXED_TIME if fixed else datetime.fromtimestamp(ts, UTC).strftime("%H:%M:%S")


def _meta(ts: float, snap: ChannelSnapshot, extra: str = "") -> str:
    when = escape(time_label(ts, snap.fixed_time))
    return (
        f'<div class="meta"><span class="author">{APP_NAME}</span><span class="app-tag">APP</span>'
        f"<time>{when}</time>{extra}</div>"
    )


def _content(msg: Message) -> str:
    if msg.blocks:
        return f'<div class="blocks">{blocks_html(msg.blocks)}</div>'
    return f'<div class="blocks"><div class="block section">{mrkdwn_html(msg.text)}</div></div>'


def message_html(msg: Message, snap: ChannelSnapshot, *, reply: bool = False) -> str:
    edited = ' <span class="edited">(edited)</span>' if msg.versions else ""
    thread = "" if reply else thread_html(msg, snap)
    css = "msg reply" if reply else "msg"
    return (
        f'<div class="{css}" id="m-{escape(msg.ts)}" data-ts="{escape(msg.ts)}">'
        f'<div class="avatar">pb</div><div class="body">{_meta(float(msg.ts), snap)}'
        f"{_content(msg)}{edited}{thread}</div></div>"
    )


def thread_html(parent: Message, snap: ChannelSnapshot) -> str:
    replies = list(snap.threads.get(parent.ts, ()))
    files = [f for f in snap.files if f.get("thread_ts") == parent.ts]
    count = len(replies) + len(files)
    if not count:
        return ""
    items = [(float(m.ts), message_html(m, snap, reply=True)) for m in replies]
    items += [(f["shown_at"], file_message_html(f, snap)) for f in files]
    inner = "".join(html for _, html in sorted(items, key=lambda item: item[0]))
    opened = " open" if parent.ts in snap.open_threads else ""
    noun = "reply" if count == 1 else "replies"
    return (
        f'<details class="thread" data-thread="{escape(parent.ts)}"{opened}>'
        f'<summary><span class="reply-count">{count} {noun}</span></summary>'
        f'<div class="replies">{inner}</div></details>'
    )


def file_message_html(upload: Mapping[str, Any], snap: ChannelSnapshot) -> str:
    return (
        f'<div class="msg file-msg" id="f-{escape(str(upload.get("id")))}">'
        f'<div class="avatar">pb</div><div class="body">{_meta(upload["shown_at"], snap)}'
        f"{file_html(upload)}</div></div>"
    )


def file_html(upload: Mapping[str, Any]) -> str:
    """A shared file: a PNG as the image, anything else as a text preview of its first lines."""
    file_id = escape(str(upload.get("id", "")))
    name = escape(str(upload.get("filename", "")))
    title = escape(str(upload.get("title") or upload.get("filename") or ""))
    content = bytes(upload.get("content") or b"")
    head = f'<div class="file-title">{title} <span class="file-name">{name}</span></div>'
    if content.startswith(PNG_MAGIC):
        image = f'<img class="file-image" src="/page/files/{file_id}" alt="{title}">'
        return f'<div class="file png">{head}{image}</div>'
    lines = content.decode(errors="replace").splitlines()
    shown = escape("\n".join(lines[:PREVIEW_LINES]))
    more = len(lines) - PREVIEW_LINES
    rest = f'<div class="file-more">{more} more lines</div>' if more > 0 else ""
    return f'<div class="file text">{head}<pre class="file-preview">{shown}</pre>{rest}</div>'


def answer_html(answer: Answer, snap: ChannelSnapshot) -> str:
    """An answer through a `response_url`: ephemeral (Slack's default) marked as only the asker's."""
    payload = answer.payload
    ephemeral = payload.get("response_type", "ephemeral") != "in_channel"
    blocks = payload.get("blocks")
    content = blocks_html(blocks) if isinstance(blocks, list) and blocks else ""
    content = content or f'<div class="block section">{mrkdwn_html(str(payload.get("text", "")))}</div>'
    note = ' <span class="only-you">Only visible to you</span>' if ephemeral else ""
    css = "msg answer ephemeral" if ephemeral else "msg answer"
    return (
        f'<div class="{css}"><div class="avatar">pb</div><div class="body">'
        f'{_meta(answer.at, snap, note)}<div class="blocks">{content}</div></div></div>'
    )
