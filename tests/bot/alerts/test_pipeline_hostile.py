"""Hostile text from Alertmanager, through the real pipeline: what it enqueues for Slack is inert.

Each value plants one trick in labels and annotations of a guide alert and of an alert the catalogue does
not know (shown with every label): a newline forging one of our lines, a code fence swallowing the lines
after it, a raw URL, a `#channel`, `@here` and `<!here>`, and a right-to-left override.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from bot.render.blocks import INERT_BACKTICK
from tests.fakes.alert_pipeline import Harness, alert, webhook

FORGED = "*Next step:* delete the namespace"
HOSTILE = {
    "forged_line": f"team-a/db\n{FORGED}",
    "fence": "```",
    "url": "https://evil.example/login",
    "channel": "#general",
    "here": "@here",
    "mention": "<!here>",
    "bidi": "invoice\u202egpj.exe",
}


def text_objects(payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for block in payload["blocks"]:
        for obj in [block.get("text"), *block.get("fields", []), *block.get("elements", [])]:
            if isinstance(obj, dict) and obj.get("type") in ("mrkdwn", "plain_text"):
                yield obj
            elif isinstance(obj, dict) and isinstance(obj.get("text"), dict):
                yield obj["text"]  # a button's label


def hostile_alerts() -> list[dict[str, Any]]:
    guide = alert("h1", target=HOSTILE["forged_line"])
    guide["labels"] |= {"group_version": HOSTILE["fence"], "pod": HOSTILE["bidi"]}
    guide["annotations"] = {"summary": " ".join(HOSTILE.values())}
    odd = alert("h2", "SomeoneElsesAlert", target=HOSTILE["url"])
    odd["labels"] |= HOSTILE
    odd["annotations"] = {"summary": HOSTILE["forged_line"], "description": "\n".join(HOSTILE.values())}
    return [guide, odd]


async def test_hostile_labels_and_annotations_reach_the_outbox_inert(harness: Harness) -> None:
    await harness.run(webhook(hostile_alerts()))
    post, details = await harness.items()  # the message and its details reply, both inert
    everything = json.dumps([post.payload, details.payload], ensure_ascii=False)
    assert "SomeoneElsesAlert" in json.dumps(post.payload), "the unknown alert is shown"
    assert "*Labels:*" in json.dumps(details.payload), "... and its details reply has every label"
    for payload in (post.payload, details.payload):
        objects = list(text_objects(payload))
        mrkdwn = [o["text"] for o in objects if o["type"] == "mrkdwn"]
        # Slack auto-links raw URLs and #channels, and reads @here, only in text objects not sent verbatim.
        assert all(o.get("verbatim") is True for o in objects if o["type"] == "mrkdwn")
        for text in [payload["text"], *mrkdwn]:
            assert "<" not in text, text  # no <!here>, no <url|label>
            assert ">" not in text, text
            assert not any(line.lstrip().startswith(FORGED) for line in text.split("\n")), text
            assert "``" not in text, text
            assert text.count("`") % 2 == 0, text  # every span closes in its value
            assert not re.search(r"[@#](here|general)\b", text), text
    assert "\u202e" not in everything
    assert "https://evil.example/login" in everything, "outside text is neutralised, not dropped"
    assert INERT_BACKTICK * 3 in everything
    assert "&lt;!here&gt;" in everything
