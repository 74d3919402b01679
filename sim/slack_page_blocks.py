"""Block Kit as HTML, laid out as Slack shows a message, for the demo's page.

Every block type Slack's messages use is drawn: header, section (text, fields, accessory), context,
divider, actions, image, rich text as plain text, and a table as a table (a bold rich-text cell bold,
each column aligned and wrapped as its `column_settings` say); one the page does not know shows as a
note, never dropped silently. Interactive elements become controls that carry, as `data-` attributes,
what the page's script sends back for a `block_actions` (the action ID, block ID, value): buttons, link
buttons, overflow menus and selects. All text goes through `sim.slack_mrkdwn` (escaped, links checked).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from sim.slack_mrkdwn import escape, link_html, mrkdwn_html, plain_html, safe_url

Block = Mapping[str, Any]


def text_html(obj: object) -> str:
    """A text object (`mrkdwn` or `plain_text`) as HTML; anything else as its escaped string."""
    if isinstance(obj, Mapping):
        text = str(obj.get("text", ""))
        return mrkdwn_html(text) if obj.get("type") == "mrkdwn" else plain_html(text)
    return plain_html("" if obj is None else str(obj))


def plain_label(obj: object) -> str:
    """A text object's words, unformatted (an option's or a button's label)."""
    return str(obj.get("text", "")) if isinstance(obj, Mapping) else str(obj or "")


def blocks_html(blocks: list[Any]) -> str:
    return "".join(block_html(b) for b in blocks if isinstance(b, Mapping))


def block_html(block: Block) -> str:
    kind = str(block.get("type", ""))
    draw = _BLOCKS.get(kind)
    if draw is None:
        return f'<div class="block unknown">[a {escape(kind)} block the page does not draw]</div>'
    return draw(block)


def _header(block: Block) -> str:
    return f'<div class="block header">{plain_html(plain_label(block.get("text")))}</div>'


def _section(block: Block) -> str:
    parts = []
    if block.get("text") is not None:
        parts.append(f'<div class="text">{text_html(block.get("text"))}</div>')
    fields = block.get("fields")
    if isinstance(fields, list) and fields:
        cells = "".join(f'<div class="field">{text_html(f)}</div>' for f in fields)
        parts.append(f'<div class="fields">{cells}</div>')
    body = f'<div class="section-body">{"".join(parts)}</div>'
    accessory = block.get("accessory")
    side = element_html(accessory, block) if isinstance(accessory, Mapping) else ""
    return f'<div class="block section">{body}{side}</div>'


def _context(block: Block) -> str:
    items = []
    for element in block.get("elements") or []:
        if isinstance(element, Mapping) and element.get("type") == "image":
            items.append(_image_tag(element, "context-image"))
        else:
            items.append(f"<span>{text_html(element)}</span>")
    return f'<div class="block context">{"".join(items)}</div>'


def _divider(_: Block) -> str:
    return '<hr class="block divider">'


def _actions(block: Block) -> str:
    elements = [element_html(e, block) for e in block.get("elements") or [] if isinstance(e, Mapping)]
    return f'<div class="block actions">{"".join(elements)}</div>'


def _image(block: Block) -> str:
    title = block.get("title")
    caption = f'<div class="image-title">{text_html(title)}</div>' if title else ""
    return f'<div class="block image">{caption}{_image_tag(block, "image")}</div>'


def _image_tag(element: Mapping[str, Any], css: str) -> str:
    alt = escape(str(element.get("alt_text", "")))
    url = safe_url(str(element.get("image_url", "")))
    if url is None:
        return f'<span class="{css} missing">[image: {alt}]</span>'
    return f'<img class="{css}" src="{escape(url)}" alt="{alt}">'


def _rich_text(block: Block) -> str:
    words = "".join(_rich_words(block.get("elements")))
    return f'<div class="block rich-text">{plain_html(words)}</div>'


def _rich_words(elements: object) -> list[str]:
    out: list[str] = []
    for element in elements if isinstance(elements, list) else []:
        if isinstance(element, Mapping):
            out.append(str(element.get("text", "")))
            out.extend(_rich_words(element.get("elements")))
    return out


def _table(block: Block) -> str:
    settings = block.get("column_settings")
    columns = [c if isinstance(c, Mapping) else {} for c in settings] if isinstance(settings, list) else []
    rows = [r for r in block.get("rows") or [] if isinstance(r, list)]
    # Cells apart by a space: a table draws none, but the page's text (its pictures' `.txt`) reads apart.
    body = "".join(f"<tr>{' '.join(_table_cell(c, i, columns) for i, c in enumerate(r))}</tr>" for r in rows)
    return f'<div class="block table-wrap"><table class="table">{body}</table></div>'


def _table_cell(cell: object, index: int, columns: list[Mapping[str, Any]]) -> str:
    setting = columns[index] if index < len(columns) else {}
    align = str(setting.get("align", "left"))
    css = f"align-{align if align in ('left', 'center', 'right') else 'left'}"
    css += " wrapped" if setting.get("is_wrapped") is True else " unwrapped"
    return f'<td class="{css}">{_cell_html(cell)}</td>'


def _cell_html(cell: object) -> str:
    if not isinstance(cell, Mapping):
        return ""
    if cell.get("type") == "rich_text":
        return "".join(_rich_html(e) for e in cell.get("elements") or [] if isinstance(e, Mapping))
    return plain_html(str(cell.get("text", "")))


def _rich_html(element: Mapping[str, Any]) -> str:
    """A rich text element's words, bold where its style says so."""
    inner = element.get("elements")
    if isinstance(inner, list):
        return "".join(_rich_html(e) for e in inner if isinstance(e, Mapping))
    words = plain_html(str(element.get("text", "")))
    style = element.get("style")
    return f"<b>{words}</b>" if isinstance(style, Mapping) and style.get("bold") is True else words


_BLOCKS: dict[str, Callable[[Block], str]] = {
    "header": _header,
    "section": _section,
    "context": _context,
    "divider": _divider,
    "actions": _actions,
    "image": _image,
    "rich_text": _rich_text,
    "table": _table,
}


# -- interactive elements --------------------------------------------------------------------------


def element_html(element: Mapping[str, Any], block: Block) -> str:
    """One interactive element as a control; a link button as a link (Slack opens it, nothing is sent)."""
    kind = str(element.get("type", ""))
    if kind == "button":
        return _button(element, block)
    if kind == "image":
        return _image_tag(element, "accessory-image")
    if kind in ("overflow", "static_select", "external_select", "multi_static_select"):
        return _menu(element, block)
    return f'<span class="control unknown">[{escape(kind)}]</span>'


def _action_attrs(element: Mapping[str, Any], block: Block) -> str:
    about = {
        "action_id": element.get("action_id"),
        "block_id": block.get("block_id"),
        "type": element.get("type"),
    }
    return f'data-action="{escape(json.dumps(about))}"'


def _button(element: Mapping[str, Any], block: Block) -> str:
    label = plain_label(element.get("text"))
    style = str(element.get("style", ""))
    css = "btn" + (f" {style}" if style in ("primary", "danger") else "")
    if element.get("url"):
        inner = link_html(str(element["url"]), label)
        return f'<span class="{css} link-button">{inner}</span>'
    value = escape(str(element.get("value", "")))
    attrs = _action_attrs(element, block)
    return f'<button type="button" class="{css}" {attrs} data-value="{value}">{escape(label)}</button>'


def _menu(element: Mapping[str, Any], block: Block) -> str:
    overflow = element.get("type") == "overflow"
    placeholder = plain_label(element.get("placeholder")) or ("⋮" if overflow else "")
    options = [f'<option value="" selected disabled>{escape(placeholder)}</option>']
    for option in _options(element):
        value = escape(str(option.get("value", "")))
        text = escape(plain_label(option.get("text")))
        url = safe_url(str(option.get("url", ""))) if option.get("url") else None
        link = f' data-url="{escape(url)}"' if url else ""
        options.append(f'<option value="{value}"{link}>{text}</option>')
    css = "menu overflow" if overflow else "menu"
    return f'<select class="{css}" {_action_attrs(element, block)}>{"".join(options)}</select>'


def _options(element: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    for option in element.get("options") or []:
        if isinstance(option, Mapping):
            found.append(option)
    for group in element.get("option_groups") or []:
        if isinstance(group, Mapping):
            found.extend(o for o in group.get("options") or [] if isinstance(o, Mapping))
    return found
