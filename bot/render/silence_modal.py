"""The *Silence…* modal: what it silences (the matchers), a duration and a required comment; and the
words of its answers (field errors shown in the modal, the thread line once the silence is made)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from bot.domain.silences import Silence
from bot.render.acknowledge import mention
from bot.render.blocks import Message, clean, code, esc, fmt_span, one_line, text_message, truncate
from bot.render.silence_line import until_words

CALLBACK_ID = "proxy_silence_modal"
DURATION_BLOCK, CUSTOM_BLOCK, COMMENT_BLOCK = "silence_duration", "silence_custom", "silence_comment"
VALUE = "value"
PRESETS = ("30m", "1h", "4h", "1d")
CUSTOM = "custom"
DEFAULT = "1h"
MAX_COMMENT = 500
MAX_SHOWN_MATCHERS = 20


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": truncate(one_line(text), 150), "emoji": True}


def _option(value: str, label: str) -> dict[str, Any]:
    return {"text": _plain(label), "value": value}


def silence_modal(subject: str, matchers: Sequence[str], metadata: str, longest: float) -> dict[str, Any]:
    """The modal's view; `matchers` as `name="value"` lines, `longest` the longest span allowed (s)."""
    shown = [code(m) for m in matchers[:MAX_SHOWN_MATCHERS]]
    if len(matchers) > MAX_SHOWN_MATCHERS:
        shown.append(f"… +{len(matchers) - MAX_SHOWN_MATCHERS} more")
    what = f"Silence {esc(subject)} in Alertmanager: alerts matching\n" + "\n".join(shown)
    options = [_option(p, p) for p in PRESETS] + [_option(CUSTOM, "Custom…")]
    return {
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "title": _plain("Silence alert"),
        "submit": _plain("Silence"),
        "close": _plain("Cancel"),
        "private_metadata": metadata,
        "blocks": [
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": truncate(clean(what), 3000), "verbatim": True},
            },
            {
                "type": "input",
                "block_id": DURATION_BLOCK,
                "label": _plain("For"),
                "element": {
                    "type": "static_select",
                    "action_id": VALUE,
                    "options": options,
                    "initial_option": _option(DEFAULT, DEFAULT),
                },
            },
            {
                "type": "input",
                "block_id": CUSTOM_BLOCK,
                "optional": True,
                "label": _plain(f"Custom duration (at most {fmt_span(longest)})"),
                "element": {
                    "type": "plain_text_input",
                    "action_id": VALUE,
                    "placeholder": _plain("e.g. 2h30m"),
                },
            },
            {
                "type": "input",
                "block_id": COMMENT_BLOCK,
                "label": _plain("Why (shown on the alert and in Alertmanager)"),
                "element": {
                    "type": "plain_text_input",
                    "action_id": VALUE,
                    "multiline": True,
                    "max_length": MAX_COMMENT,
                },
            },
        ],
    }


def typed(values: Mapping[str, Any], block: str) -> str:
    """What the person chose or typed in one of the modal's inputs ("" when nothing)."""
    entry = (values.get(block) or {}).get(VALUE) or {}
    if not isinstance(entry, dict):
        return ""
    chosen = entry.get("selected_option")
    found = chosen.get("value") if isinstance(chosen, dict) else entry.get("value")
    return str(found or "").strip()


def silenced_reply(user: str, ends_at: datetime, span: float, comment: str, made: Sequence[str]) -> Message:
    """The thread line once the modal's silences are made (their ids and matchers in `made`)."""
    until = until_words(ends_at, ends_at - timedelta(seconds=span))  # dated when it ends another day
    text = (
        f"🔕 {mention(user)} silenced this alert until {until} ({fmt_span(span)}): {esc(comment)}"
        f" · {'; '.join(made)}"
    )
    return text_message(text)


def open_failed(error_code: str) -> str:
    """The sentence for the person when the modal could not be opened."""
    if error_code == "expired_trigger_id":
        return "The silence form could not open in time (Slack allows 3 s): press *Silence…* again."
    return (
        f"The silence form could not be opened (Slack answered {code(error_code)}): press *Silence…* again."
    )


def broader_left(silences: Iterable[Silence]) -> str:
    """What *Expire silence* says of the broader silences covering the alert that it left alone."""
    named = "; ".join(
        f"{code(s.id)} ({', '.join(code(m) for m in s.matchers)}, by {esc(s.created_by)})"
        for s in sorted(silences, key=lambda s: s.id)
    )
    return (
        f"Left alone, broader than this alert (it silences other alerts too): {named}. "
        "Expire it in Alertmanager if that is meant."
    )
