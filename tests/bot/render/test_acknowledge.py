"""The acknowledgement laid over a message as it is sent: the line, the button turned, idempotent."""

from __future__ import annotations

from bot.domain.acknowledgement import Acknowledgement
from bot.render.acknowledge import ACK_BLOCK_ID, ack_button, shown_with
from bot.render.blocks import Button, Message, actions, context, esc, header, section
from bot.render.slack import ACTION_PROBE, ACTION_UNACK, ACTIONS_BLOCK_ID

FIRED = 1_764_580_800.0  # 09:20 UTC
ACK = Acknowledgement("#alerts", "g", FIRED, "U0ALICE01", "alice", FIRED + 125)


def firing(*buttons: Button) -> Message:
    return Message(
        "FIRING: x",
        (header("FIRING: x"), section("body"), context(["live"]), actions(buttons, ACTIONS_BLOCK_ID)),
    )


def ids(message: Message) -> list[str]:
    return [str(b.get("block_id") or b["type"]) for b in message.blocks]


def buttons(message: Message) -> list[tuple[str, str]]:
    [block] = [b for b in message.blocks if b.get("block_id") == ACTIONS_BLOCK_ID]
    return [(e["action_id"], e["text"]["text"]) for e in block["elements"]]


def test_the_line_goes_above_the_tail_and_the_button_turns_over() -> None:
    shown = shown_with(firing(Button("Probe now", ACTION_PROBE, "v"), ack_button("v")), ACK)
    assert ids(shown) == ["header", "section", ACK_BLOCK_ID, "context", ACTIONS_BLOCK_ID]
    line = shown.blocks[2]["elements"][0]["text"]
    assert line == "👀 Acknowledged by <@U0ALICE01> at 09:22 UTC (2 min after it fired)"
    assert buttons(shown) == [(ACTION_PROBE, "Probe now"), (ACTION_UNACK, "Unacknowledge")]


def test_laying_it_over_again_or_taking_it_off_is_exact() -> None:
    plain = firing(ack_button("v"))
    once = shown_with(plain, ACK)
    assert shown_with(once, ACK) == once
    assert shown_with(once, None) == plain
    assert shown_with(plain, None) == plain


def test_a_message_without_the_button_keeps_its_buttons() -> None:
    resolved = firing(Button("Probe now", ACTION_PROBE, "v"))
    shown = shown_with(resolved, ACK)
    assert buttons(shown) == [(ACTION_PROBE, "Probe now")]
    assert ACK_BLOCK_ID in ids(shown)


def test_a_name_that_is_no_user_id_is_shown_inert() -> None:
    odd = Acknowledgement("#alerts", "g", FIRED, "<!channel>", "x", FIRED + 5)
    line = shown_with(firing(ack_button("v")), odd).blocks[2]["elements"][0]["text"]
    assert esc("<!channel>") in line
    assert "<!channel>" not in line
