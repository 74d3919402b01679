"""A modal the bot opened (`views.open`), drawn on the demo page as Slack draws it, and what its Submit sends.

`modal_html` draws the view: its title, its blocks (sections and the rest as in a message, input blocks
as fields: a select with its options, a text input or text area, with "(optional)" and the error Slack
shows beside the field), Cancel and Submit. `submitted_values` reads what the page's script sends (block
ID -> the typed text or the chosen option's value) against the view the fake holds, into the
`view.state.values` Slack posts (`{"type": "static_select", "selected_option": {...}}`, `{"type":
"plain_text_input", "value": ...}`); what Slack's own client refuses to submit (a required field left
empty, text over `max_length`, a number that is not one) comes back as field errors instead, sent nowhere.
Every text from the view is escaped (`sim.slack_mrkdwn`). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sim.slack_mrkdwn import escape
from sim.slack_page_blocks import block_html, plain_label

REQUIRED = "Please fill out this field."  # what Slack's client says under an empty required input
Typed = Mapping[str, str | None]


class ModalInputError(ValueError):
    """What the page's script sent is not a value of this view's inputs: `field` names what is wrong."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(why)
        self.field = field


@dataclass
class OpenModal:
    """A modal open on the page: its view (replaced by a `response_action: update`), what was typed last,
    the field errors shown, a problem with the whole modal, and a revision the page redraws on."""

    view: dict[str, Any]
    typed: dict[str, str | None] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    problem: str = ""
    revision: int = 0

    @property
    def id(self) -> str:
        return str(self.view.get("id", ""))

    @property
    def key(self) -> str:
        return f"{self.id}:{self.revision}"


def input_blocks(view: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(block ID, block) of each input block; one without an ID gets the one Slack would keep for it."""
    blocks = view.get("blocks")
    found: list[tuple[str, Mapping[str, Any]]] = []
    for i, block in enumerate(blocks if isinstance(blocks, list) else []):
        if isinstance(block, Mapping) and block.get("type") == "input":
            found.append((str(block.get("block_id") or f"input-{i}"), block))
    return found


def _element(block: Mapping[str, Any]) -> Mapping[str, Any]:
    element = block.get("element")
    return element if isinstance(element, Mapping) else {}


def _options(element: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = [o for o in element.get("options") or [] if isinstance(o, Mapping)]
    for group in element.get("option_groups") or []:
        if isinstance(group, Mapping):
            found += [o for o in group.get("options") or [] if isinstance(o, Mapping)]
    return found


def _initial(element: Mapping[str, Any]) -> str:
    if element.get("type") == "static_select":
        chosen = element.get("initial_option")
        return str(chosen.get("value", "")) if isinstance(chosen, Mapping) else ""
    return str(element.get("initial_value") or "")


# -- drawn ------------------------------------------------------------------------------------------


def modal_html(modal: OpenModal) -> str:
    """The modal over the page, its fields showing what was typed last and the errors beside them."""
    view = modal.view
    inputs = dict(input_blocks(view))
    body = []
    blocks = view.get("blocks")
    for i, block in enumerate(blocks if isinstance(blocks, list) else []):
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "input":
            block_id = str(block.get("block_id") or f"input-{i}")
            body.append(_input_html(block_id, inputs[block_id], modal))
        else:
            body.append(block_html(block))
    problem = (
        f'<div class="modal-problem" role="alert">{escape(modal.problem)}</div>' if modal.problem else ""
    )
    title = escape(plain_label(view.get("title")))
    close = escape(plain_label(view.get("close")) or "Cancel")
    submit = view.get("submit")
    submit_button = (
        f'<button type="submit" class="btn primary">{escape(plain_label(submit))}</button>' if submit else ""
    )
    return (
        f'<div class="modal-backdrop"><form class="modal" id="modal" data-view="{escape(modal.id)}" '
        f'novalidate><div class="modal-title">{title}</div><div class="modal-body">{"".join(body)}</div>'
        f'{problem}<div class="modal-footer"><button type="button" class="btn" data-modal="close">{close}'
        f"</button>{submit_button}</div></form></div>"
    )


def _input_html(block_id: str, block: Mapping[str, Any], modal: OpenModal) -> str:
    element = _element(block)
    kind = str(element.get("type", ""))
    shown = modal.typed.get(block_id) if block_id in modal.typed else _initial(element)
    field_id = escape(f"field-{block_id}")
    if kind == "static_select":
        control = _select_html(field_id, element, shown or "")
    elif kind in ("plain_text_input", "number_input"):
        control = _text_html(field_id, element, shown or "")
    else:
        control = f'<span class="control unknown">[a {escape(kind)} input the page does not draw]</span>'
    optional = ' <span class="optional">(optional)</span>' if block.get("optional") else ""
    label = escape(plain_label(block.get("label")))
    hint = block.get("hint")
    hint_html = f'<div class="field-hint">{escape(plain_label(hint))}</div>' if hint else ""
    error = modal.errors.get(block_id)
    error_html = f'<div class="field-error" role="alert">{escape(error)}</div>' if error else ""
    css = "block input has-error" if error else "block input"
    return (
        f'<div class="{css}" data-block="{escape(block_id)}" data-type="{escape(kind)}">'
        f'<label for="{field_id}">{label}{optional}</label>{control}{hint_html}{error_html}</div>'
    )


def _select_html(field_id: str, element: Mapping[str, Any], chosen: str) -> str:
    placeholder = escape(plain_label(element.get("placeholder")) or "Select an item")
    options = [f'<option value=""{"" if chosen else " selected"}>{placeholder}</option>']
    for option in _options(element):
        value = str(option.get("value", ""))
        selected = " selected" if value == chosen else ""
        options.append(
            f'<option value="{escape(value)}"{selected}>{escape(plain_label(option.get("text")))}</option>'
        )
    return f'<select id="{field_id}">{"".join(options)}</select>'


def _text_html(field_id: str, element: Mapping[str, Any], typed: str) -> str:
    placeholder = plain_label(element.get("placeholder"))
    attrs = f' id="{field_id}" placeholder="{escape(placeholder)}"'
    if isinstance(element.get("max_length"), int):
        attrs += f' maxlength="{element["max_length"]}"'
    if element.get("multiline"):
        return f'<textarea rows="4"{attrs}>{escape(typed)}</textarea>'
    kind = "number" if element.get("type") == "number_input" else "text"
    return f'<input type="{kind}"{attrs} value="{escape(typed)}">'


# -- submitted --------------------------------------------------------------------------------------


def submitted_values(view: Mapping[str, Any], typed: Typed) -> tuple[dict[str, Any], dict[str, str]]:
    """(`state.values` as Slack posts them, the errors Slack's client shows without submitting)."""
    inputs = input_blocks(view)
    known = {block_id for block_id, _ in inputs}
    strange = sorted(set(typed) - known)
    if strange:
        raise ModalInputError("values", f"{strange[0]!r} is not an input of this modal")
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for block_id, block in inputs:
        element = _element(block)
        raw = typed.get(block_id) or ""
        entry, problem = _value(element, raw)
        values[block_id] = {str(element.get("action_id", "")): entry}
        if problem is None and not block.get("optional") and not raw.strip():
            problem = REQUIRED
        if problem is not None:
            errors[block_id] = problem
    return values, errors


def _value(element: Mapping[str, Any], typed: str) -> tuple[dict[str, Any], str | None]:
    kind = str(element.get("type", ""))
    if kind == "static_select":
        chosen = next((o for o in _options(element) if str(o.get("value", "")) == typed), None)
        if typed and chosen is None:
            raise ModalInputError("values", f"{typed!r} is not an option of that menu")
        option = None if chosen is None else {"text": chosen.get("text"), "value": chosen.get("value")}
        return {"type": kind, "selected_option": option}, None
    entry: dict[str, Any] = {"type": kind, "value": typed or None}
    limit, least = element.get("max_length"), element.get("min_length")
    if isinstance(limit, int) and len(typed) > limit:
        return entry, f"Please use {limit} characters or fewer."
    if typed and isinstance(least, int) and len(typed) < least:
        return entry, f"Please use at least {least} characters."
    if kind == "number_input" and typed and not _is_number(typed, bool(element.get("is_decimal_allowed"))):
        return entry, "Please enter a number."
    return entry, None


def _is_number(text: str, decimal: bool) -> bool:
    try:
        float(text) if decimal else int(text)
    except ValueError:
        return False
    return True


def named_errors(view: Mapping[str, Any], errors: object) -> tuple[dict[str, str], str]:
    """A `response_action: errors` answer's errors by block ID, or the problem Slack shows instead (an
    error naming no input block of the view, or not a mapping of texts)."""
    known = {block_id for block_id, _ in input_blocks(view)}
    if not isinstance(errors, Mapping) or not errors:
        return {}, "the bot answered `errors` without any"
    strange: Sequence[str] = sorted(str(k) for k in errors if k not in known)
    if strange:
        return {}, f"the bot answered an error for {strange[0]!r}, which is not an input of this modal"
    return {str(k): str(v) for k, v in errors.items()}, ""
