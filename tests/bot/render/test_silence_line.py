"""The silence laid over a message as it is sent: the 🔕 line and *Expire silence*, undone when gone."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.render.blocks import Button, Message, actions, context, section
from bot.render.silence_line import SILENCE_BLOCK_ID, ShownSilence, shown_silenced
from bot.render.slack import ACTION_EXPIRE_SILENCE, ACTION_PROBE, ACTION_SILENCE, ACTIONS_BLOCK_ID

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def firing() -> Message:
    buttons = [Button("Probe now", ACTION_PROBE, "v"), Button("Silence…", ACTION_SILENCE, "v")]
    return Message("FIRING", (section("body"), context(["live"]), actions(buttons, ACTIONS_BLOCK_ID)))


def labels(message: Message) -> list[tuple[str, str]]:
    [block] = [b for b in message.blocks if b.get("block_id") == ACTIONS_BLOCK_ID]
    return [(e["action_id"], e["text"]["text"]) for e in block["elements"]]


def test_a_silence_made_by_proxybot_names_its_maker_and_turns_the_button() -> None:
    made = ShownSilence(
        "alice (Slack U0ALICE01)", datetime(2026, 12, 1, 14, 0, tzinfo=UTC), "upgrade <!here>", made_here=True
    )
    shown = shown_silenced(firing(), made, NOW)
    [line] = [b for b in shown.blocks if b.get("block_id") == SILENCE_BLOCK_ID]
    assert line["elements"][0]["text"] == "🔕 Silenced by <@U0ALICE01> until 14:00 UTC: upgrade &lt;!here&gt;"
    assert labels(shown) == [(ACTION_PROBE, "Probe now"), (ACTION_EXPIRE_SILENCE, "Expire silence")]
    assert shown_silenced(shown, made, NOW) == shown
    assert shown_silenced(shown, None, NOW) == firing()


def test_a_silence_made_elsewhere_names_its_maker_as_text_and_a_later_day_in_full() -> None:
    amtool = ShownSilence("ops@example.com", datetime(2026, 12, 3, 9, 0, tzinfo=UTC), "maintenance")
    [line] = [
        b for b in shown_silenced(firing(), amtool, NOW).blocks if b.get("block_id") == SILENCE_BLOCK_ID
    ]
    text = line["elements"][0]["text"]
    assert text == (
        "🔕 Silenced by ops@\u2060example.com until 2026-12-03 09:00 UTC (made outside proxybot): maintenance"
    )
