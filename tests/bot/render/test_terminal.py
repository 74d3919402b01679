"""The terminal renderer: a Block Kit message printed as Slack shows it, colour only where it belongs."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta

from bot.domain.alerts_catalog import NO_HEALTHY_PEERS
from bot.domain.diagnosis import diagnose
from bot.domain.messages import FindingsReport, GroupChange, GroupStatus, LiveRead
from bot.render.alert_details import details_reply
from bot.render.alert_message import alert_group_message
from bot.render.blocks import Button, actions, context, esc, fields, header, message, section
from bot.render.layout import mrkdwn_to_text, visible_len, wrap
from bot.render.slack import change_reply, findings_message
from bot.render.terminal import THREAD_INDENT, Style, colour_enabled, show, show_message
from tests.fakes.alert_views import HOSTILE, alert, group, snapshot

NOW = datetime(2024, 5, 1, 10, 14, tzinfo=UTC)
ANSI = re.compile(r"\x1b\[")


class Tty(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def sample() -> list[dict[str, object]]:
    return [
        header("🔴 FIRING: ResourceProxyNoHealthyPeers"),
        section("*Now:* still broken"),
        fields(["*left one*", "*right one*", "third"]),
        context(["live state read 10:13 UTC", "updated 10:14 UTC"]),
        actions([Button("Probe now", "proxy_probe", "v"), Button("Path check", "proxy_path", "v")]),
    ]


def test_colour_only_on_a_terminal_without_no_color() -> None:
    assert colour_enabled(Tty(), {})
    assert colour_enabled(Tty(), {"NO_COLOR": ""})  # no-color.org: an empty value does not count
    assert not colour_enabled(Tty(), {"NO_COLOR": "1"})
    assert not colour_enabled(io.StringIO(), {})


def test_shows_header_sections_fields_context_and_buttons() -> None:
    out = show_message("fallback", sample()).split("\n")
    assert out[0] == "🔴 FIRING: ResourceProxyNoHealthyPeers"
    assert set(out[1]) == {"═"}
    assert "Now: still broken" in out
    [row] = [line for line in out if "left one" in line]
    assert re.fullmatch(r"left one +right one", row)  # two fields per row
    assert "third" in out
    assert "live state read 10:13 UTC · updated 10:14 UTC" in out
    assert out[-1] == "[Probe now] [Path check]"
    assert "fallback" not in out  # blocks win over the fallback text, as in Slack


def test_a_table_block_shows_a_line_per_row() -> None:
    bold = {"type": "text", "text": "TARGET", "style": {"bold": True}}
    header_cell = {"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [bold]}]}
    rows = [[header_cell, {"type": "raw_text", "text": "STATE"}]]
    rows += [
        [{"type": "raw_text", "text": f"platform/shard-0{i}"}, {"type": "raw_text", "text": "down"}]
        for i in range(2)
    ]
    out = show_message("table", [{"type": "table", "rows": rows}])
    assert out.splitlines() == ["TARGET │ STATE", "platform/shard-00 │ down", "platform/shard-01 │ down"]


def test_text_only_message_shows_its_text() -> None:
    assert show_message("*3 new* alerts") == "3 new alerts"


def test_edits_are_marked_and_thread_replies_indented() -> None:
    edited = show_message("x", sample(), edited=True, heading="#alerts 10:14").split("\n")
    assert edited[0] == "#alerts 10:14 (edited)"
    assert "(edited)" not in show_message("x", sample(), heading="#alerts 10:14")
    reply = show_message("a reply that is long " * 20, thread_reply=True, width=60).split("\n")
    assert len(reply) > 1
    assert all(line.startswith(THREAD_INDENT) for line in reply)
    assert all(visible_len(line) <= 60 for line in reply)


def test_no_ansi_without_colour_and_some_with_it() -> None:
    assert not ANSI.search(show_message("x", sample(), edited=True, style=Style(colour=False)))
    coloured = show_message("x", sample(), edited=True, style=Style(colour=True))
    assert "\x1b[1;31m🔴 FIRING" in coloured
    assert "\x1b[33m(edited)\x1b[0m" in coloured


def test_escaped_hostile_text_shows_literally_and_real_markup_is_spelled_out() -> None:
    plain = Style()
    assert mrkdwn_to_text(esc(HOSTILE[0]), plain) == "<!channel>"
    assert mrkdwn_to_text(esc("a & b"), plain) == "a & b"
    assert mrkdwn_to_text("<!channel> ping", plain) == "@channel ping"
    assert mrkdwn_to_text("see <https://example.com|docs>", plain) == "see docs (https://example.com)"
    assert mrkdwn_to_text("*bold* _it_ `code`", plain) == "bold it code"
    assert mrkdwn_to_text("*run `a_b_c` on `*x*`*", plain) == "run a_b_c on *x*"  # code is not markup
    assert mrkdwn_to_text("```a: 1\nb: &lt;x&gt;```", plain) == "a: 1\nb: <x>"
    assert mrkdwn_to_text("`&lt;project&gt;/&lt;name&gt;`", plain) == "<project>/<name>"
    assert mrkdwn_to_text("\ue0000\ue001 `x`", plain) == "\ufffd0\ufffd x"  # text cannot name a held span
    assert mrkdwn_to_text("*bold*", Style(colour=True)) == "\x1b[1mbold\x1b[0m"


def test_wrap_breaks_at_spaces_within_width() -> None:
    lines = wrap("word " * 50, 23)
    assert all(len(line) <= 23 for line in lines)
    assert " ".join(lines).split() == ["word"] * 50


def test_alert_group_text_says_the_same_as_slack() -> None:
    view = group(alert(snap=snapshot()))
    text = show(alert_group_message(view, NOW))
    assert text.startswith(f"🔴 FIRING: {NO_HEALTHY_PEERS} · shop/orders")
    assert "Now: still broken · healthy 0, quarantined 2, half_open 0 on orders.example.com/v1" in text
    assert text.endswith("[Probe now] [Path check] [Acknowledge] [Silence…]")


def test_alert_details_text_is_the_thread_reply() -> None:
    view = group(alert(snap=snapshot()))
    text = show(details_reply(view, NOW), thread_reply=True)
    assert text.startswith(f"{THREAD_INDENT}Details: 🔴 FIRING: {NO_HEALTHY_PEERS}")
    assert "Now: still broken: still no healthy peer" in text


# What of Slack's mrkdwn a terminal would show as marks: code, bold and italic, a link, an entity.
MRKDWN_MARKS = re.compile(
    r"`|(?<![\w*])\*\S[^*\n]*\*(?![\w*])|(?<![\w_])_\S[^_\n]*_(?![\w_])|<[^<>\s]+\|[^<>]*>|&(?:lt|gt|amp);"
)


def test_real_messages_show_as_plain_text_in_the_terminal() -> None:
    view = group(alert(snap=snapshot()))
    report = FindingsReport(
        "status shop/orders", tuple(diagnose(snapshot())), LiveRead.read(NOW - timedelta(minutes=1))
    )
    change = GroupChange("k", NOW, resolved=(alert(),))
    messages = [
        alert_group_message(view, NOW),
        details_reply(view, NOW),
        findings_message(report, NOW),
        change_reply(change, NOW),
    ]
    for msg in messages:
        text = show(msg)
        assert MRKDWN_MARKS.findall(text) == [], text
    # Slack still gets its mrkdwn; the terminal its words.
    assert "`shop/orders`" in str(messages[3].blocks)
    assert show(messages[3]) == f"✅ Resolved: {NO_HEALTHY_PEERS} on shop/orders (orders.example.com/v1)"


def test_link_buttons_are_marked() -> None:
    msg = message("f", [actions([Button("Probe now", "p", "v"), Button("Graph", "g", url="http://p/g")])])
    assert show(msg) == "[Probe now] [Graph ↗]"


def test_resolved_and_change_text() -> None:
    done = group(alert(status=GroupStatus.RESOLVED), status=GroupStatus.RESOLVED)
    assert "Resolved after 12 min" in show(alert_group_message(done, NOW))
    change = GroupChange("k", NOW, resolved=(alert(),))
    assert (
        show(change_reply(change, NOW))
        == f"✅ Resolved: {NO_HEALTHY_PEERS} on shop/orders (orders.example.com/v1)"
    )


def test_findings_text_for_the_cli() -> None:
    report = FindingsReport(
        "status shop/orders", tuple(diagnose(snapshot())), LiveRead.read(NOW - timedelta(minutes=1))
    )
    text = show(findings_message(report, NOW))
    assert text.split("\n")[0] == "🔴 status shop/orders"
    assert "Live state read 10:13:00 UTC (1 min ago)" in text


def test_truncation_marker_is_visible_in_the_terminal() -> None:
    msg = message("f", [section("x" * 5000)])
    shown = show(msg, width=80).split("\n")
    assert all(len(line) <= 80 for line in shown)
    assert "… (truncated, 2030 more chars)" in " ".join(shown)


def test_a_channel_name_copied_from_the_terminal_is_the_name() -> None:
    # esc() breaks `#name` with a word joiner so that Slack reads no channel; the terminal shows the name.
    shown = show(message("to #alerts", [section(f"alerts to {esc('#proxybot-sim')}")]))
    assert "alerts to #proxybot-sim" in shown
    assert "\u2060" not in shown
