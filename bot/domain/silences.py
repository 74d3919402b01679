"""Silences as values: a matcher, a silence as Alertmanager reports it, a silence to make, the matchers
covering some alerts, and a group's labels read from Alertmanager's group key. No I/O: the client
(`bot.clients.alertmanager`) sends and reads them; the handlers, the alert side and the renderers use them
as plain values.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.errors import InputError

# Alertmanager 0.25 group keys end in the group's labels as Go's LabelSet.String renders them.
_LABEL_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_LABEL_SET = re.compile(rf"\{{(?:{_LABEL_NAME}={_QUOTED}(?:, {_LABEL_NAME}={_QUOTED})*)?\}}")
_LABEL_PAIR = re.compile(rf"({_LABEL_NAME})=({_QUOTED})")
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
# A literal as `_re2_literal` escapes it: punctuation only after a backslash.
_ESCAPED_LITERAL = re.compile(r"(?:\\[!-/:-@\[-`{-~]|[^!-/:-@\[-`{-~\\])*")


@dataclass(frozen=True, slots=True)
class Matcher:
    """One silence matcher; `is_regex` values are anchored by Alertmanager (RE2 syntax)."""

    name: str
    value: str
    is_regex: bool = False
    is_equal: bool = True

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "isRegex": self.is_regex, "isEqual": self.is_equal}

    def __str__(self) -> str:
        """The matcher for people: `name="value"`; a regex that is an alternation of literals (what
        `matchers_for` makes) as `name is one of "a", "b"` (`(unset)` for its empty alternative); any
        other regex as Alertmanager's own page shows it, its backslashes once."""
        if not self.is_regex:
            return f"{self.name}{self._op()}{json.dumps(self.value)}"
        literals = _literals(self.value)
        if literals is None:
            return f'{self.name}{self._op()}"{self.value}"'
        listed = ", ".join(json.dumps(v) if v else "(unset)" for v in literals)
        return f"{self.name} is {'one' if self.is_equal else 'none'} of {listed}"

    def as_filter(self) -> str:
        """The matcher as the API's `filter` parameter takes it: Alertmanager 0.25 unescapes only a
        backslash, a double quote and `n` after a backslash in a quoted value, and reads the rest as UTF-8
        (JSON's `\\uXXXX` would stay literal)."""
        escaped = self.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'{self.name}{self._op()}"{escaped}"'

    def _op(self) -> str:
        return ("=~" if self.is_regex else "=") if self.is_equal else ("!~" if self.is_regex else "!=")


@dataclass(frozen=True, slots=True)
class Silence:
    """A silence as Alertmanager reports it; `made_here` when proxybot's store says proxybot made it
    (`bot.silence_makers`), its `created_by` then the author proxybot wrote."""

    id: str
    state: str  # active, pending or expired
    matchers: tuple[Matcher, ...]
    starts_at: datetime
    ends_at: datetime
    created_by: str
    comment: str
    made_here: bool = False


@dataclass(frozen=True, slots=True)
class NewSilence:
    """A silence to make, as Alertmanager is asked for it (`bot.ports.Silences.create_silence`)."""

    matchers: tuple[Matcher, ...]
    starts_at: datetime
    ends_at: datetime
    created_by: str
    comment: str

    def made_as(self, silence: Silence) -> bool:
        """Whether `silence` is this one, made already (by a try whose answer never came) and not expired:
        exactly these matchers, author and comment."""
        same = sorted(silence.matchers, key=str) == sorted(self.matchers, key=str)
        by = (silence.created_by, silence.comment) == (self.created_by, self.comment)
        return same and by and silence.state != "expired"


def silence_id(value: str) -> str:
    """`value` as a canonical silence id; raises InputError unless it is a UUID."""
    try:
        return str(uuid.UUID(value.strip()))
    except (ValueError, AttributeError) as exc:
        raise InputError(f"{value!r} is not a silence id (expected a UUID)") from exc


def matchers_for(label_sets: Sequence[Mapping[str, str]], names: Iterable[str]) -> tuple[Matcher, ...]:
    """Matchers covering exactly the given alerts' values of `names`.

    A value shared by every alert is an equality matcher; values that differ become one anchored regex
    alternation (an alert without the label matches it through the empty alternative). Names no alert
    carries are left out.
    """
    found: list[Matcher] = []
    for name in sorted(set(names)):
        values = sorted({labels.get(name, "") for labels in label_sets})
        if values in ([], [""]):
            continue
        if len(values) == 1:
            found.append(Matcher(name, values[0]))
        else:
            found.append(Matcher(name, "|".join(_re2_literal(v) for v in values), is_regex=True))
    return tuple(found)


def _literals(regex: str) -> list[str] | None:
    """The literals of an alternation of escaped literals (`a\\.b|c`), else None."""
    parts = re.split(r"(?<!\\)\|", regex)
    if not all(_ESCAPED_LITERAL.fullmatch(p) for p in parts):
        return None
    return [re.sub(r"\\(.)", r"\1", p) for p in parts]


def _re2_literal(value: str) -> str:
    # RE2 accepts a backslash before any ASCII punctuation (and only that), so escape exactly those.
    return _PUNCTUATION.sub(r"\\\1", value)


def group_labels_from_key(group_key: str) -> dict[str, str]:
    """The labels Alertmanager grouped by, read from the end of its group key; raises InputError."""
    for start in (m.start() + 1 for m in re.finditer(r":\{", group_key)):
        if _LABEL_SET.fullmatch(group_key, start):
            return {name: _go_unquote(quoted) for name, quoted in _LABEL_PAIR.findall(group_key[start:])}
    raise InputError("the alert group's key carries no label set")


def _go_unquote(quoted: str) -> str:
    # Go's %q and JSON agree on every escape a printable label value produces (\" \\ \n \t \uXXXX).
    try:
        value = json.loads(quoted)
    except ValueError as exc:
        raise InputError("the alert group's key has a label value proxybot cannot read") from exc
    return str(value)
