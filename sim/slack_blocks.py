"""Slack's checks of a message's content, as the fake Slack server applies them.

Slack refuses an over-limit message whole: `msg_too_long` for the text fallback, `invalid_blocks` for
Block Kit, with `response_metadata.messages` naming the offending place as a JSON pointer
(`[ERROR] must be less than 151 characters [json-pointer:/blocks/0/text/text]`). The limits are Slack's
published ones for the blocks proxybot sends; other block types are accepted as they are.

A `table` block (docs.slack.dev/reference/block-kit/blocks/table-block) is sent among the message's
`blocks`: 1 to 100 rows of 1 to 20 cells each, a cell `raw_text` (a non-empty `text`) or `rich_text`,
`column_settings` at most 20 of `{align: left|center|right, is_wrapped: bool}`. Slack keeps a message's
table as an attachment, so a second table is refused as one: `invalid_attachments`,
`only_one_table_allowed`. Slack publishes no length for a cell; this fake takes 2 000 characters, as for
Block Kit's other long texts (fields, context).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

MAX_BLOCKS = 50
MAX_TEXT = 40_000
MAX_SECTION_TEXT = 3000
MAX_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_HEADER_TEXT = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_ACTIONS_ELEMENTS = 25
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_BUTTON_URL = 3000
MAX_ID = 255
MAX_TABLE_ROWS = 100
MAX_TABLE_CELLS = 20
MAX_TABLE_CELL_TEXT = 2000
TABLE_ALIGNS = frozenset({"left", "center", "right"})
KNOWN_TYPES = frozenset(
    {
        "section",
        "header",
        "context",
        "actions",
        "divider",
        "image",
        "rich_text",
        "input",
        "file",
        "video",
        "table",
    }
)
TEXT_TYPES = frozenset({"plain_text", "mrkdwn"})


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why Slack refuses a message: its error code and, for blocks, the places at fault."""

    error: str
    messages: tuple[str, ...] = ()

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"ok": False, "error": self.error}
        if self.messages:
            body["errors"] = [m.removeprefix("[ERROR] ") for m in self.messages]
            body["response_metadata"] = {"messages": list(self.messages)}
        return body


def check_message(text: str, blocks: list[Any], *, need_content: bool = True) -> Refusal | None:
    """Slack's answer to a message it would refuse, or None when it would be accepted."""
    if need_content and not text and not blocks:
        return Refusal("no_text")
    if len(text) > MAX_TEXT:
        return Refusal("msg_too_long")
    problems = list(block_problems(blocks))
    if problems:
        return Refusal("invalid_blocks", tuple(f"[ERROR] {p}" for p in problems))
    tables = [b for b in blocks if isinstance(b, dict) and b.get("type") == "table"]
    return Refusal("invalid_attachments", ("[ERROR] only_one_table_allowed",)) if len(tables) > 1 else None


def block_problems(blocks: list[Any]) -> Iterator[str]:
    """Every place in `blocks` that Slack would refuse, as `what [json-pointer:/blocks/...]`."""
    if len(blocks) > MAX_BLOCKS:
        yield f"no more than {MAX_BLOCKS} items allowed [json-pointer:/blocks]"
    block_ids: set[str] = set()
    for index, block in enumerate(blocks):
        at = f"/blocks/{index}"
        if not isinstance(block, dict):
            yield f"must be an object [json-pointer:{at}]"
            continue
        yield from _ids(block, "block_id", at, block_ids)
        yield from _block(block, at)


def _block(block: dict[str, Any], at: str) -> Iterator[str]:
    kind = block.get("type")
    if kind not in KNOWN_TYPES:
        yield f"unsupported type: {kind!r} [json-pointer:{at}/type]"
    elif kind == "header":
        yield from _text(block.get("text"), f"{at}/text", MAX_HEADER_TEXT, plain_only=True)
    elif kind == "section":
        yield from _section(block, at)
    elif kind == "context":
        yield from _elements(block, at, MAX_CONTEXT_ELEMENTS, _context_element)
    elif kind == "actions":
        action_ids: set[str] = set()
        yield from _elements(block, at, MAX_ACTIONS_ELEMENTS, lambda e, a: _action(e, a, action_ids))
    elif kind == "table":
        yield from _table(block, at)


def _table(block: dict[str, Any], at: str) -> Iterator[str]:
    rows = block.get("rows")
    if not isinstance(rows, list) or not rows:
        yield f"must provide at least 1 row [json-pointer:{at}/rows]"
        return
    if len(rows) > MAX_TABLE_ROWS:
        yield f"no more than {MAX_TABLE_ROWS} items allowed [json-pointer:{at}/rows]"
    for i, row in enumerate(rows):
        if not isinstance(row, list) or not row:
            yield f"must provide at least 1 cell [json-pointer:{at}/rows/{i}]"
            continue
        if len(row) > MAX_TABLE_CELLS:
            yield f"no more than {MAX_TABLE_CELLS} items allowed [json-pointer:{at}/rows/{i}]"
        for j, cell in enumerate(row):
            yield from _cell(cell, f"{at}/rows/{i}/{j}")
    settings = block.get("column_settings")
    if settings is None:
        return
    if not isinstance(settings, list) or len(settings) > MAX_TABLE_CELLS:
        yield f"no more than {MAX_TABLE_CELLS} items allowed [json-pointer:{at}/column_settings]"
        return
    for i, setting in enumerate(settings):
        yield from _column_setting(setting, f"{at}/column_settings/{i}")


def _cell(cell: Any, at: str) -> Iterator[str]:
    kind = cell.get("type") if isinstance(cell, dict) else None
    if kind == "rich_text":
        if not isinstance(cell.get("elements"), list) or not cell["elements"]:
            yield f"must provide at least 1 element [json-pointer:{at}/elements]"
        return
    if kind != "raw_text":
        yield f"must be a raw_text or rich_text object [json-pointer:{at}]"
        return
    text = cell.get("text")
    if not isinstance(text, str) or not text:
        yield f"must be more than 0 characters [json-pointer:{at}/text]"
    elif len(text) > MAX_TABLE_CELL_TEXT:
        yield f"must be less than {MAX_TABLE_CELL_TEXT + 1} characters [json-pointer:{at}/text]"


def _column_setting(setting: Any, at: str) -> Iterator[str]:
    if not isinstance(setting, dict):
        yield f"must be an object [json-pointer:{at}]"
        return
    if "align" in setting and setting["align"] not in TABLE_ALIGNS:
        yield f"must be one of left, center, right [json-pointer:{at}/align]"
    if "is_wrapped" in setting and not isinstance(setting["is_wrapped"], bool):
        yield f"must be a boolean [json-pointer:{at}/is_wrapped]"


def _section(block: dict[str, Any], at: str) -> Iterator[str]:
    text, fields = block.get("text"), block.get("fields")
    if text is None and not fields:
        yield f"must provide either text or fields [json-pointer:{at}]"
    if text is not None:
        yield from _text(text, f"{at}/text", MAX_SECTION_TEXT)
    if fields is not None:
        if not isinstance(fields, list) or len(fields) > MAX_FIELDS:
            yield f"no more than {MAX_FIELDS} items allowed [json-pointer:{at}/fields]"
        else:
            for i, field in enumerate(fields):
                yield from _text(field, f"{at}/fields/{i}", MAX_FIELD_TEXT)
    accessory = block.get("accessory")
    if isinstance(accessory, dict) and accessory.get("type") == "button":
        yield from _button(accessory, f"{at}/accessory")


def _elements(
    block: dict[str, Any], at: str, most: int, check: Callable[[Any, str], Iterator[str]]
) -> Iterator[str]:
    elements = block.get("elements")
    if not isinstance(elements, list) or not elements:
        yield f"must provide at least 1 element [json-pointer:{at}/elements]"
        return
    if len(elements) > most:
        yield f"no more than {most} items allowed [json-pointer:{at}/elements]"
    for i, element in enumerate(elements):
        yield from check(element, f"{at}/elements/{i}")


def _context_element(element: Any, at: str) -> Iterator[str]:
    if isinstance(element, dict) and element.get("type") == "image":
        return
    yield from _text(element, at, MAX_SECTION_TEXT)


def _action(element: Any, at: str, action_ids: set[str]) -> Iterator[str]:
    if not isinstance(element, dict):
        yield f"must be an object [json-pointer:{at}]"
        return
    yield from _ids(element, "action_id", at, action_ids)
    if element.get("type") == "button":
        yield from _button(element, at)


def _button(button: dict[str, Any], at: str) -> Iterator[str]:
    yield from _text(button.get("text"), f"{at}/text", MAX_BUTTON_TEXT, plain_only=True)
    value = button.get("value")
    if value is not None and len(str(value)) > MAX_BUTTON_VALUE:
        yield f"must be less than {MAX_BUTTON_VALUE + 1} characters [json-pointer:{at}/value]"
    url = button.get("url")
    if url is not None and not (isinstance(url, str) and 0 < len(url) <= MAX_BUTTON_URL):
        yield f"must be less than {MAX_BUTTON_URL + 1} characters [json-pointer:{at}/url]"
    elif url is not None and not url.startswith(("http://", "https://")):
        yield f"must be a valid URL [json-pointer:{at}/url]"


def _ids(obj: dict[str, Any], key: str, at: str, seen: set[str]) -> Iterator[str]:
    value = obj.get(key)
    if value is None:
        return
    if len(str(value)) > MAX_ID:
        yield f"must be less than {MAX_ID + 1} characters [json-pointer:{at}/{key}]"
    if value in seen:
        yield f"{key} {value!r} is used more than once [json-pointer:{at}/{key}]"
    seen.add(str(value))


def _text(obj: Any, at: str, most: int, *, plain_only: bool = False) -> Iterator[str]:
    if not isinstance(obj, dict) or obj.get("type") not in TEXT_TYPES:
        yield f"must be a text object [json-pointer:{at}]"
        return
    if plain_only and obj.get("type") != "plain_text":
        yield f"must be plain_text [json-pointer:{at}/type]"
    text = obj.get("text")
    if not isinstance(text, str) or not text:
        yield f"must be more than 0 characters [json-pointer:{at}/text]"
    elif len(text) > most:
        yield f"must be less than {most + 1} characters [json-pointer:{at}/text]"
