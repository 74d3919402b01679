"""A message Slack refused, made smaller: within every limit, at half the text budget, then as text only."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.render.blocks import Button, Message, actions, section
from bot.render.refit import smaller, text_only
from sim.slack_blocks import check_message
from tests.fakes.slack_limits import limit_problems
from tests.fakes.slack_limits import text_units as _u


def _text(kind: str, text: str) -> dict[str, Any]:
    return {"type": kind, "text": text}


def oversized() -> Message:
    """What a renderer bug (or a Slack tighter than its docs) could produce: every limit broken."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": _text("plain_text", "H" * 400)},
        {"type": "section", "text": _text("mrkdwn", "s" * 5000)},
        {"type": "section", "fields": [_text("mrkdwn", "f" * 2500) for _ in range(14)]},
        {"type": "context", "elements": [_text("mrkdwn", "c" * 2500) for _ in range(12)]},
        *({"type": "section", "text": _text("mrkdwn", f"line {i}")} for i in range(60)),
        actions([Button("Probe now", "probe", "v1"), Button("Silence 1h", "silence", "v2")]),
    ]
    return Message("fallback " + "t" * 50_000, tuple(blocks))


def test_smaller_is_within_every_limit_and_half_the_budget() -> None:
    refused = oversized()
    assert check_message(refused.text, list(refused.blocks)) is not None
    fitted = smaller(refused)
    assert check_message(fitted.text, list(fitted.blocks)) is None
    assert limit_problems(fitted.as_kwargs()) == []
    shown = sum(_u(t) for b in fitted.blocks for t in _texts_of(b))
    assert shown + _u(fitted.text) <= 5_000


def test_smaller_keeps_the_buttons_and_says_what_was_cut() -> None:
    fitted = smaller(oversized())
    assert fitted.blocks[-1]["type"] == "actions"
    assert [e["action_id"] for e in fitted.blocks[-1]["elements"]] == ["probe", "silence"]
    assert fitted.blocks[0]["text"]["text"].startswith("HHH")
    assert any("truncated" in t for b in fitted.blocks for t in _texts_of(b))


def test_smaller_keeps_a_text_objects_type() -> None:
    refused = Message("x", ({"type": "section", "text": _text("plain_text", "p" * 4000)},))
    [block] = smaller(refused).blocks
    assert block["text"]["type"] == "plain_text"
    assert _u(block["text"]["text"]) <= 3000


def test_a_message_within_limits_keeps_its_content() -> None:
    refused = Message("firing", (section("*Peers*: 0 healthy"),))
    fitted = smaller(refused)
    assert fitted.text == "firing"
    assert fitted.blocks[0]["text"]["text"] == "*Peers*: 0 healthy"


def test_text_only_has_no_blocks_and_says_what_the_blocks_said() -> None:
    refused = Message("ResourceProxyNoHealthyPeers firing", (section("*Peers*: 0 healthy"),))
    fitted = text_only(refused)
    assert fitted.blocks == ()
    assert fitted.text.splitlines() == ["ResourceProxyNoHealthyPeers firing", "*Peers*: 0 healthy"]
    assert check_message(fitted.text, []) is None


def test_text_only_of_an_oversized_message_fits_a_section() -> None:
    fitted = text_only(oversized())
    assert 0 < _u(fitted.text) <= 3000
    assert "Probe now" not in fitted.text  # buttons do nothing as text


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(["header", "section", "fields", "context"]).flatmap(
            lambda kind: st.tuples(st.just(kind), st.integers(0, 6000), st.integers(0, 14))
        ),
        max_size=70,
    )
)
def test_whatever_was_refused_comes_back_acceptable(specs: list[tuple[str, int, int]]) -> None:
    blocks = [_block(kind, size, count) for kind, size, count in specs]
    fitted = smaller(Message("alert", tuple(blocks)))
    assert check_message(fitted.text, list(fitted.blocks)) is None


def _block(kind: str, size: int, count: int) -> dict[str, Any]:
    if kind == "header":
        return {"type": "header", "text": _text("plain_text", "h" * max(1, size))}
    if kind == "fields":
        return {"type": "section", "fields": [_text("mrkdwn", "f" * max(1, size)) for _ in range(count + 1)]}
    if kind == "context":
        return {
            "type": "context",
            "elements": [_text("mrkdwn", "c" * max(1, size)) for _ in range(count + 1)],
        }
    return {"type": "section", "text": _text("mrkdwn", "s" * max(1, size))}


def _texts_of(block: dict[str, Any]) -> list[str]:
    found = [block["text"]["text"]] if isinstance(block.get("text"), dict) else []
    items = [*(block.get("fields") or []), *(block.get("elements") or [])]
    return found + [i["text"] if isinstance(i.get("text"), str) else i["text"]["text"] for i in items]
