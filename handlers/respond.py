"""Answers through a `response_url`, which Slack may refuse: each refusal is logged, never lost silently.

A `response_url` takes five answers within 30 minutes; after that Slack answers HTTP 404 `used_url` or
`expired_url`. bolt's `respond` returns that answer instead of raising, so it is checked here.

`answering` is the one ladder of `/proxy` and the buttons: every way their work can end (refused, bad
input, a failure proxybot names, a bug) is answered to the person who asked, as a sentence.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from slack_bolt.async_app import AsyncRespond

from bot.errors import InputError, ProxybotError, Refused
from bot.render.blocks import Message, esc, text_message

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


@dataclass
class Asked:
    """One request as its answers and logs name it; `name` may be sharpened once the request is parsed."""

    name: str  # what failed, as the answer says it: "`/proxy status`", "The silence"
    logged: str  # who asked what from where, for the log: "silence by U123 in C456"
    unusable: str  # the answer to refused input, `{}` standing for the reason
    log: logging.Logger  # the handler's own logger
    rejected_level: int = logging.INFO


async def answering(respond: AsyncRespond, asked: Asked, work: Callable[[], Awaitable[None]]) -> None:
    """Run `work`; every way it can end is answered to the person who asked, and logged."""
    try:
        await work()
    except Refused as refusal:
        asked.log.info("refused %s: %s", asked.logged, refusal)
        await say(respond, text_message(str(refusal)))
    except InputError as err:
        asked.log.log(asked.rejected_level, "rejected %s: %s", asked.logged, err)
        await say(respond, text_message(asked.unusable.format(esc(err))))
    except ProxybotError as err:
        asked.log.error("%s failed: %s", asked.logged, err)
        await say(respond, text_message(f"{asked.name} failed: {esc(err)}"))
    except Exception:
        asked.log.exception("%s failed unexpectedly", asked.logged)
        await say(respond, text_message(f"{asked.name} failed on proxybot's side; the error is in its log."))
