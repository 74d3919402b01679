"""Block Kit building: Slack's limits hold by construction, untrusted text is made inert."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.render.blocks import (
    INERT_BACKTICK,
    WORD_JOINER,
    Button,
    actions,
    aged,
    code,
    code_block,
    context,
    esc,
    fields,
    fmt_ago,
    fmt_since,
    fmt_span,
    header,
    lines_within,
    message,
    section,
    truncate,
    units,
)
from tests.fakes.slack_limits import limit_problems
from tests.fakes.slack_limits import text_units as _u

_BARE_AMP = re.compile(r"&(?!amp;|lt;|gt;)")


# -- escaping --------------------------------------------------------------------------------------


def test_esc_neutralises_mentions_links_and_ampersands() -> None:
    assert esc("<!channel> & <https://evil|x>") == "&lt;!channel&gt; &amp; &lt;https://evil|x&gt;"
    assert esc("a\x00b\x1bc\x85d\x9fe") == "abc de"
    assert esc("lone \ud800") == "lone \ufffd"


def test_esc_keeps_outside_text_on_one_line() -> None:
    assert esc("x\n*Next step:* run this\r\n\u2028y\tz") == "x *Next step:* run this y z"


def test_esc_breaks_bare_mentions_and_channel_names() -> None:
    assert esc("@here @channel #general mail@example.com") == (
        f"@{WORD_JOINER}here @{WORD_JOINER}channel #{WORD_JOINER}general mail@{WORD_JOINER}example.com"
    )
    assert esc("# heading, @ alone") == "# heading, @ alone"


def test_esc_drops_bidi_controls() -> None:
    assert esc("invoice\u202egpj.exe \u2066x\u2069 \u200fy") == "invoicegpj.exe x y"


def test_esc_lets_no_backtick_open_a_span_or_fence_past_the_value() -> None:
    tick = INERT_BACKTICK
    assert esc("only the `get` verb") == "only the `get` verb"
    assert esc("```swallow") == f"{tick * 3}swallow"
    assert esc("a `b` c `d") == f"a `b` c {tick}d"
    assert esc("``x``") == f"{tick * 2}x{tick * 2}"


def test_code_cannot_be_broken_out_of() -> None:
    assert code("a`<b>`\nc") == f"`a{INERT_BACKTICK}&lt;b&gt;{INERT_BACKTICK} c`"
    assert code("@here") == "`@here`"
    assert code("") == "``"


def test_code_block_keeps_lines_and_lets_nothing_out() -> None:
    assert code_block("a:\n  b: <x>\n```\n") == f"```a:\n  b: &lt;x&gt;\n{INERT_BACKTICK * 3}```"


@given(st.text())
def test_esc_leaves_no_markup(text: str) -> None:
    out = esc(text)
    assert "<" not in out
    assert ">" not in out
    assert not _BARE_AMP.search(out)
    assert "\n" not in out
    assert out.count("`") % 2 == 0
    assert not re.search(r"(?<!\w)[@#]\w|``", out)
    assert not re.search("[\u202a-\u202e\u2066-\u2069]", out)


def test_every_mrkdwn_text_is_verbatim() -> None:
    objects = [section("x")["text"], *fields(["a"])["fields"], *context(["b"])["elements"]]
    assert all(o == {"type": "mrkdwn", "text": o["text"], "verbatim": True} for o in objects)
    assert "verbatim" not in header("x")["text"]


# -- truncation ------------------------------------------------------------------------------------


def test_truncate_marks_and_counts_what_it_cut() -> None:
    out = truncate("x" * 5000, 3000)
    assert _u(out) <= 3000
    head, marker = out.split("…", 1)
    assert marker == f" (truncated, {5000 - len(head)} more chars)"
    assert truncate("short", 3000) == "short"


def test_truncate_counts_astral_emoji_as_two() -> None:
    text = "🔥" * 2000
    assert units(text) == 4000
    out = truncate(text, 3000)
    assert _u(out) <= 3000
    assert "truncated" in out


def test_truncate_never_ends_inside_an_entity() -> None:
    text = esc("&" * 3000)
    out = truncate(text, 2000).split("…")[0]
    assert out.endswith("&amp;")
    assert not _BARE_AMP.search(out)


@given(st.text(max_size=400), st.integers(min_value=1, max_value=300))
def test_truncate_always_fits(text: str, limit: int) -> None:
    out = truncate(text, limit)
    assert _u(out) <= limit
    assert out == text or out.endswith(("…", "more chars)"))


_LINE = st.text(st.characters(blacklist_characters="\n"), max_size=60)


@given(st.lists(_LINE, max_size=60), st.integers(min_value=20, max_value=500))
def test_lines_within_fits_and_keeps_a_prefix(lines: list[str], limit: int) -> None:
    out = lines_within(lines, limit)
    assert _u(out) <= limit
    if out != "\n".join(lines):
        dropped = re.search(r"… \+(\d+) more$", out)
        kept = out.split("\n")[:-1] if dropped else []
        if dropped:
            assert int(dropped.group(1)) == len(lines) - len(kept)
            assert kept[:-1] == lines[: len(kept) - 1]


def test_lines_within_drops_whole_lines() -> None:
    lines = [f"line {i} " + "x" * 90 for i in range(100)]
    out = lines_within(lines, 3000).split("\n")
    assert out[-1] == f"… +{100 - (len(out) - 1)} more"
    assert out[:-1] == lines[: len(out) - 1]


# -- blocks ----------------------------------------------------------------------------------------


def test_fields_fold_the_surplus_into_a_count() -> None:
    block = fields([f"f{i}" for i in range(25)])
    texts = [f["text"] for f in block["fields"]]
    assert len(texts) == 10
    assert texts[:9] == [f"f{i}" for i in range(9)]
    assert texts[9] == "… +16 more"


def test_context_keeps_ten_elements() -> None:
    block = context([str(i) for i in range(12)])
    assert [e["text"] for e in block["elements"]][-1] == "… +3 more"
    assert len(block["elements"]) == 10


def test_header_is_one_plain_line_within_150() -> None:
    block = header("a\nb" + "c" * 500)
    assert block["text"]["type"] == "plain_text"
    assert block["text"]["text"].startswith("a b")
    assert _u(block["text"]["text"]) <= 150


def test_empty_text_becomes_a_dash() -> None:
    assert section("")["text"]["text"] == "—"
    assert header(" \n ")["text"]["text"] == "—"


def test_buttons_refuse_ids_and_values_over_the_limit() -> None:
    with pytest.raises(ValueError, match="over Slack's limit"):
        Button("Probe now", "x" * 256, "v")
    with pytest.raises(ValueError, match="over Slack's limit"):
        Button("Probe now", "proxy_probe", "v" * 2001)


def test_actions_cap_buttons_and_label_length() -> None:
    block = actions([Button("L" * 100, f"id{i}", "v") for i in range(30)], "b")
    assert len(block["elements"]) == 25
    assert block["block_id"] == "b"
    assert limit_problems({"text": "t", "blocks": [block]}) == []


# -- whole messages --------------------------------------------------------------------------------


def test_message_keeps_tail_and_counts_dropped_blocks() -> None:
    body = [section(f"s{i}") for i in range(80)]
    tail = [context(["live"]), actions([Button("Probe now", "proxy_probe", "v")])]
    msg = message("fallback", body, tail).as_kwargs()
    blocks = msg["blocks"]
    assert len(blocks) == 50
    assert blocks[-2:] == tail
    assert blocks[-3]["elements"][0]["text"] == f"… (truncated, {80 - 47} more blocks)"
    assert [b["text"]["text"] for b in blocks[:47]] == [f"s{i}" for i in range(47)]
    assert limit_problems(msg) == []


def test_message_stays_under_the_text_budget() -> None:
    body = [section("y" * 2900) for _ in range(20)]
    msg = message("z" * 5000, body, [context(["live"])]).as_kwargs()
    assert limit_problems(msg) == []
    assert "truncated" in msg["text"]
    assert any("more blocks" in str(b) for b in msg["blocks"])


def test_message_shrinks_the_first_block_that_does_not_fit() -> None:
    body = [section("a" * 2900)] * 3 + [section("b" * 2900), section("c")]
    msg = message("f", body).as_kwargs()
    texts = [b.get("text", {}).get("text", "") for b in msg["blocks"] if b["type"] == "section"]
    assert texts[3].startswith("b")
    assert "truncated" in texts[3]
    assert "(truncated, 1 more blocks)" in str(msg["blocks"][-1])
    assert limit_problems(msg) == []


def test_big_fields_are_shrunk_not_dropped() -> None:
    body = [section("a" * 2900), fields(["f" * 2000] * 10)]
    msg = message("f", body).as_kwargs()
    assert len(msg["blocks"]) == 2
    assert len(msg["blocks"][1]["fields"]) == 10
    assert limit_problems(msg) == []


@settings(max_examples=60)
@given(
    st.lists(st.text(max_size=30).map(lambda s: s * 150), max_size=70),
    st.lists(st.text(max_size=30).map(lambda s: s * 100), max_size=15),
    st.text(max_size=40).map(lambda s: s * 500),
)
def test_any_content_fits(sections: list[str], field_texts: list[str], fallback: str) -> None:
    body = [header(fallback), *(section(s) for s in sections), fields(field_texts)]
    tail = [context(field_texts or ["x"]), actions([Button("Probe now", "proxy_probe", "v")])]
    assert limit_problems(message(fallback, body, tail).as_kwargs()) == []


# -- time words ------------------------------------------------------------------------------------

NOW = datetime(2024, 5, 1, 10, 14, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(0, "0 s"), (45, "45 s"), (60, "1 min"), (720, "12 min"), (3600, "1 h"), (3900, "1 h 5 min"),
     (86400 * 2 + 3 * 3600, "2 d 3 h"), (86400, "1 d"), (-5, "0 s")],
)  # fmt: skip
def test_fmt_span(seconds: float, words: str) -> None:
    assert fmt_span(seconds) == words


def test_relative_and_absolute_times_are_utc() -> None:
    started = datetime(2024, 5, 1, 12, 2, tzinfo=timezone(timedelta(hours=2)))
    assert fmt_since(started, NOW) == "2024-05-01 10:02 UTC (12 min ago)"
    assert fmt_ago(NOW - timedelta(seconds=2), NOW) == "just now"
    assert fmt_ago(NOW + timedelta(minutes=3), NOW) == "in 3 min"
    # Naive times are taken as UTC, as Alertmanager's timestamps are.
    assert fmt_ago(datetime(2024, 5, 1, 9, 14), NOW) == "1 h ago"


def test_aged_tells_each_age_later_and_nothing_else() -> None:
    shown = message(
        "read (just now)",
        [
            section("since 2024-05-01 10:02 UTC (12 min ago) · last success 1 h 5 min ago · in 3 min"),
            context(
                ["Live state read 10:14:00 UTC (just now)", "quarantined for 20 s", "updated 10:14:00 UTC"]
            ),
            actions([Button("Probe now", "p", "just now 5 min ago")]),
        ],
    )
    later = aged(shown, 600)
    assert later.text == "read (10 min ago)"
    assert later.blocks[0]["text"]["text"] == (
        "since 2024-05-01 10:02 UTC (22 min ago) · last success 1 h 15 min ago · in 3 min"
    )
    assert [e["text"] for e in later.blocks[1]["elements"]] == [
        "Live state read 10:14:00 UTC (10 min ago)",
        "quarantined for 20 s",  # a duration, not an age
        "updated 10:14:00 UTC",
    ]
    assert later.blocks[2] == shown.blocks[2]  # a button's value is data
    assert aged(shown, 3) == shown  # "just now" is still just now; "12 min" still 12
    assert aged(shown, -30) == shown  # a clock behind the one that made it: no younger ages
