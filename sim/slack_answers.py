"""The shape of the fake Slack's answers, and how it reads a Web API argument, for every part of it."""

from __future__ import annotations

import json
from typing import Any

Answer = dict[str, Any]


def error_answer(code: str) -> Answer:
    """Slack's refusal: HTTP 200 with `ok: false` and the error code."""
    return {"ok": False, "error": code}


def json_param(value: Any) -> Any:
    """A JSON-valued argument (`blocks`, `files`) as sent: form fields carry it as a string; None when that
    string is not JSON, as Slack reads it (then refuses the call)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value
