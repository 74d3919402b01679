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

from bot.domain import durations
from bot.errors import InputError, shown
from bot.subcommands import SLASH, Takes, Usage

MAX_TEXT = 1000
MAX_WORDS = 40
MAX_WORD = 253  # a DNS subdomain's length; no valid argument is longer
PUBLIC = "public"
# Straight quotes, and the typographic ones Slack clients substitute while typing.
_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u201d": "\u201d", "\u2018": "\u2019", "\u2019": "\u2019"}
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))


# The grammar of every subcommand, from the one table of subcommands.
USAGES: Mapping[str, Usage] = {name: slash.grammar for name, slash in SLASH.items()}


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
        option = usage.options.get(name)
        if option is None:
            known = ", ".join(usage.options) or "none"
            raise InputError(f"{sub}: {shown(name)} is not an option of {sub} (options: {known})")
        takes = option.takes
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


def check_required(inv: Invocation) -> None:
    """The options the grammar requires are given (checked once the asker may run the command)."""
    usage = USAGES[inv.sub]
    missing = [name for name, option in usage.options.items() if option.required and name not in inv.options]
    if missing:
        shapes = {usage.options[name].metavar for name in missing}
        shape = next(iter(shapes)) if len(shapes) == 1 else None
        raise InputError(f"{inv.sub}: {' and '.join(missing)}{f' {shape}' if shape else ''} required")


def whole_number(flag: str, text: str) -> int:
    """A non-negative decimal integer in ASCII digits only (`int()` takes other scripts too)."""
    if not (text.isascii() and text.isdigit()) or len(text) > 6:
        raise InputError(f"{flag}: {shown(text)} is not a whole number")
    return int(text)


def parse_duration(text: str, *, low: int = 60, high: int = 14 * 86400) -> int:
    """`2h`, `30m`, `1h30m`, `1d` in seconds, within `low`..`high`."""
    return durations.parse_duration(text, field="DURATION", low=low, high=high)
