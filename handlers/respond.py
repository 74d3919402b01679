"""Answers through a `response_url`, which Slack may refuse: each refusal is logged, never lost silently.

A `response_url` takes five answers within 30 minutes; after that Slack answers HTTP 404 `used_url` or
`expired_url`. bolt's `respond` returns that answer instead of raising, so it is checked here.
"""

from __future__ import annotations

import json
import logging

from slack_bolt.async_app import AsyncRespond

from bot.render.blocks import Message

log = logging.getLogger(__name__)


async def say(respond: AsyncRespond, message: Message, *, public: bool = False) -> bool:
    """Answer the person (ephemeral) or, `public`, the channel; False when the answer did not arrive."""
    kind = "in_channel" if public else "ephemeral"
    try:
        response = await respond(**message.as_kwargs(), response_type=kind, replace_original=False)
    except Exception as err:  # Slack unreachable: only the log is left
        log.error("could not answer through response_url: %s", type(err).__name__)
        return False
    status = int(getattr(response, "status_code", 200) or 0)
    if 200 <= status < 300:
        return True
    reason = refusal_code(str(getattr(response, "body", "") or ""))
    log.error(
        "Slack refused an answer through response_url (HTTP %d %s); the person did not get: %.200r",
        status,
        reason,
        message.text,
    )
    return False


def refusal_code(body: str) -> str:
    """Slack's error code in a refusal body (`{"ok": false, "error": "used_url"}` or the bare code)."""
    try:
        decoded = json.loads(body)
    except ValueError:
        return body.strip()[:80] or "no reason given"
    if isinstance(decoded, dict) and isinstance(decoded.get("error"), str):
        return str(decoded["error"])
    return body.strip()[:80]
