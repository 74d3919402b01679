"""Generic Block Kit building with Slack's limits enforced by construction.

Every builder here returns something Slack accepts, whatever it is given: over-long text is cut with a
visible marker ("… (truncated, N more chars)"), surplus fields, elements and blocks are folded into a
"+N more" line. Nothing is rejected. Lengths are counted in UTF-16 code units, as Slack counts them.

Text passed to `section`, `fields` and `context` is mrkdwn: anything in it that comes from outside
(labels, annotations, cluster and target names, Slack or cluster answers, user input) enters through
`esc` (or `code` / `code_block`, built on it), the one way in. It makes the text inert: no `<!channel>`,
link or mention, no newline that starts a line looking like ours, no backtick that opens a code span or
fence running past the value, no bidi control that reorders what is shown. Every mrkdwn text object is
sent `verbatim`, so Slack does not auto-link raw URLs or `#channel` names either. Plain-text places
(header, button labels) take raw text: Slack parses no markup there, and `clean` drops controls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

Block = dict[str, Any]

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_HEADER_TEXT = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_CONTEXT_TEXT = 2000
MAX_BUTTONS = 25
MAX_BUTTON_TEXT = 75
MAX_ACTION_ID = 255
MAX_BUTTON_VALUE = 2000
MAX_BUTTON_URL = 3000
# Slack accepts more, but renders badly and truncates notifications well before: keep the whole
# message (blocks plus the fallback) under ~10 000 characters.
MAX_MESSAGE_TEXT = 10_000
MAX_FALLBACK_TEXT = 1000

# C0 and C1 controls but newline and tab, and the bidi controls that make text display in an order
# other than its own (U+202E turns "gpj.exe" into "exe.jpg"): ALM, LRM/RLM, embeddings, isolates.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# A lone surrogate (JSON allows `"\ud800"`) cannot be encoded to send: it becomes U+FFFD.
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_SPACES = re.compile(r"\s+")
# Everything that starts a new line in Slack, or looks like it; folded so outside text stays inline.
_BREAKS = re.compile(r"[\n\r\t\v\f\x1c-\x1e\x85\u2028\u2029]+")
# `@here`, `@channel`, `#general`: a word joiner after the sign keeps Slack from reading a mention.
_MENTION = re.compile(r"([@#])(?=\w)")
WORD_JOINER = "\u2060"
# A backtick that looks like one (U+02CB) but opens no code span.
INERT_BACKTICK = "\u02cb"
# Backticks are kept only as whole inline spans (`get`); a run of them (a fence) or an odd one is not.
_CODE_SPAN = re.compile(r"(`[^`]+`)")


def units(text: str) -> int:
    """Length as Slack counts it: UTF-16 code units (an emoji outside the BMP counts two)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def clean(text: object) -> str:
    """Text without control or bidi characters (newline and tab kept) or lone surrogates."""
    return _SURROGATE.sub("\ufffd", _CONTROL.sub("", str(text)))


def esc(text: object) -> str:
    """Outside text made inert for mrkdwn, on one line: the one way such text enters a message.

    `&`, `<`, `>` escaped (no `<!channel>`, `<@U1>` or link); line breaks folded into a space (no line
    that starts like ours, "*Next step:* …"); `@`/`#` before a word broken with a word joiner (no
    `@here`, no `#channel`); a backtick kept only in a whole inline span (`x`), so no fence or span runs
    past the value; control and bidi characters dropped.
    """
    return _MENTION.sub(rf"\1{WORD_JOINER}", _inert_backticks(_inline(text)))


def _inline(text: object) -> str:
    """`esc` but for mentions and backticks: one line, controls dropped, `& < >` escaped."""
    out = clean(_BREAKS.sub(" ", str(text)))
    return out.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _inert_backticks(text: str) -> str:
    if "`" not in text:
        return text
    text = re.sub(r"`{2,}", lambda m: INERT_BACKTICK * len(m.group()), text)
    parts = _CODE_SPAN.split(text)
    # split() with one group: the spans are at odd indexes, whatever lies between at even ones.
    return "".join(p if i % 2 else p.replace("`", INERT_BACKTICK) for i, p in enumerate(parts))


def code(text: object) -> str:
    """Outside text as inline code: `esc` with every backtick made inert (one would end the span).

    No word joiner: Slack reads no mention inside code, and a copied name must be the name."""
    inner = _inline(text).replace("`", INERT_BACKTICK)
    return f"`{inner}`" if inner else "``"


def code_block(text: object) -> str:
    """Outside text as a code block, its lines kept, each made inline code's way (YAML to copy)."""
    lines = str(text).rstrip().splitlines() or [""]
    inner = "\n".join(_inline(line).replace("`", INERT_BACKTICK) for line in lines)
    return f"```{inner}```"


def one_line(text: object) -> str:
    """Whitespace (newlines included) folded into single spaces, for plain-text places."""
    return _SPACES.sub(" ", clean(text)).strip()


def truncate(text: str, limit: int) -> str:
    """`text` cut to `limit` units with a visible marker saying how much was cut."""
    if units(text) <= limit:
        return text
    # The marker's count is at most len(text), so a marker sized for it always fits once filled in.
    widest = f"… (truncated, {len(text)} more chars)"
    if units(widest) >= limit:
        return _head(text, limit - 1) + "…"
    head = _outside_entity(_head(text, limit - units(widest)))
    return f"{head}… (truncated, {len(text) - len(head)} more chars)"


def _head(text: str, limit: int) -> str:
    """The longest prefix of `text` within `limit` units."""
    head = text[: max(0, limit)]
    while units(head) > limit:
        head = head[: len(head) - (units(head) - limit)]
    return head


def _outside_entity(head: str) -> str:
    """Never end inside `&amp;`-style escapes: a half entity would show as garbage."""
    amp = head.rfind("&")
    if amp != -1 and ";" not in head[amp:] and len(head) - amp < 6:
        return head[:amp]
    return head


def _more(n: int) -> str:
    return f"… +{n} more"


def lines_within(lines: Sequence[str], limit: int, *, sep: str = "\n") -> str:
    """Lines joined, whole lines dropped from the end to fit, with "… +N more" saying how many."""
    joined = sep.join(lines)
    if units(joined) <= limit:
        return joined
    kept: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        left = len(lines) - i - 1
        tail = units(sep) + units(_more(left)) if left else 0
        add = units(line) + (units(sep) if kept else 0)
        if used + add + tail > limit:
            break
        kept.append(line)
        used += add
    rest = len(lines) - len(kept)
    if not kept:
        left = len(lines) - 1
        room = limit - (units(sep) + units(_more(left)) if left else 0)
        kept, rest = [truncate(lines[0], max(1, room))], left
    return truncate(sep.join([*kept, _more(rest)] if rest else kept), limit)


def _nonempty(text: str) -> str:
    # Slack rejects empty text objects; a dash says "nothing" without breaking the message.
    return text if text.strip() else "—"


def plain(text: object, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": truncate(_nonempty(one_line(text)), limit), "emoji": True}


def mrkdwn(text: str, limit: int) -> dict[str, Any]:
    # verbatim: Slack would otherwise turn raw URLs, `#channel` names and `@here` in the text into links.
    return {"type": "mrkdwn", "text": truncate(_nonempty(clean(text)), limit), "verbatim": True}


def header(text: object) -> Block:
    return {"type": "header", "text": plain(text, MAX_HEADER_TEXT)}


def section(text: str) -> Block:
    return {"type": "section", "text": mrkdwn(text, MAX_SECTION_TEXT)}


def section_lines(lines: Sequence[str]) -> Block:
    """A section of lines; lines that do not fit are dropped whole and counted."""
    return section(lines_within(lines, MAX_SECTION_TEXT))


def fields(items: Sequence[str]) -> Block:
    """A section of up to 10 fields, two per row in Slack; the 10th says how many did not fit."""
    shown = list(items[:MAX_FIELDS])
    if len(items) > MAX_FIELDS:
        shown[-1] = f"… +{len(items) - MAX_FIELDS + 1} more"
    return {"type": "section", "fields": [mrkdwn(f, MAX_FIELD_TEXT) for f in shown]}


def context(items: Sequence[str]) -> Block:
    shown = list(items[:MAX_CONTEXT_ELEMENTS])
    if len(items) > MAX_CONTEXT_ELEMENTS:
        shown[-1] = f"… +{len(items) - MAX_CONTEXT_ELEMENTS + 1} more"
    return {"type": "context", "elements": [mrkdwn(t, MAX_CONTEXT_TEXT) for t in shown]}


@dataclass(frozen=True, slots=True)
class Button:
    """One button: label (plain text), action id (ours) and value (a validated reference), or a link
    button opening `url` (an http(s) URL checked by its maker; Slack still sends the press to be acked)."""

    label: str
    action_id: str
    value: str = ""
    style: str | None = None
    url: str | None = None

    def __post_init__(self) -> None:
        # Action ids, values and URLs are checked before they get here: an over-long one is a bug.
        if not 0 < len(self.action_id) <= MAX_ACTION_ID or len(self.value) > MAX_BUTTON_VALUE:
            raise ValueError(f"button {self.action_id!r}: action_id or value over Slack's limit")
        if self.url is not None and not 0 < len(self.url) <= MAX_BUTTON_URL:
            raise ValueError(f"button {self.action_id!r}: url empty or over Slack's limit")


def actions(buttons: Iterable[Button], block_id: str | None = None) -> Block:
    elements = []
    for b in list(buttons)[:MAX_BUTTONS]:
        element: dict[str, Any] = {
            "type": "button",
            "text": plain(b.label, MAX_BUTTON_TEXT),
            "action_id": b.action_id,
        }
        if b.value:
            element["value"] = b.value
        if b.url is not None:
            element["url"] = b.url
        if b.style is not None:
            element["style"] = b.style
        elements.append(element)
    block: Block = {"type": "actions", "elements": elements}
    if block_id is not None:
        block["block_id"] = block_id
    return block


@dataclass(frozen=True)
class Message:
    """A Slack message: the fallback `text` (always set) and its blocks."""

    text: str
    blocks: tuple[Block, ...] = ()
    # A thread reply also shown in the channel (`reply_broadcast`): an escalation, which must be seen.
    broadcast: bool = False

    def as_kwargs(self) -> dict[str, Any]:
        """The arguments of `chat.postMessage` / `chat.update` / `respond` for this content."""
        out: dict[str, Any] = {"text": self.text}
        if self.blocks:
            out["blocks"] = list(self.blocks)
        if self.broadcast:
            out["reply_broadcast"] = True
        return out


def block_texts(block: Block) -> list[str]:
    """Every text string shown by one block."""
    found = [str(block["text"].get("text", ""))] if isinstance(block.get("text"), dict) else []
    for item in [*(block.get("fields") or []), *(block.get("elements") or [])]:
        text = item.get("text")
        found.append(str(text.get("text", "")) if isinstance(text, dict) else str(text or ""))
    return found


def block_units(block: Block) -> int:
    return sum(units(t) for t in block_texts(block))


def message(
    fallback: str, body: Sequence[Block], tail: Sequence[Block] = (), *, budget: int = MAX_MESSAGE_TEXT
) -> Message:
    """A message within every limit.

    `tail` blocks (context, buttons) are always kept, shrunk to their share of a third of the text
    `budget` when they are bigger; body blocks beyond the block count or the text budget are dropped from
    the end (the first one that does not fit is shrunk when it can be), and a context line says how
    many were dropped.
    """
    text = truncate(_nonempty(clean(fallback)), MAX_FALLBACK_TEXT)
    share = budget // 3 // max(1, len(tail))
    tail = [b if block_units(b) <= share else _shrunk(b, share) or b for b in tail[: MAX_BLOCKS - 2]]
    budget = budget - units(text) - sum(block_units(b) for b in tail) - 60
    room = MAX_BLOCKS - len(tail) - 1
    kept: list[Block] = []
    for i, block in enumerate(body):
        size = block_units(block)
        if len(kept) < room and size <= budget:
            kept.append(block)
            budget -= size
            continue
        fitted = _shrunk(block, budget) if len(kept) < room else None
        if fitted is not None:
            kept.append(fitted)
        dropped = len(body) - i - (fitted is not None)
        if dropped:
            kept.append(context([f"… (truncated, {dropped} more blocks)"]))
        break
    return Message(text, (*kept, *tail))


def text_message(text: str) -> Message:
    """A short answer (a sentence, a refusal) through `message`: one section, within every limit."""
    return message(text, [section(text)])


def _shrunk(block: Block, budget: int) -> Block | None:
    """A section or context cut down to `budget` units, or None when too little is left to be useful."""
    kind = block.get("type")
    items = block.get("fields") or block.get("elements") or []
    if kind == "section" and "text" not in block:
        each = budget // max(1, len(items)) - 2
        return {**block, "fields": [mrkdwn(f["text"], each) for f in items]} if each >= 40 else None
    if kind == "context":
        each = budget // max(1, len(items)) - 2
        return {**block, "elements": [mrkdwn(e["text"], each) for e in items]} if each >= 40 else None
    if kind == "section" and budget >= 200:
        return section(truncate(block["text"]["text"], budget))
    return None


# -- time words (UTC, relative to an injected `now`) ---------------------------------------------------------


def utc(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def fmt_time(at: datetime) -> str:
    return utc(at).strftime("%Y-%m-%d %H:%M UTC")


def fmt_clock(at: datetime) -> str:
    return utc(at).strftime("%H:%M:%S UTC")


def fmt_span(seconds: float) -> str:
    """A duration as people say it: 45 s, 12 min, 1 h 5 min, 2 d 3 h."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if s < 3600:
        return f"{minutes} min"
    if s < 86400:
        rest = minutes % 60
        return f"{hours} h {rest} min" if rest else f"{hours} h"
    rest = hours % 24
    return f"{days} d {rest} h" if rest else f"{days} d"


def fmt_ago(at: datetime, now: datetime) -> str:
    return ago_words((utc(now) - utc(at)).total_seconds())


def ago_words(seconds: float) -> str:
    """How long ago, as `fmt_ago` says it: "just now", "12 min ago", "in 3 min" (a moment ahead)."""
    if abs(seconds) < 5:
        return "just now"
    return f"{fmt_span(seconds)} ago" if seconds > 0 else f"in {fmt_span(-seconds)}"


def fmt_since(at: datetime, now: datetime) -> str:
    return f"{fmt_time(at)} ({fmt_ago(at, now)})"


# The ages `fmt_ago` tells of a past moment: "just now", "45 s ago", "12 min ago", "1 h 5 min ago".
_AGO = re.compile(r"\bjust now\b|\b(\d+) (s|min|h|d)(?: (\d+) (min|h))? ago\b")
_UNIT_SECONDS = {"s": 1, "min": 60, "h": 3600, "d": 86400}


def aged(message: Message, seconds: float) -> Message:
    """`message` with every age it tells (`fmt_ago`'s words for a past moment) `seconds` older: what was
    "just now" when it was rendered is "10 min ago" when it is shown 10 minutes later. Each age is read at
    its lower bound ("12 min" as 12:00, "just now" as 0), so none is told older than it is."""
    if seconds <= 0:
        return message

    def older(text: str) -> str:
        return _AGO.sub(lambda m: ago_words(_age_seconds(m) + seconds), text)

    blocks = tuple(_with_texts(block, older) for block in message.blocks)
    return Message(older(message.text), blocks, message.broadcast)


def _age_seconds(m: re.Match[str]) -> float:
    if m.group(1) is None:  # "just now"
        return 0.0
    rest = int(m.group(3)) * _UNIT_SECONDS[m.group(4)] if m.group(3) else 0
    return float(int(m.group(1)) * _UNIT_SECONDS[m.group(2)] + rest)


def _with_texts(node: Any, change: Callable[[str], str]) -> Any:
    """A block with `change` applied to every text it shows (the `text` strings; never a button's value)."""
    if isinstance(node, dict):
        return {
            key: change(value) if key == "text" and isinstance(value, str) else _with_texts(value, change)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_with_texts(item, change) for item in node]
    return node
