"""The text kept beside the README's pictures (`docs/img/*.txt`) reads as the page draws the message: what it
lays apart stays apart."""

from __future__ import annotations

from sim.slack_page_view import ChannelSnapshot, message_html
from sim.slack_workspace import Message
from tests.e2e import screenshots

shots = screenshots.load()

CONTEXT = {
    "type": "context",
    "elements": [
        {"type": "mrkdwn", "text": "Live state read 09:40:05 UTC (just now)"},
        {"type": "image", "image_url": "https://example.com/i.png", "alt_text": "i"},
        {"type": "mrkdwn", "text": "updated *09:40:05 UTC*"},
        {"type": "plain_text", "text": "3 targets"},
    ],
}
BUTTONS = {
    "type": "actions",
    "elements": [
        {"type": "button", "action_id": "a", "text": {"type": "plain_text", "text": "Probe now"}},
        {"type": "button", "action_id": "b", "text": {"type": "plain_text", "text": "Path check"}},
    ],
}


def _page_lines(message: Message, reply: Message) -> list[str]:
    snap = ChannelSnapshot([message], {message.ts: [reply]}, [], fixed_time=True)
    return list(shots.html_text(message_html(message, snap)))


def test_a_context_blocks_elements_read_apart_as_slack_shows_them() -> None:
    """The alert's picture text read "(just now)updated 09:40:05 UTC": two context elements run together."""
    edited = [{"text": "before"}]
    message = Message("C1", "1.000001", "x", [CONTEXT, BUTTONS], None, versions=edited)
    reply = Message("C1", "1.000002", "a reply", [], "1.000001")
    lines = _page_lines(message, reply)
    assert "Live state read 09:40:05 UTC (just now) updated 09:40:05 UTC 3 targets" in lines
    assert "Probe now Path check" in lines
    # The thread's count is a line of its own, under the edited mark (story.py splits at the name line).
    assert lines[-5:] == ["(edited)", "1 reply", "pb", "proxybotAPP09:41", "a reply"]


def test_words_within_one_element_are_not_pulled_apart() -> None:
    html = '<div class="block context"><span>a<b>b</b><code>c</code></span><img src="x"/><span>d</span></div>'
    assert shots.html_text(html) == ["abc d"]
