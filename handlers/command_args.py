"""The text of `/proxy <sub> [args]` as an `Invocation`: words, options and `public`, never an exception
other than `InputError`.

Slack sends the text as typed, with `&`, `<`, `>` escaped and quotes often turned into typographic ones,
so those are undone first. Words split on whitespace, with "double", 'single' and “smart” quotes
grouping; a quote left open runs to the end of the text (no error, as a shell would give). Options are
the CLI's (`--gv G/V`, `--gv=G/V`); `public` (or `--public`) anywhere makes the answer visible to the
channel. Only the shape is checked here: every value is validated by the check it goes to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from bot.checks.netpol import ANYWHERE_V4, DEFAULT_STUN_PORT, CrossCluster, parse_cidr, parse_port
from bot.domain import durations
from bot.errors import InputError, shown

MAX_TEXT = 1000
MAX_WORDS = 40
MAX_WORD = 253  # a DNS subdomain's length; no valid argument is longer
PUBLIC = "public"
# Straight quotes, and the typographic ones Slack clients substitute while typing.
_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u201d": "\u201d", "\u2018": "\u2019", "\u2019": "\u2019"}
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))


class Takes(Enum):
    """How many values an option takes."""

    ONE = "one"  # --gv G/V (once)
    REPEATED = "repeated"  # --stun CIDR, may be given several times
    SEVERAL = "several"  # --cross-cluster CIDR [CIDR ...]: every following word up to the next option
    WORDS = "words"  # --reason some free text: the following words joined by spaces


@dataclass(frozen=True)
class Usage:
    """One subcommand's grammar: positional names (`?` suffix: optional) and options."""

    positionals: tuple[str, ...] = ()
    options: Mapping[str, Takes] = field(default_factory=dict)

    @property
    def required(self) -> int:
        return sum(1 for p in self.positionals if not p.endswith("?"))


_TARGET = ("TARGET",)
USAGES: dict[str, Usage] = {
    "help": Usage(("SUBCOMMAND?",)),
    "status": Usage(("TARGET?",)),
    "peers": Usage(_TARGET),
    "reasons": Usage(_TARGET, {"--window": Takes.ONE}),
    "probe": Usage(
        _TARGET,
        {"--gv": Takes.ONE, "--resource": Takes.ONE, "--namespace": Takes.ONE, "--repeat": Takes.ONE},
    ),
    "path": Usage(_TARGET, {"--samples": Takes.ONE}),
    "logs": Usage(_TARGET, {"--since": Takes.ONE}),
    "verify": Usage((), {"--cluster": Takes.ONE}),
    "netpol": Usage(
        (),
        {
            "--client": Takes.ONE,
            "--target": Takes.ONE,
            "--cross-cluster": Takes.SEVERAL,
            "--stun": Takes.REPEATED,
            "--stun-port": Takes.REPEATED,
        },
    ),
    # `silence TARGET [DURATION]`, `silence list`, `silence expire ID`: told apart by the first word.
    "silence": Usage(("TARGET|list|expire", "DURATION|ID?"), {"--reason": Takes.WORDS}),
    "digest": Usage(),
    "ack": Usage(_TARGET),
    "unack": Usage(_TARGET),
}


@dataclass(frozen=True)
class Invocation:
    """One `/proxy` command as typed: the subcommand, its words and options, and where to answer."""

    sub: str
    args: tuple[str, ...] = ()
    options: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    public: bool = False

    def arg(self, index: int) -> str | None:
        return self.args[index] if index < len(self.args) else None

    def one(self, name: str) -> str | None:
        values = self.options.get(name)
        return values[-1] if values else None

    def many(self, name: str) -> tuple[str, ...]:
        return self.options.get(name, ())


def unescape(text: str) -> str:
    """The text as the person typed it (Slack escapes `&`, `<`, `>`)."""
    for entity, char in _ENTITIES:
        text = text.replace(entity, char)
    return text


def split_words(text: str) -> list[str]:
    """Whitespace-separated words, quotes grouping; an unclosed quote runs to the end. Never raises."""
    words: list[str] = []
    current: list[str] = []
    started = False
    closing: str | None = None
    for char in text:
        if closing is not None:
            if char == closing:
                closing = None
            else:
                current.append(char)
        elif char in _QUOTES:
            closing, started = _QUOTES[char], True
        elif char.isspace():
            if started:
                words.append("".join(current))
            current, started = [], False
        else:
            current.append(char)
            started = True
    if started:
        words.append("".join(current))
    return words


def parse_invocation(text: str) -> Invocation:
    """The command's text as an `Invocation`; InputError names what is wrong (empty text: help)."""
    if len(text) > MAX_TEXT:
        raise InputError(f"the command is {len(text)} characters long; at most {MAX_TEXT} are accepted")
    words = split_words(unescape(text))
    if len(words) > MAX_WORDS:
        raise InputError(f"the command has {len(words)} words; at most {MAX_WORDS} are accepted")
    for word in words:
        if len(word) > MAX_WORD:
            raise InputError(f"{shown(word)} is longer than {MAX_WORD} characters")
    public = any(w in (PUBLIC, "--public") for w in words)
    words = [w for w in words if w not in (PUBLIC, "--public")]
    if not words:
        return Invocation("help", public=public)
    sub, rest = words[0].lower(), words[1:]
    usage = USAGES.get(sub)
    if usage is None:
        raise InputError(f"{shown(words[0])} is not a subcommand (see `/proxy help`)")
    args, options = _read_options(sub, usage, rest)
    _check_positionals(sub, usage, args)
    return Invocation(sub, tuple(args), options, public)


def _read_options(sub: str, usage: Usage, words: list[str]) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    args: list[str] = []
    options: dict[str, list[str]] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("--"):
            args.append(word)
            i += 1
            continue
        name, eq, inline = word.partition("=")
        takes = usage.options.get(name)
        if takes is None:
            known = ", ".join(usage.options) or "none"
            raise InputError(f"{sub}: {shown(name)} is not an option of {sub} (options: {known})")
        values, i = _values(words, i + 1, takes, [inline] if eq else [])
        if not values or any(v == "" for v in values):
            raise InputError(f"{sub}: {name} needs a value")
        if takes is Takes.ONE and (name in options or len(values) > 1):
            raise InputError(f"{sub}: {name} takes one value")
        options.setdefault(name, []).extend(values)
    return args, {name: tuple(values) for name, values in options.items()}


def _values(words: list[str], i: int, takes: Takes, given: list[str]) -> tuple[list[str], int]:
    """The option's values starting at `i`, and the index after them."""
    if given:
        return given, i
    if takes in (Takes.ONE, Takes.REPEATED):
        return (words[i : i + 1], i + 1) if i < len(words) else ([], i)
    end = i
    while end < len(words) and not words[end].startswith("--"):
        end += 1
    found = words[i:end]
    if takes is Takes.WORDS:
        return ([" ".join(found)] if found else []), end
    return found, end


def _check_positionals(sub: str, usage: Usage, args: list[str]) -> None:
    if len(args) < usage.required:
        missing = " ".join(p for p in usage.positionals[len(args) :] if not p.endswith("?"))
        raise InputError(f"{sub}: {missing} is missing (see `/proxy help {sub}`)")
    if len(args) > len(usage.positionals):
        extra = " ".join(shown(a, 30) for a in args[len(usage.positionals) :])
        raise InputError(f"{sub}: unexpected {extra} (see `/proxy help {sub}`)")


def whole_number(flag: str, text: str) -> int:
    """A non-negative decimal integer in ASCII digits only (`int()` takes other scripts too)."""
    if not (text.isascii() and text.isdigit()) or len(text) > 6:
        raise InputError(f"{flag}: {shown(text)} is not a whole number")
    return int(text)


def parse_duration(text: str, *, low: int = 60, high: int = 14 * 86400) -> int:
    """`2h`, `30m`, `1h30m`, `1d` in seconds, within `low`..`high`."""
    return durations.parse_duration(text, field="DURATION", low=low, high=high)


def cross_cluster(inv: Invocation) -> CrossCluster | None:
    """`netpol`'s cross-cluster options, each validated by the netpol check's parsers."""
    stun, ports = inv.many("--stun"), inv.many("--stun-port")
    if not inv.many("--cross-cluster"):
        if stun or ports:
            raise InputError(
                "--stun/--stun-port: only with --cross-cluster (same cluster needs no STUN rule)"
            )
        return None
    peers = tuple(parse_cidr("--cross-cluster", c) for c in inv.many("--cross-cluster"))
    stun_cidrs = tuple(parse_cidr("--stun", c) for c in stun or (ANYWHERE_V4,))
    stun_ports = tuple(parse_port(p) for p in ports or (str(DEFAULT_STUN_PORT),))
    return CrossCluster(peers, stun_cidrs, stun_ports, stun_given=bool(stun))
