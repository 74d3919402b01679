"""Slack mrkdwn as HTML, for the demo's page: the inverse of the escaping a message's author applied.

Slack's rules, read back: `&amp;`, `&lt;`, `&gt;` are the only entities (anything else shows as typed);
a raw `<...>` is always a construct (a link `<url|label>`, a user `<@U…>`, a channel `<#C…|name>`, a user
group `<!subteam^S…|@handle>`, `<!here>`); `*bold*`, `_italic_`, `~strike~`, `` `code` `` and fenced
blocks; `>` quotes; lines starting with a bullet or `1.` read as lists.

Every character of the message reaches the HTML escaped (`html.escape`): the only markup in the output is
the tags made here, and a link is one only when its scheme is http(s) or mailto (a `javascript:` link shows
as its text).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

SAFE_SCHEMES = ("http://", "https://", "mailto:")
_FENCE = re.compile(r"```(.*?)```", re.DOTALL)
_TOKEN = re.compile(r"`([^`\n]+)`|<([^<>\n]+)>")
# Placeholders for the tokens: NUL never survives into the text (stripped first), so none can be forged.
_SLOT = re.compile(r"\x00(\d+)\x00")
_BULLET = re.compile(r"^\s*(?:[•◦▪‣]|[-*](?=\s))\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d{1,3}[.)]\s+(.*)$")
_EMPHASIS = (
    (re.compile(r"(?<![\w*])\*(?=\S)([^*\n]*?\S)\*(?![\w*])"), "b"),
    (re.compile(r"(?<![\w_])_(?=\S)([^_\n]*?\S)_(?![\w_])"), "i"),
    (re.compile(r"(?<![\w~])~(?=\S)([^~\n]*?\S)~(?![\w~])"), "s"),
)


def unescape(text: str) -> str:
    """Slack's three entities back to their characters (no other entity is one in Slack)."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def escape(text: str) -> str:
    """Text as HTML text or an attribute value: nothing in it is markup."""
    return html.escape(text, quote=True)


def safe_url(url: str) -> str | None:
    """`url` when a browser may follow it (http, https, mailto), else None: `javascript:` and `data:`
    links are shown as text, never followed."""
    stripped = url.strip()
    return stripped if stripped.lower().startswith(SAFE_SCHEMES) else None


def link_html(url: str, label: str) -> str:
    """A link to `url` labelled `label` (plain text), or just the label when the URL is not safe."""
    target = safe_url(url)
    if target is None:
        return f'<span class="unsafe-link">{escape(label)}</span>'
    return f'<a href="{escape(target)}" target="_blank" rel="noopener noreferrer">{escape(label)}</a>'


def mrkdwn_html(text: str) -> str:
    """One mrkdwn text as HTML (block level: paragraphs, code blocks, quotes, lists)."""
    text = text.replace("\x00", "")
    parts = _FENCE.split(text)
    # split() with one group: fenced code at odd indexes, the text between at even ones.
    return "".join(_fenced(p) if i % 2 else _lines_html(p) for i, p in enumerate(parts))


def plain_html(text: str) -> str:
    """A `plain_text` object's text: escaped, line breaks kept, no formatting read."""
    return escape(text).replace("\n", "<br>")


def _fenced(code: str) -> str:
    return f'<pre class="code">{escape(unescape(code.strip(chr(10))))}</pre>'


def _lines_html(text: str) -> str:
    out: list[str] = []
    items: list[str] = []
    kind = ""
    for line in text.split("\n"):
        item_kind, inner = _list_item(line)
        if items and item_kind != kind:
            out.append(_list_html(kind, items))
            items = []
        if item_kind:
            kind = item_kind
            items.append(inline_html(inner))
        elif line.startswith(">"):  # a raw `>`: an escaped `&gt;` from outside text is no quote
            out.append(f"<blockquote>{inline_html(line[1:].lstrip())}</blockquote>")
        else:
            out.append(inline_html(line) + "<br>")
    if items:
        out.append(_list_html(kind, items))
    joined = "".join(out)
    return joined.removesuffix("<br>")


def _list_item(line: str) -> tuple[str, str]:
    bullet = _BULLET.match(line)
    if bullet is not None:
        return "ul", bullet.group(1)
    numbered = _NUMBERED.match(line)
    return ("ol", numbered.group(1)) if numbered is not None else ("", line)


def _list_html(kind: str, items: list[str]) -> str:
    return f"<{kind}>" + "".join(f"<li>{item}</li>" for item in items) + f"</{kind}>"


def inline_html(text: str) -> str:
    """One line of mrkdwn as inline HTML: code spans, links and mentions, then emphasis."""
    slots: list[str] = []

    def slot(match: re.Match[str]) -> str:
        code, construct = match.group(1), match.group(2)
        made = f"<code>{escape(unescape(code))}</code>" if code is not None else _construct(construct)
        slots.append(made)
        return f"\x00{len(slots) - 1}\x00"

    marked = _TOKEN.sub(slot, text.replace("\x00", ""))
    out = escape(unescape(marked))
    for pattern, tag in _EMPHASIS:
        out = pattern.sub(_wrap(tag), out)
    return _SLOT.sub(lambda m: slots[int(m.group(1))], out)


def _wrap(tag: str) -> Callable[[re.Match[str]], str]:
    return lambda m: f"<{tag}>{m.group(1)}</{tag}>"


def _construct(inner: str) -> str:
    """A `<...>` construct: a mention, a channel, a user group, a special mention or a link."""
    target, _, label = inner.partition("|")
    label = unescape(label)
    if target.startswith("@"):
        return f'<span class="mention">@{escape(label or target[1:])}</span>'
    if target.startswith("#"):
        return f'<span class="mention">#{escape(label or target[1:])}</span>'
    if target.startswith("!subteam^"):
        return f'<span class="mention group">{escape(label or "@" + target[9:])}</span>'
    if target.startswith("!"):
        return f'<span class="mention group">@{escape(label or target[1:])}</span>'
    url = unescape(target)
    return link_html(url, label or url)
