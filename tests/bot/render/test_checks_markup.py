"""The words proxybot writes itself into the checks' answers and help: no raw `<` or `>` reaches Slack.

In mrkdwn a raw `<` opens a link or mention (`<project>` is read as one), and `>` must be `&gt;`; Slack
documents `&lt;` `&gt;` `&amp;` as the only escapes.
"""

from __future__ import annotations

from bot.checks.netpol import netpol
from bot.checks.probe import probe_request
from bot.domain.netpol_result import CrossCluster, Endpoint
from bot.domain.probe_result import LatencySummary, ProbeOutcome, ProbeResult
from bot.render.blocks import Message
from bot.render.checks_netpol import netpol_message
from bot.render.checks_probe import probe_message
from bot.render.help import HELP, help_message
from bot.render.layout import Style, mrkdwn_to_text
from tests.fakes.probe_settings import SETTINGS, TARGET


def mrkdwn_texts(msg: Message) -> list[str]:
    found = [msg.text]
    for block in msg.blocks:
        for obj in [block.get("text"), *block.get("fields", []), *block.get("elements", [])]:
            if isinstance(obj, dict) and obj.get("type") == "mrkdwn":
                found.append(obj["text"])
    return found


def probe_result() -> ProbeResult:
    request = probe_request(SETTINGS, TARGET)
    latency = LatencySummary(3, 0.01, 0.02, 0.03)
    return ProbeResult(
        request, (), ProbeOutcome.OK, "3 of 3 answered 200", ("3 answers 200",), "nothing", latency
    )


def test_no_raw_angle_bracket_in_what_proxybot_writes() -> None:
    messages = [
        probe_message(probe_result()),
        netpol_message(netpol(Endpoint("ns-a", "a"), Endpoint("ns-b", "b"))),
        netpol_message(netpol(Endpoint("ns-a", "a"), Endpoint("ns-b", "b"), CrossCluster(("10.0.0.0/8",)))),
        help_message(set(HELP), channel="`#ops`"),
        help_message(set(), channel="`#ops`"),
    ]
    for msg in messages:
        for text in mrkdwn_texts(msg):
            assert "<" not in text, text
            assert ">" not in text, text


def test_the_escaped_words_still_read_as_written() -> None:
    guide = probe_message(probe_result()).blocks[-1]["elements"][0]["text"]
    assert mrkdwn_to_text(guide, Style()) == "Guide: Monitor the proxy > Synthetic probe"
    notes = help_message(set(HELP), channel="`#ops`").blocks[-1]["elements"]
    assert "a configured target, <project>/<name>." in mrkdwn_to_text(notes[1]["text"], Style())


def test_a_latency_under_a_millisecond_is_said_so_not_zero() -> None:
    from bot.render.checks_probe import _latency_line

    assert _latency_line(LatencySummary(1, 0.0, 0.0, 0.0)) == "*Latency:* under 1 ms"
    assert _latency_line(LatencySummary(1, 0.012, 0.012, 0.012)) == "*Latency:* 12 ms"
