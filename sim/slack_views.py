"""Modals in the fake Slack: `views.open` as strict as Slack's, and the `view_submission` a person sends.

Slack gives an interaction (a button press, a slash command) a `trigger_id` that opens one modal within
3 s: later it answers `expired_trigger_id`, a trigger it never gave `invalid_trigger_id`, one used already
`exchanged_trigger_id`. The fake issues trigger ids (`issue_trigger`, which a test or the demo page puts
in the press it sends) and refuses the same way; it checks the view as Slack does (a modal, a title of at
most 24 characters, at most 100 blocks, `private_metadata` at most 3 000 characters, a submit button when
there are inputs) and keeps each opened view, from which `submission` builds the payload Slack posts when
the person presses Submit, carrying the view as opened (its `private_metadata`, which a forger may change
in the payload) and the values typed. A trigger issued for a user (`issue_trigger(user=...)`, as the demo
page does for its person) makes the view opened with it that user's (`opened_by`): only they see it.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from sim.slack_answers import Answer, error_answer

TRIGGER_LIFETIME = 3.0
MAX_TITLE = 24
MAX_BLOCKS = 100
MAX_METADATA = 3000
MAX_CALLBACK_ID = 255
MAX_LABEL = 2000
INPUT_ELEMENTS = ("plain_text_input", "static_select", "number_input")
VIEW_METHODS = ("views.open",)


@dataclass
class Trigger:
    """A trigger id Slack gave with an interaction: when, and whether a view was opened with it."""

    issued_at: float
    used: bool = False
    user: str | None = None  # who pressed, when the issuer says (the demo page's person)


@dataclass
class Views:
    """The modals of the fake workspace: trigger ids issued, views opened."""

    clock: Callable[[], float]
    opened: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    owners: dict[str, str | None] = field(default_factory=dict)  # view ID -> its trigger's user
    _triggers: dict[str, Trigger] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def issue_trigger(self, user: str | None = None) -> str:
        """A new trigger id, valid for 3 s from now (as Slack stamps a button press by `user`)."""
        with self._lock:
            trigger = f"{next(self._ids)}.{int(self.clock() * 1000)}.a1b2c3d4e5f6"
            self._triggers[trigger] = Trigger(self.clock(), user=user)
        return trigger

    def opened_by(self, user: str) -> list[dict[str, Any]]:
        """The views opened with triggers issued for `user`, oldest first."""
        with self._lock:
            return [v for v in self.opened if self.owners.get(v["id"]) == user]

    def handler(self, method: str) -> Callable[[Any, dict[str, Any]], Answer] | None:
        """The hook for `FakeSlack`'s method table: views.open, else None."""
        return (lambda _workspace, params: self.open(params)) if method in VIEW_METHODS else None

    def open(self, params: Mapping[str, Any]) -> Answer:
        trigger = str(params.get("trigger_id") or params.get("interactivity_pointer") or "")
        refusal = self._trigger_refusal(trigger)
        view: dict[str, Any] = {}
        if refusal is None:
            view, refusal = _view(params.get("view"))
        if refusal is not None:
            self.refused.append(refusal)
            return error_answer(refusal)
        with self._lock:
            self._triggers[trigger].used = True
            shown = {**view, "id": f"V{next(self._ids):010d}", "state": {"values": {}}, "hash": "1.abc"}
            self.opened.append(shown)
            self.owners[shown["id"]] = self._triggers[trigger].user
        return {"ok": True, "view": shown}

    def _trigger_refusal(self, trigger_id: str) -> str | None:
        with self._lock:
            trigger = self._triggers.get(trigger_id)
            if trigger is None:
                return "invalid_trigger_id"
            if trigger.used:
                return "exchanged_trigger_id"
            if self.clock() - trigger.issued_at > TRIGGER_LIFETIME:
                return "expired_trigger_id"
        return None

    def submission(
        self,
        view_id: str,
        values: Mapping[str, Mapping[str, Any]],
        *,
        user: str,
        user_name: str,
        private_metadata: str | None = None,
    ) -> dict[str, Any]:
        """The `view_submission` payload of the opened view `view_id` with `values` typed, by block id and
        action id (`{"type": "plain_text_input", "value": ...}` as Slack sends them); `private_metadata`
        replaces the view's (a forged submission)."""
        view = next(v for v in self.opened if v["id"] == view_id)
        sent = dict(view, state={"values": {b: dict(v) for b, v in values.items()}})
        if private_metadata is not None:
            sent["private_metadata"] = private_metadata
        return {
            "type": "view_submission",
            "team": {"id": "T0TEAM001", "domain": "example"},
            "user": {"id": user, "username": user_name, "name": user_name, "team_id": "T0TEAM001"},
            "api_app_id": "A0APP0001",
            "token": "legacy-verification-token",
            "trigger_id": self.issue_trigger(),
            "view": sent,
            "response_urls": [],
        }


def form_body(payload: Mapping[str, Any]) -> str:
    """An interaction payload form-encoded as Slack posts it to the app's request URL."""
    return urlencode({"payload": json.dumps(payload)})


def text_value(value: str) -> dict[str, Any]:
    return {"type": "plain_text_input", "value": value}


def option_value(value: str) -> dict[str, Any]:
    return {
        "type": "static_select",
        "selected_option": {"text": {"type": "plain_text", "text": value}, "value": value},
    }


# -- the view, checked as Slack checks it --------------------------------------------------------------


def _view(raw: Any) -> tuple[dict[str, Any], str | None]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}, "invalid_arguments"
    if not isinstance(raw, dict):
        return {}, "invalid_arguments"
    return raw, view_problem(raw)


def view_problem(view: Mapping[str, Any]) -> str | None:
    """Slack's error for a view it refuses (`invalid_arguments`), None for one it shows."""
    blocks = view.get("blocks")
    problems = [
        view.get("type") != "modal",
        not _plain(view.get("title"), MAX_TITLE),
        not isinstance(blocks, list) or not blocks or len(blocks) > MAX_BLOCKS,
        len(str(view.get("private_metadata") or "")) > MAX_METADATA,
        len(str(view.get("callback_id") or "")) > MAX_CALLBACK_ID,
    ]
    if any(problems) or not isinstance(blocks, list):
        return "invalid_arguments"
    inputs = [b for b in blocks if isinstance(b, dict) and b.get("type") == "input"]
    if inputs and not _plain(view.get("submit"), MAX_TITLE):
        return "invalid_arguments"  # Slack: a view with inputs needs a submit button
    if any(not _input_ok(b) for b in inputs) or ("close" in view and not _plain(view["close"], MAX_TITLE)):
        return "invalid_arguments"
    ids = [b.get("block_id") for b in blocks if isinstance(b, dict) and b.get("block_id")]
    return "invalid_arguments" if len(ids) != len(set(ids)) else None


def _plain(text: Any, limit: int) -> bool:
    return (
        isinstance(text, dict)
        and text.get("type") == "plain_text"
        and isinstance(text.get("text"), str)
        and 0 < len(text["text"]) <= limit
    )


def _input_ok(block: Mapping[str, Any]) -> bool:
    element = block.get("element")
    return (
        _plain(block.get("label"), MAX_LABEL)
        and isinstance(element, dict)
        and element.get("type") in INPUT_ELEMENTS
        and bool(element.get("action_id"))
    )
