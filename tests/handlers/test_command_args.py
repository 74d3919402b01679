"""The `/proxy` argument parser (handlers/command_args.py): words, options, refusals, durations."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.errors import InputError
from handlers.command_args import USAGES, check_required, parse_duration, parse_invocation, split_words


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("probe  a/b\t--gv x/v1", ["probe", "a/b", "--gv", "x/v1"]),
        ('silence a/b --reason "two words"', ["silence", "a/b", "--reason", "two words"]),
        ("silence a/b --reason \u201ctwo words\u201d", ["silence", "a/b", "--reason", "two words"]),
        ("silence a/b --reason 'it''s'", ["silence", "a/b", "--reason", "its"]),
        ('probe "unclosed quote', ["probe", "unclosed quote"]),
        ('probe ""', ["probe", ""]),
        ("", []),
    ],
)
def test_words_split_like_a_shell_without_raising(text: str, words: list[str]) -> None:
    assert split_words(text) == words


def test_invocations_read_options_public_and_slack_escapes() -> None:
    inv = parse_invocation("PROBE platform/x --gv=a.io/v1 --repeat 3 public")
    assert (inv.sub, inv.args, inv.public) == ("probe", ("platform/x",), True)
    assert (inv.one("--gv"), inv.one("--repeat")) == ("a.io/v1", "3")
    net = parse_invocation(
        "netpol --client a/b --target c/d --cross-cluster 10.0.0.0/8 10.1.0.0/16 --stun 1.2.3.4/32"
    )
    assert net.many("--cross-cluster") == ("10.0.0.0/8", "10.1.0.0/16")
    assert net.many("--stun") == ("1.2.3.4/32",)
    assert (
        parse_invocation("silence a/b 2h --reason target &amp; upgrade").one("--reason") == "target & upgrade"
    )
    assert parse_invocation("   ").sub == "help"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("frobnicate", "'frobnicate' is not a subcommand"),
        ("probe", "probe: TARGET is missing"),
        ("probe a/b c/d", "probe: unexpected 'c/d'"),
        ("probe a/b --gv", "probe: --gv needs a value"),
        ("probe a/b --gv= ", "probe: --gv needs a value"),
        ("probe a/b --gv x/v1 --gv y/v1", "probe: --gv takes one value"),
        ("probe a/b --watch", "'--watch' is not an option of probe"),
        ("status " + "x" * 254, "is longer than 253 characters"),
        (" ".join(["status"] * 41), "at most 40 are accepted"),
    ],
)
def test_bad_invocations_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(InputError, match=re.escape(problem)):
        parse_invocation(text)


@given(st.text(max_size=300))
def test_any_text_parses_or_is_refused_with_an_input_error(text: str) -> None:
    try:
        inv = parse_invocation(text)
    except InputError:
        return
    assert inv.sub in USAGES


@pytest.mark.parametrize(("text", "seconds"), [("30m", 1800), ("2h", 7200), ("1h30m", 5400), ("1d", 86400)])
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "2", "30x", "5y", "0m", "15d", "1h 30m", "-1h", "\u0661h"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(InputError, match="DURATION"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("netpol --client a/b", "netpol: --target NS/RELEASE required"),
        ("netpol", "netpol: --client and --target NS/RELEASE required"),
    ],
)
def test_an_option_the_grammar_requires_is_asked_for(text: str, problem: str) -> None:
    with pytest.raises(InputError, match=re.escape(problem)):
        check_required(parse_invocation(text))
